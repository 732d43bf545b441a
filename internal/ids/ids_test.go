package ids

import (
	"bytes"
	"strings"
	"sync"
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

// TestEpoch checks that an id's epoch reads back as the instant its replica
// started, to the millisecond, also after the replica name an earlier
// version put before it, that later starts make later epochs, and that ids
// without one (an earlier version's) or that no replica made have none.
func TestEpoch(t *testing.T) {
	const random = "3qkd7vbl2rcw6xjh5m4fyzeonu"
	start := time.Date(2026, 8, 12, 9, 14, 3, 123_456_789, time.UTC)
	epoch := Epoch(start)
	if len(epoch) != EpochLength {
		t.Fatalf("Epoch = %q, want %d characters", epoch, EpochLength)
	}
	for _, id := range []string{epoch + random, "canaryd-0." + epoch + random} {
		got, ok := EpochOf(id)
		if !ok || !got.Equal(start.Truncate(time.Millisecond)) {
			t.Errorf("EpochOf(%q) = %v, %v; want %v", id, got, ok, start.Truncate(time.Millisecond))
		}
	}
	if later := Epoch(start.Add(time.Millisecond)); later == epoch {
		t.Errorf("a start 1ms later has the same epoch %q", epoch)
	}
	if got, _ := EpochOf(Epoch(time.Unix(0, 0)) + random); !got.Equal(time.Unix(0, 0)) {
		t.Errorf("the epoch of 1970 reads back as %v", got)
	}
	for _, id := range []string{
		random, "canaryd-0." + random, // an earlier version's
		"Canaryd-0." + epoch + random, // no replica's name
		"canaryd-0." + epoch + random[1:],
		"canaryd-0." + strings.ToUpper(epoch) + random,
		epoch + strings.Replace(random, "3", "1", 1), // outside base32
		epoch + random + "a",
		"." + epoch + random,
		"canaryd-0." + epoch + random + "." + random,
		"../" + epoch + random,
		"",
	} {
		if got, ok := EpochOf(id); ok {
			t.Errorf("EpochOf(%q) = %v, want none", id, got)
		}
	}
}

// TestRandom checks that Random hands out every byte it read once, in
// draws of every size a buffer holds and past it, from goroutines at once.
func TestRandom(t *testing.T) {
	var mu sync.Mutex
	seen := map[[12]byte]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				var b [12]byte
				Random(b[:])
				mu.Lock()
				if seen[b] {
					t.Errorf("Random gave %x twice", b)
				}
				seen[b] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, n := range []int{0, 1, 16, 255, 256, 257, 4096} {
		b := make([]byte, n)
		Random(b)
		if n >= 16 && bytes.Count(b, []byte{0}) == n {
			t.Errorf("Random left %d bytes zero", n)
		}
	}
}
