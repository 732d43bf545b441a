package replica

import (
	"strings"
	"testing"
	"time"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"a Deployment's pod", "canaryd-7d9f8b6c5-x2x9k", true},
		{"a StatefulSet's pod", "canaryd-0", true},
		{"one character", "a", true},
		{"63 characters", strings.Repeat("a", 63), true},
		{"empty", "", false},
		{"64 characters", strings.Repeat("a", 64), false},
		{"upper case", "Canaryd-0", false},
		{"a dot, which separates the id's parts", "canaryd.0", false},
		{"leading dash", "-canaryd", false},
		{"trailing dash", "canaryd-", false},
		{"underscore", "canary_d", false},
		{"a slash", "a/b", false},
		{"non-ASCII", "canäryd", false},
	} {
		if err := CheckName(tc.in); (err == nil) != tc.ok {
			t.Errorf("%s: CheckName(%q) = %v, want ok %v", tc.name, tc.in, err, tc.ok)
		}
	}
}

func TestFromHostname(t *testing.T) {
	for _, tc := range []struct {
		name, host, want string
	}{
		{"a pod", "canaryd-7d9f8b6c5-x2x9k", "canaryd-7d9f8b6c5-x2x9k"},
		{"a fully qualified name", "build-3.ci.example.com", "build-3"},
		{"upper case and underscores", "My_Laptop", "my-laptop"},
		{"surrounding dashes", "-x-", "x"},
		{"too long", strings.Repeat("b", 70), strings.Repeat("b", 63)},
		{"nothing usable", "___", ""},
		{"empty", "", ""},
	} {
		got := FromHostname(tc.host)
		if got != tc.want {
			t.Errorf("%s: FromHostname(%q) = %q, want %q", tc.name, tc.host, got, tc.want)
		}
		if got != "" && CheckName(got) != nil {
			t.Errorf("%s: FromHostname(%q) = %q, which is no name: %v", tc.name, tc.host, got, CheckName(got))
		}
	}
}

func TestIDs(t *testing.T) {
	const local = "3qkd7vbl2rcw6xjh5m4fyzeonu"
	if got := ID("canaryd-0", local); got != "canaryd-0."+local {
		t.Errorf("ID = %q", got)
	}
	if got := ID("", local); got != local {
		t.Errorf("ID without a replica = %q, want the local id alone", got)
	}
	for _, tc := range []struct {
		name  string
		id    string
		owner string
		named bool
	}{
		{"made by ID", ID("canaryd-7d9f8b6c5-x2x9k", local), "canaryd-7d9f8b6c5-x2x9k", true},
		{"with an epoch", ID("canaryd-0", "bqz3kpmaa"+local), "canaryd-0", true},
		{"an epoch part outside base32", ID("canaryd-0", "bqz3kpma1"+local), "", false},
		{"no replica part", local, "", false},
		{"an empty replica part", "." + local, "", false},
		{"a replica part that is no name", "Canaryd." + local, "", false},
		{"a short random part", "canaryd-0.abc", "", false},
		{"a random part outside base32", "canaryd-0." + strings.Replace(local, "3", "1", 1), "", false},
		{"a random part too long", "canaryd-0." + local + "a", "", false},
		{"two dots", "canaryd-0." + local + "." + local, "", false},
		{"path traversal", "../" + local, "", false},
		{"empty", "", "", false},
	} {
		owner, named := Owner(tc.id)
		if owner != tc.owner || named != tc.named {
			t.Errorf("%s: Owner(%q) = %q, %v; want %q, %v", tc.name, tc.id, owner, named, tc.owner, tc.named)
		}
	}
}

