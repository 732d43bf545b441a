package analyses

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
)

// TestCutReason checks that a reason longer than api.MaxListReason
// characters is cut at a character, not a byte, and says so with "…".
func TestCutReason(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cut      bool
	}{
		{"short", "Failed: metric \"m\" measured 0.5.", false},
		{"at the bound", strings.Repeat("é", api.MaxListReason), false},
		{"one over", strings.Repeat("é", api.MaxListReason+1), true},
		{"long", strings.Repeat("≥ 0.99 ", 200), true},
	} {
		got := cutReason(tc.in)
		if n := utf8.RuneCountInString(got); n > api.MaxListReason || !utf8.ValidString(got) {
			t.Errorf("%s: %d characters (valid UTF-8: %v), want at most %d", tc.name, n, utf8.ValidString(got), api.MaxListReason)
		}
		if cut := got != tc.in; cut != tc.cut || cut != strings.HasSuffix(got, "…") {
			t.Errorf("%s: cut %v, ends with …: %v; want cut %v", tc.name, cut, strings.HasSuffix(got, "…"), tc.cut)
		}
	}
}
