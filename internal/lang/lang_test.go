package lang

import (
	"strconv"
	"strings"
	"testing"
)

// TestEscapeQuoted: a quoted literal of the escaped value reads as the
// value (Go's string literals share the escapes), and QuotedLength is its
// length.
func TestEscapeQuoted(t *testing.T) {
	for _, v := range []string{"", "plain", `a"b`, `a'b`, `back\slash`, "line\nbreak", "\x00\x1f\x7f", "ünïcode"} {
		for _, q := range []byte{'"', '\''} {
			e := EscapeQuoted(v, q)
			if len(e) != QuotedLength(v, q) {
				t.Errorf("QuotedLength(%q, %c) = %d, escaped %q is %d", v, q, QuotedLength(v, q), e, len(e))
			}
			if q == '"' {
				if got, err := strconv.Unquote(`"` + e + `"`); err != nil || got != v {
					t.Errorf("%q escaped %q reads %q, %v", v, e, got, err)
				}
			}
		}
	}
}

// TestPlaceholder: one name of letters, digits and underscores.
func TestPlaceholder(t *testing.T) {
	if got := Placeholder("threshold-ms.x:y"); got != PlaceholderPrefix+"threshold_ms_x_y" {
		t.Errorf("Placeholder = %q", got)
	}
}

// TestParseProblem: a language's parse problem is told from other
// problems by its start.
func TestParseProblem(t *testing.T) {
	msg := ParseProblem("query", "PromQL") + ": 1:5: parse error"
	if !IsParseProblem(msg) || IsParseProblem("the query is 20 bytes long") || IsParseProblem("unknown field") {
		t.Error("IsParseProblem")
	}
}

// TestJoinedText: the text around a tag, clipped on either side.
func TestJoinedText(t *testing.T) {
	long := strings.Repeat("a", 100)
	got := JoinedText(Context{Before: long, After: long})
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || !strings.Contains(got, "{{…}}") || len(got) > 2*clipLength+20 {
		t.Errorf("JoinedText = %q", got)
	}
	if got := JoinedText(Context{Before: "metric_", After: "_total"}); got != "metric_{{…}}_total" {
		t.Errorf("JoinedText = %q", got)
	}
}
