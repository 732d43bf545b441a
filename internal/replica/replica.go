package replica

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxNameLength is the longest replica name: a DNS label's 63 characters.
const MaxNameLength = 63

// RandomLength is the length of the random part of an id: 128 bits in
// lower-case base32, as internal/server makes it.
const RandomLength = 26

// EpochLength is the length of the epoch part of an id: the instant its
// replica started, in milliseconds since 1970, as 9 digits of the same
// base32 (45 bits, enough for a thousand years).
const EpochLength = 9

// alphabet is the base32 of ids, in the order of the digits' values.
const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// CheckName returns nil when name can name a replica: an RFC 1123 DNS
// label, 1 to 63 lower-case letters, digits and '-', starting and ending
// with a letter or digit. Kubernetes names the pods of a Deployment or a
// StatefulSet so. The name goes into every id the replica makes, and into
// the Canaryd-Replica header; a label keeps both URL-safe and short.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("a replica name must not be empty")
	case len(name) > MaxNameLength:
		return fmt.Errorf("%q is longer than %d characters", cut(name), MaxNameLength)
	case name[0] == '-' || name[len(name)-1] == '-':
		return fmt.Errorf("%q must start and end with a lower-case letter or a digit", name)
	}
	for i := 0; i < len(name); i++ {
		if !labelChar(name[i]) {
			return fmt.Errorf("%q is not a DNS label: only lower-case letters, digits and '-'", cut(name))
		}
	}
	return nil
}

func labelChar(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }

// cut shortens a value for a message.
func cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FromHostname makes a replica name of a host name, for when none is
// configured: its first label, lower-cased, every character a label cannot
// hold turned into '-', cut to 63 characters. A pod's host name is its
// name, which is a label already. It returns "" when nothing usable is
// left.
func FromHostname(host string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(host), ".")
	b := []byte(strings.ToLower(first))
	for i, c := range b {
		if !labelChar(c) {
			b[i] = '-'
		}
	}
	name := string(b)
	if len(name) > MaxNameLength {
		name = name[:MaxNameLength]
	}
	return strings.Trim(name, "-")
}

// ID returns the id of the analysis that replica owner holds as local:
// "owner.local", or local alone when owner is "" (a canaryd that runs
// without a name). The '.' cannot occur in either part, so the id splits
// back unambiguously. local is the replica's Epoch followed by the random
// part (RandomLength characters); ids of versions before the epoch have
// the random part alone.
func ID(owner, local string) string {
	if owner == "" {
		return local
	}
	return owner + "." + local
}

// Epoch returns the epoch part of the ids made by a replica that started
// at start: EpochLength characters. A replica that restarts has a later
// one, so that it can tell an id of its earlier run (EpochOf) from one it
// never made, and say that the analysis went with the restart.
func Epoch(start time.Time) string {
	ms := uint64(max(start.UnixMilli(), 0))
	var b [EpochLength]byte
	for i := EpochLength - 1; i >= 0; i-- {
		b[i] = alphabet[ms&31]
		ms >>= 5
	}
	return string(b[:])
}

// Owner returns the replica that id names, and false when it names none:
// an id without a replica part, or one that no replica could have made
// (Owner checks both parts). Such ids are only ever looked up where they
// are asked for.
func Owner(id string) (string, bool) {
	owner, local, ok := strings.Cut(id, ".")
	if !ok || CheckName(owner) != nil || !localID(local) {
		return "", false
	}
	return owner, true
}

// EpochOf returns the replica and the start (Epoch) of the replica run
// that made id, and false when id has no epoch: an id of an earlier
// version, or one no replica could have made. The replica is "" for an
// id without a replica part.
func EpochOf(id string) (owner string, started time.Time, ok bool) {
	local := id
	if o, l, named := strings.Cut(id, "."); named {
		if CheckName(o) != nil {
			return "", time.Time{}, false
		}
		owner, local = o, l
	}
	if len(local) != EpochLength+RandomLength || !localID(local) {
		return "", time.Time{}, false
	}
	var ms int64
	for i := 0; i < EpochLength; i++ {
		ms = ms<<5 | int64(strings.IndexByte(alphabet, local[i]))
	}
	return owner, time.UnixMilli(ms), true
}

