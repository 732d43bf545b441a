package condition

import (
	"strings"
	"testing"
)

// TestCompileLimits checks the bounds a service puts on conditions: a
// length cap checked before parsing, and expr's node budget.
func TestCompileLimits(t *testing.T) {
	long := strings.Repeat("result[0] > 1 || ", 30) + "true" // 514 bytes, 121 nodes
	tests := []struct {
		name             string
		success, failure string
		opts             []Option
		wantFields       []string
		wantMessage      string
	}{
		{name: "no limits", success: long},
		{name: "within both", success: long, opts: []Option{MaxLength(len(long)), MaxNodes(1000)}},
		{name: "too long", success: long, opts: []Option{MaxLength(100)},
			wantFields: []string{"successCondition"}, wantMessage: "the condition is 514 bytes long, longer than the 100 this canaryd accepts (--max-condition-length)"},
		{name: "too many nodes", failure: long, opts: []Option{MaxNodes(50)},
			wantFields: []string{"failureCondition"}, wantMessage: "the condition is too complex: it has more than 50 syntax nodes, the most this canaryd accepts"},
		{name: "both conditions are checked", success: long, failure: long, opts: []Option{MaxLength(10)},
			wantFields: []string{"successCondition", "failureCondition"}},
		{name: "the length is checked before the syntax", success: strings.Repeat("(", 200), opts: []Option{MaxLength(100)},
			wantFields: []string{"successCondition"}, wantMessage: "the condition is 200 bytes long, longer than the 100 this canaryd accepts (--max-condition-length)"},
		{name: "a short condition within the budget still has its syntax checked", success: "result >", opts: []Option{MaxLength(100), MaxNodes(10)},
			wantFields: []string{"successCondition"}},
	}
	for _, tt := range tests {
		c, errs := Compile(tt.success, tt.failure, tt.opts...)
		var fields []string
		for _, e := range errs {
			fields = append(fields, e.Field)
		}
		if strings.Join(fields, ",") != strings.Join(tt.wantFields, ",") {
			t.Errorf("%s: problems on %v, want on %v: %+v", tt.name, fields, tt.wantFields, errs)
			continue
		}
		if tt.wantMessage != "" && (len(errs) == 0 || errs[0].Message != tt.wantMessage) {
			t.Errorf("%s: message %+v, want %q", tt.name, errs, tt.wantMessage)
		}
		if (c == nil) != (len(errs) > 0) {
			t.Errorf("%s: conditions %v with %d problems", tt.name, c, len(errs))
		}
	}
}
