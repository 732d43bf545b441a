package countjson

import (
	"fmt"
	"strings"
	"testing"
)

// look is one look of a request's body.
func look(cb, ct, bb, bt float64) string {
	return fmt.Sprintf(`{"canary":{"bad":%g,"total":%g},"baseline":{"bad":%g,"total":%g}}`, cb, ct, bb, bt)
}

// body is a body of POST /v1/judge: the options' JSON members, if any,
// and the looks.
func body(options string, looks ...string) string {
	if options != "" {
		options += ","
	}
	return `{` + options + `"looks":[` + strings.Join(looks, ",") + `]}`
}

// steadyHistory is the history of a steady baseline, n intervals of
// 1,000 events with 1 to 3 bad ones, as the JSON members of an array.
func steadyHistory(n int) string {
	var h []string
	bad, pattern := 0, []int{2, 1, 3, 2, 2, 1, 3, 2}
	for i := 1; i <= n; i++ {
		bad += pattern[i%len(pattern)]
		h = append(h, fmt.Sprintf(`{"bad":%d,"total":%d}`, bad, 1000*i))
	}
	return strings.Join(h, ",")
}

// TestRequest: the options, history and looks read, defaults filled, and
// the results appended up to the first decision, or every one when all.
func TestRequest(t *testing.T) {
	regression := []string{look(20, 1000, 2, 1000), look(40, 2000, 4, 2000), look(60, 3000, 6, 3000)}
	for _, tt := range []struct {
		name, body string
		want       []string // each result's decision
	}{
		{"the defaults", body("", regression...), []string{"continue", "Failed"}},
		{"all", body(`"all":true`, regression...), []string{"continue", "Failed", "Failed"}},
		{"a tolerance, an alpha", body(`"tolerance":20,"alpha":0.05,"all":false`, regression...), []string{"continue", "continue", "Successful"}},
		{"direction decrease", body(`"direction":"decrease"`, regression...), []string{"continue", "Successful"}},
		// A day of a baseline without bursts puts the dispersion near 1
		// from the first look, which then decides alone.
		{"a steady baseline's history", body(`"history":[`+steadyHistory(288)+`]`, regression...), []string{"Failed"}},
		{"a history that tells nothing: the default prior", body(`"history":[{"bad":0,"total":1000},{"bad":0,"total":2000}]`, regression...), []string{"continue", "Failed"}},
		{"an empty history", body(`"history":[]`, regression...), []string{"continue", "Failed"}},
	} {
		req, errs := ParseRequest([]byte(tt.body), 288)
		if len(errs) > 0 {
			t.Fatalf("%s: %+v", tt.name, errs)
		}
		out, errs := req.AppendResults([]byte("kept"))
		if len(errs) > 0 || !strings.HasPrefix(string(out), "kept[{") || !strings.HasSuffix(string(out), "}]\n") {
			t.Fatalf("%s: %s %+v", tt.name, out, errs)
		}
		var got []string
		for _, line := range strings.Split(string(out), `"decision":"`)[1:] {
			got = append(got, line[:strings.IndexByte(line, '"')])
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: decisions %v, want %v\n%s", tt.name, got, tt.want, out)
		}
	}
}