func TestParsePeer(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Peer
		// problem is part of the error; "" means valid.
		problem string
	}{
		{name: "static", in: "canaryd-0=http://canaryd-0.canaryd-peers:8080",
			want: Peer{Name: "canaryd-0", URL: "http://canaryd-0.canaryd-peers:8080"}},
		{name: "static with a path prefix and a trailing slash", in: "b=https://gw.example.com/canaryd/b/",
			want: Peer{Name: "b", URL: "https://gw.example.com/canaryd/b"}},
		{name: "static IPv6", in: "c=http://[::1]:8080", want: Peer{Name: "c", URL: "http://[::1]:8080"}},
		{name: "discovery", in: "dns+http://canaryd-peers.canary.svc:8080",
			want: Peer{URL: "http://canaryd-peers.canary.svc:8080", Discover: true}},
		{name: "discovery with a slash", in: "dns+http://canaryd-peers:8080/",
			want: Peer{URL: "http://canaryd-peers:8080", Discover: true}},
		{name: "neither form", in: "http://canaryd-0:8080", problem: "want NAME=URL"},
		{name: "a bad name", in: "Canaryd=http://x:1", problem: "replica name"},
		{name: "not a URL", in: "a=canaryd-0:8080", problem: "not an http or https URL"},
		{name: "credentials", in: "a=http://user:hunter2@canaryd-0:8080", problem: "credentials"},
		{name: "a query", in: "a=http://canaryd-0:8080/?x=1", problem: "no query"},
		{name: "a bad port", in: "a=http://canaryd-0:99999", problem: "port"},
		{name: "discovery over https", in: "dns+https://canaryd-peers:8443", problem: "dns+http://"},
		{name: "discovery without a port", in: "dns+http://canaryd-peers", problem: "port"},
		{name: "discovery with a path", in: "dns+http://canaryd-peers:8080/x", problem: "no path"},
		{name: "discovery with credentials", in: "dns+http://u:hunter2@canaryd-peers:8080", problem: "credentials"},
	} {
		got, err := ParsePeer(tc.in)
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%s: ParsePeer(%q): %v", tc.name, tc.in, err)
		case tc.problem == "" && got != tc.want:
			t.Errorf("%s: ParsePeer(%q) = %+v, want %+v", tc.name, tc.in, got, tc.want)
		case tc.problem == "" && got.String() != strings.TrimSuffix(tc.in, "/"):
			t.Errorf("%s: String() = %q, want the entry back, %q", tc.name, got.String(), strings.TrimSuffix(tc.in, "/"))
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%s: ParsePeer(%q) = %+v, %v; want an error saying %q", tc.name, tc.in, got, err, tc.problem)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error quotes the credentials: %v", tc.name, err)
		}
	}
}

// TestEpoch checks that an id's epoch reads back as the instant its replica
// started, to the millisecond, that later starts make later epochs, and
// that ids without one (an earlier version's) or that no replica made
// have none.
func TestEpoch(t *testing.T) {
	const random = "3qkd7vbl2rcw6xjh5m4fyzeonu"
	start := time.Date(2026, 8, 12, 9, 14, 3, 123_456_789, time.UTC)
	epoch := Epoch(start)
	if len(epoch) != EpochLength {
		t.Fatalf("Epoch = %q, want %d characters", epoch, EpochLength)
	}
	for _, id := range []string{ID("canaryd-0", epoch+random), ID("", epoch+random)} {
		owner, got, ok := EpochOf(id)
		if !ok || !got.Equal(start.Truncate(time.Millisecond)) {
			t.Errorf("EpochOf(%q) = %v, %v; want %v", id, got, ok, start.Truncate(time.Millisecond))
		}
		if want, _, _ := strings.Cut(id, "."); strings.Contains(id, ".") && owner != want {
			t.Errorf("EpochOf(%q) names replica %q, want %q", id, owner, want)
		}
	}
	if later := Epoch(start.Add(time.Millisecond)); later == epoch {
		t.Errorf("a start 1ms later has the same epoch %q", epoch)
	}
	if _, got, _ := EpochOf(Epoch(time.Unix(0, 0)) + random); !got.Equal(time.Unix(0, 0)) {
		t.Errorf("the epoch of 1970 reads back as %v", got)
	}
	for _, id := range []string{
		random, "canaryd-0." + random, // an earlier version's
		"Canaryd-0." + epoch + random, // no replica's name
		"canaryd-0." + epoch + random[1:],
		"canaryd-0." + strings.ToUpper(epoch) + random,
		"",
	} {
		if _, got, ok := EpochOf(id); ok {
			t.Errorf("EpochOf(%q) = %v, want none", id, got)
		}
	}
}
