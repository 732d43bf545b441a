package ids

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxNameLength is the longest replica name: a DNS label's 63 characters.
const MaxNameLength = 63

// RandomLength is the length of the random part of an id: 128 bits in
// lower-case base32, as internal/analyses makes it (NewID).
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
// StatefulSet so. The name says which replica holds an analysis's lease in
// the store; a label keeps it short and readable.
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

// EpochOf returns the start (Epoch) of the canaryd run that made id, and
// false when id has no epoch: an id of an earlier version without one, or
// one no replica could have made. An id an earlier version made with its
// replica's name before a dot has its epoch read after the name.
func EpochOf(id string) (started time.Time, ok bool) {
	local := id
	if name, l, named := strings.Cut(id, "."); named {
		if CheckName(name) != nil {
			return time.Time{}, false
		}
		local = l
	}
	if len(local) != EpochLength+RandomLength || !localID(local) {
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < EpochLength; i++ {
		ms = ms<<5 | int64(strings.IndexByte(alphabet, local[i]))
	}
	return time.UnixMilli(ms), true
}

// localID reports whether local is an id without the replica name that
// earlier versions put before it: the random part, after an epoch or (an
// earlier version's) alone.
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