// TestRequestBadInput: every problem of a body is named by its field,
// looks by index, with its pointer into the body; those of the counts
// come from the test, when the results are appended.
func TestRequestBadInput(t *testing.T) {
	ok := look(10, 1000, 10, 1000)
	type fieldError struct{ field, message, pointer string }
	tests := []struct {
		name string
		body string
		want []fieldError
	}{
		{"alpha 0", body(`"alpha":0`, ok), []fieldError{{"alpha", "must be in (0, 0.5], got 0", "/alpha"}}},
		{"alpha above 0.5", body(`"alpha":0.6`, ok), []fieldError{{"alpha", "must be in (0, 0.5], got 0.6", "/alpha"}}},
		{"alpha a string", body(`"alpha":"NaN"`, ok), []fieldError{{"alpha", `must be a number, got a string ("NaN")`, "/alpha"}}},
		{"tolerance 0", body(`"tolerance":0`, ok), []fieldError{{"tolerance", "must be a finite number > 0, got 0", "/tolerance"}}},
		{"tolerance negative", body(`"tolerance":-2`, ok), []fieldError{{"tolerance", "must be a finite number > 0, got -2", "/tolerance"}}},
		{"tolerance beyond a float64", body(`"tolerance":1e400`, ok), []fieldError{{"tolerance", "must be a finite number, got 1e400 (beyond a float64)", "/tolerance"}}},
		{"direction either", body(`"direction":"either"`, ok), []fieldError{{"direction", `must be increase or decrease, got "either"`, "/direction"}}},
		{"direction a number", body(`"direction":1`, ok), []fieldError{{"direction", "must be a string, increase or decrease, got a number", "/direction"}}},
		{"all a string", body(`"all":"yes"`, ok), []fieldError{{"all", `must be true or false, got a string ("yes")`, "/all"}}},
		{"an unknown field, and every problem", body(`"alpah":0.1,"tolerance":0`, ok), []fieldError{
			{"alpah", "unknown field; the body takes alpha, tolerance, direction, all, history, looks", "/alpah"},
			{"tolerance", "must be a finite number > 0, got 0", "/tolerance"},
		}},
		{"no looks field", `{"alpha":0.1}`, []fieldError{{"looks", "is required", "/looks"}}},
		{"no looks", body(""), []fieldError{{"looks", "must have at least one look", "/looks"}}},
		{"looks not an array", `{"looks":{"canary":{}}}`, []fieldError{{"looks", "must be an array of looks, got an object", "/looks"}}},
		{"more looks than the limit", body("", ok, ok, ok, ok, ok, ok), []fieldError{{"looks", "6 looks, more than the limit of 5 (--max-judge-looks)", "/looks"}}},
		{"not an object", `[1,2]`, []fieldError{{"body", "must be an object", ""}}},
		{"null", `null`, []fieldError{{"body", "must be an object", ""}}},
		{"counts that decrease", body("", ok, ok, look(9, 1000, 10, 1000)), []fieldError{
			{"looks[2].canary.bad", "counts are cumulative and must not decrease: 9 after 10", "/looks/2/canary/bad"}}},
		{"a negative count", body("", ok, look(10, 1000, 10, -1)), []fieldError{
			{"looks[1].baseline.total", "must not be negative, got -1", "/looks/1/baseline/total"}}},
		{"more bad than total", body("", look(11, 10, 1, 10)), []fieldError{
			{"looks[0].canary.bad", "more bad events (11) than total events (10)", "/looks/0/canary/bad"}}},
		{"the string NaN, and every look's shape", body("",
			`{"canary":{"bad":"NaN","total":1000},"baseline":{"bad":10,"total":1000}}`, ok,
			`{"canary":{"bad":10,"total":1e999},"baseline":{"bad":10,"total":1000}}`,
			`{"canary":{"bad":10,"total":1000,"errors":1},"baseline":{"bad":10,"total":1000}}`,
			`{"canary":{"bad":10,"total":1000}}`), []fieldError{
			{"looks[0].canary.bad", `must be a number, got a string ("NaN")`, "/looks/0/canary/bad"},
			{"looks[2].canary.total", "must be a finite number, got 1e999 (beyond a float64)", "/looks/2/canary/total"},
			{"looks[3].canary.errors", "unknown field; canary takes bad and total", "/looks/3/canary/errors"},
			{"looks[4].baseline", "is required", "/looks/4/baseline"},
		}},
		{"a look that is not an object", body("", ok, "null"), []fieldError{{"looks[1]", "a look must be an object", "/looks/1"}}},
		{"history not an array", body(`"history":{"bad":1,"total":2}`, ok), []fieldError{
			{"history", "must be an array of the baseline's counts at each interval, got an object", "/history"}}},
		{"history null", body(`"history":null`, ok), []fieldError{{"history", "must be an array", "/history"}}},
		{"more intervals than the limit", body(`"history":[`+steadyHistory(6)+`]`, ok), []fieldError{
			{"history", "6 intervals, more than the limit of 5 (--max-judge-looks)", "/history"}}},
		{"every interval's shape", body(`"history":[1,{"bad":"NaN","total":10},{"bad":1,"total":1e999},{"bad":1,"total":10,"errors":1},{"bad":1}]`, ok), []fieldError{
			{"history[0]", `an interval must be an object {"bad": …, "total": …}, got a number`, "/history/0"},
			{"history[1].bad", `must be a number, got a string ("NaN")`, "/history/1/bad"},
			{"history[2].total", "must be a finite number, got 1e999 (beyond a float64)", "/history/2/total"},
			{"history[3].errors", "unknown field; an interval takes bad and total", "/history/3/errors"},
			{"history[4].total", "is required", "/history/4/total"},
		}},
		{"a negative count in the history", body(`"history":[{"bad":-1,"total":10}]`, ok), []fieldError{
			{"history[0].bad", "must not be negative, got -1", "/history/0/bad"}}},
		{"a history that decreases, and alpha", body(`"alpha":1,"history":[{"bad":1,"total":10},{"bad":2,"total":20},{"bad":2,"total":19}]`, ok), []fieldError{
			{"alpha", "must be in (0, 0.5], got 1", "/alpha"},
			{"history[2].total", "counts are cumulative and must not decrease: 19 after 20", "/history/2/total"}}},
		{"more bad than total in the history", body(`"history":[{"bad":1,"total":10},{"bad":11,"total":10}]`, ok), []fieldError{
			{"history[1].bad", "more bad events (11) than total events (10)", "/history/1/bad"}}},
	}
	for _, tt := range tests {
		req, errs := ParseRequest([]byte(tt.body), 5)
		if len(errs) == 0 {
			var out []byte
			if out, errs = req.AppendResults(nil); len(errs) == 0 {
				t.Errorf("%s: no problem; results %s", tt.name, out)
				continue
			}
		}
		if len(errs) != len(tt.want) {
			t.Errorf("%s: %d errors, want %d: %+v", tt.name, len(errs), len(tt.want), errs)
			continue
		}
		for i, w := range tt.want {
			e := errs[i]
			if e.Field != w.field || !strings.Contains(e.Message, w.message) || e.Pointer == nil || *e.Pointer != w.pointer {
				t.Errorf("%s: error %d: %s: %s (pointer %v), want %s: %s (pointer %q)", tt.name, i, e.Field, e.Message, e.Pointer, w.field, w.message, w.pointer)
			}
		}
	}
}
