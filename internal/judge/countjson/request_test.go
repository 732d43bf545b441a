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

// TestRequest: the options and looks read, defaults filled, and the
// results appended up to the first decision, or every one when all.
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
	} {
		req, errs := ParseRequest([]byte(tt.body), 5)
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
			{"alpah", "unknown field; the body takes alpha, tolerance, direction, all, looks", "/alpah"},
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
