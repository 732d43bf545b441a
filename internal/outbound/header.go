package outbound

import "strings"

// ValidHeaderName reports whether s is an HTTP field name: a token of
// RFC 9110 5.6.2. (golang.org/x/net's httpguts has the same check;
// canaryd does not depend on x/net directly.)
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ValidHeaderValue reports whether s can be sent as a header value: no
// control characters other than tab, so no line break that would end the
// header and start another.
func ValidHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