// localID reports whether local is the part of an id after the replica:
// the random part, after an epoch or (an earlier version's) alone.
func localID(local string) bool {
	if len(local) != RandomLength && len(local) != EpochLength+RandomLength {
		return false
	}
	for i := 0; i < len(local); i++ {
		if c := local[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// discoverPrefix marks a --peers entry that names the replicas by DNS.
const discoverPrefix = "dns+"

// Peer is one entry of --peers.
type Peer struct {
	// Name is the replica at URL, for a static peer; "" for discovery.
	Name string
	// URL is a static peer's base URL (http://canaryd-0.canaryd:8080), or,
	// for discovery, "http://HOST:PORT": every address HOST resolves to is
	// a replica, listening on PORT.
	URL string
	// Discover is true for a discovery entry.
	Discover bool
}

// String returns the entry as --peers takes it.
func (p Peer) String() string {
	if p.Discover {
		return discoverPrefix + p.URL
	}
	return p.Name + "=" + p.URL
}

// ParsePeer reads one entry of --peers:
//
//   - NAME=URL: the replica NAME answers at URL (http or https, optionally
//     with a path prefix): a static list, the same on every replica (a
//     replica skips its own name);
//   - dns+http://HOST:PORT: every address HOST resolves to (the A and AAAA
//     records of a headless Service) is a replica, listening on PORT with
//     plain HTTP; each says its name in the Canaryd-Replica header.
//
// Its errors never quote a URL that carries credentials.
func ParsePeer(s string) (Peer, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, discoverPrefix); ok {
		u, err := parseURL(rest)
		if err != nil {
			return Peer{}, err
		}
		switch {
		case u.Scheme != "http":
			return Peer{}, fmt.Errorf("%q: discovery takes dns+http:// (canaryd serves plain HTTP; a pod address has no certificate to verify)", s)
		case u.Port() == "":
			return Peer{}, fmt.Errorf("%q: give the replicas' port (dns+http://HOST:PORT): the addresses are the pods', not the Service's", s)
		case u.Path != "" && u.Path != "/":
			return Peer{}, fmt.Errorf("%q: discovery takes no path", s)
		}
		return Peer{URL: "http://" + u.Host, Discover: true}, nil
	}
	name, raw, ok := strings.Cut(s, "=")
	if !ok {
		return Peer{}, errors.New("want NAME=URL (a replica and where it answers) or dns+http://HOST:PORT (a headless Service's name)")
	}
	if err := CheckName(name); err != nil {
		return Peer{}, fmt.Errorf("replica name: %w", err)
	}
	u, err := parseURL(raw)
	if err != nil {
		return Peer{}, fmt.Errorf("replica %s: %w", name, err)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return Peer{Name: name, URL: u.String()}, nil
}

// parseURL accepts an absolute http or https URL with a host and a valid
// port, without credentials, query or fragment.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		if err == nil && u.User != nil {
			return nil, errors.New("not an http or https URL")
		}
		return nil, fmt.Errorf("%q is not an http or https URL", cut(raw))
	case u.User != nil:
		return nil, errors.New("the URL must not carry credentials: forwarded requests carry their caller's")
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return nil, fmt.Errorf("%q: a peer URL takes no query or fragment", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q: the port must be a number from 1 to 65535", raw)
		}
	}
	if h := u.Hostname(); h == "" || strings.ContainsAny(h, " %") || strings.Contains(u.Host, "[") && net.ParseIP(h) == nil {
		return nil, fmt.Errorf("%q has no valid host", raw)
	}
	return u, nil
}
