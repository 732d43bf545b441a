package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
)

// judgeLook is one look of POST /v1/judge's body.
func judgeLook(cb, ct, bb, bt float64) string {
	return fmt.Sprintf(`{"canary":{"bad":%g,"total":%g},"baseline":{"bad":%g,"total":%g}}`, cb, ct, bb, bt)
}

// judgeBody is a body of POST /v1/judge: the options' JSON members, if
// any, and the looks.
func judgeBody(options string, looks ...string) string {
	if options != "" {
		options += ","
	}
	return `{` + options + `"looks":[` + strings.Join(looks, ",") + `]}`
}

// regressionLooks are testdata/judge/looks/regression.ndjson's: a canary
// with ten times the baseline's errors.
var regressionLooks = []string{
	judgeLook(20, 1000, 2, 1000), judgeLook(40, 2000, 4, 2000), judgeLook(60, 3000, 6, 3000), judgeLook(80, 4000, 8, 4000),
}

// aaJudgeLooks are n looks of an A/A canary: 1% of 1,000 events a look on
// both sides, the canary's a little ahead and then behind.
func aaJudgeLooks(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		wobble := float64(i % 3)
		out = append(out, judgeLook(float64(10*i)+wobble, float64(1000*i), float64(10*i)+2-wobble, float64(1000*i)))
	}
	return out
}

// steadyJudgeHistory is the history of a steady baseline, n intervals of
// 1,000 events with 1 to 3 bad ones, as the JSON members of an array.
func steadyJudgeHistory(n int) string {
	var h []string
	bad, pattern := 0, []int{2, 1, 3, 2, 2, 1, 3, 2}
	for i := 1; i <= n; i++ {
		bad += pattern[i%len(pattern)]
		h = append(h, fmt.Sprintf(`{"bad":%d,"total":%d}`, bad, 1000*i))
	}
	return strings.Join(h, ",")
}

type judgeLine struct {
	Look     int      `json:"look"`
	EValue   *float64 `json:"eValue"`
	PValue   *float64 `json:"pValue"`
	Ratio    struct{ Estimate, Lower, Upper *float64 }
	Decision string `json:"decision"`
}

func TestJudge(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	tests := []struct {
		name string
		body string
		want []string // each line's decision
	}{
		{"a clear regression fails at its second look", judgeBody("", regressionLooks...), []string{"continue", "Failed"}},
		{"all goes on to the end, the decision staying", judgeBody(`"all":true`, regressionLooks...), []string{"continue", "Failed", "Failed", "Failed"}},
		{"a tolerance of 20 passes it", judgeBody(`"tolerance":20,"alpha":0.05,"all":false`, regressionLooks...), []string{"continue", "continue", "continue", "Successful"}},
		{"direction decrease passes it", judgeBody(`"direction":"decrease"`, regressionLooks...), []string{"continue", "Successful"}},
		{"an A/A canary continues, then ends Successful", judgeBody("", aaJudgeLooks(4)...), []string{"continue", "continue", "continue", "Successful"}},
		{"worse, but not surely: Inconclusive", judgeBody("", judgeLook(25, 1000, 10, 1000), judgeLook(50, 2000, 20, 2000)), []string{"continue", "Inconclusive"}},
		// A day of five-minute intervals of a baseline without bursts:
		// the dispersion is near 1 from the first look, which decides.
		{"a steady baseline's history", judgeBody(`"history":[`+steadyJudgeHistory(288)+`]`, regressionLooks...), []string{"Failed"}},
		{"a look spread over lines, keys in any order", `{"looks": [
			{"baseline": {"total": 1e3, "bad": 10}, "canary": {"bad": 10.5, "total": 1000}}
		]}`, []string{"Successful"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.do(http.MethodPost, "/v1/judge", "application/json", tt.body)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d, want 200:\n%s", resp.status, resp.body)
			}
			var lines []judgeLine
			d := json.NewDecoder(strings.NewReader(string(resp.body)))
			d.DisallowUnknownFields()
			if err := d.Decode(&lines); err != nil {
				t.Fatalf("%v\n%s", err, resp.body)
			}
			var got []string
			for i, l := range lines {
				got = append(got, l.Decision)
				if l.Look != i+1 || l.EValue == nil || l.PValue == nil {
					t.Errorf("line %d: %+v", i, l)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("decisions %v, want %v\n%s", got, tt.want, resp.body)
			}
		})
	}

	// Not finite is null: no bound yet, no baseline errors.
	resp := s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody("", judgeLook(5, 100, 0, 100)))
	if want := `"ratio":{"estimate":null,"lower":0,"upper":null}`; !strings.Contains(string(resp.body), want) {
		t.Errorf("nulls: %s, want %s", resp.body, want)
	}
}

// TestJudgeBadInput: bad input is a 400 naming its field, looks by
// index, with its pointer, and nothing is judged: a body that is not JSON,
// and the problems of its fields and looks (those of each field are
// countjson's TestRequestBadInput) and of the counts.
func TestJudgeBadInput(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, limits: limits.Limits{MaxJudgeLooks: 5}})
	ok := judgeLook(10, 1000, 10, 1000)
	type fieldError struct{ field, message, pointer string }
	tests := []struct {
		name string
		body string
		want []fieldError
	}{
		{"alpha 0", judgeBody(`"alpha":0`, ok), []fieldError{{"alpha", "must be in (0, 0.5], got 0", "/alpha"}}},
		{"an unknown field, and every problem", judgeBody(`"alpah":0.1,"tolerance":0`, ok), []fieldError{
			{"alpah", "unknown field; the body takes alpha, tolerance, direction, all, history, looks", "/alpah"},
			{"tolerance", "must be a finite number > 0, got 0", "/tolerance"},
		}},
		{"more looks than the limit", judgeBody("", aaJudgeLooks(6)...), []fieldError{{"looks", "6 looks, more than the limit of 5 (--max-judge-looks)", "/looks"}}},
		{"not JSON", `{"looks":[`, []fieldError{{"body", "", ""}}},
		{"not an object", `[1,2]`, []fieldError{{"body", "must be an object", ""}}},
		{"counts that decrease", judgeBody("", ok, ok, judgeLook(9, 1000, 10, 1000)), []fieldError{
			{"looks[2].canary.bad", "counts are cumulative and must not decrease: 9 after 10", "/looks/2/canary/bad"}}},
		{"a look that is not an object", judgeBody("", ok, "null"), []fieldError{{"looks[1]", "a look must be an object", "/looks/1"}}},
		{"more intervals of history than the limit", judgeBody(`"history":[`+steadyJudgeHistory(6)+`]`, ok), []fieldError{
			{"history", "6 intervals, more than the limit of 5 (--max-judge-looks)", "/history"}}},
		{"history not an array", judgeBody(`"history":"yesterday"`, ok), []fieldError{
			{"history", `must be an array of the baseline's counts at each interval, got a string ("yesterday")`, "/history"}}},
		{"an interval that is not an object", judgeBody(`"history":[{"bad":1,"total":10},[1,10]]`, ok), []fieldError{
			{"history[1]", "an interval must be an object", "/history/1"}}},
		{"an interval's unknown field, and a missing one", judgeBody(`"history":[{"bad":1,"errors":1},{"total":10}]`, ok), []fieldError{
			{"history[0].errors", "unknown field; an interval takes bad and total", "/history/0/errors"},
			{"history[1].bad", "is required", "/history/1/bad"}}},
		{"the string NaN in the history", judgeBody(`"history":[{"bad":"NaN","total":10}]`, ok), []fieldError{
			{"history[0].bad", `must be a number, got a string ("NaN")`, "/history/0/bad"}}},
		{"a count beyond a float64 in the history", judgeBody(`"history":[{"bad":1,"total":1e999}]`, ok), []fieldError{
			{"history[0].total", "must be a finite number, got 1e999 (beyond a float64)", "/history/0/total"}}},
		{"a negative count in the history", judgeBody(`"history":[{"bad":0,"total":-10}]`, ok), []fieldError{
			{"history[0].total", "must not be negative, got -10", "/history/0/total"}}},
		{"a history that decreases", judgeBody(`"history":[{"bad":3,"total":10},{"bad":2,"total":20}]`, ok), []fieldError{
			{"history[1].bad", "counts are cumulative and must not decrease: 2 after 3", "/history/1/bad"}}},
		{"more bad than total in the history", judgeBody(`"history":[{"bad":11,"total":10}]`, ok), []fieldError{
			{"history[0].bad", "more bad events (11) than total events (10)", "/history/0/bad"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.do(http.MethodPost, "/v1/judge", "application/json", tt.body)
			if resp.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400:\n%s", resp.status, resp.body)
			}
			p := resp.problem(t)
			if len(p.Errors) != len(tt.want) {
				t.Fatalf("%d errors, want %d: %+v", len(p.Errors), len(tt.want), p.Errors)
			}
			for i, w := range tt.want {
				e := p.Errors[i]
				if e.Field != w.field || !strings.Contains(e.Message, w.message) || e.Pointer == nil || *e.Pointer != w.pointer {
					pointer := "<none>"
					if e.Pointer != nil {
						pointer = *e.Pointer
					}
					t.Errorf("error %d: %s: %s (pointer %q), want %s: %s (pointer %q)", i, e.Field, e.Message, pointer, w.field, w.message, w.pointer)
				}
			}
		})
	}
}

// TestJudgeBounds: the body's size, its media type and the token.
func TestJudgeBounds(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	// A body over 1 MiB: 413 on the body, whatever it holds.
	looks := aaJudgeLooks(20_000)
	resp := s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody("", looks...))
	if resp.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a %d-byte body: status %d, want 413", len(judgeBody("", looks...)), resp.status)
	}
	if p := resp.problem(t); len(p.Errors) != 1 || p.Errors[0].Field != "body" {
		t.Errorf("413: %+v", p.Errors)
	}
	// The default bound on looks, under 1 MiB.
	resp = s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody("", aaJudgeLooks(limits.MaxJudgeLooks+1)...))
	if p := resp.problem(t); resp.status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "looks" ||
		!strings.Contains(p.Errors[0].Message, fmt.Sprintf("more than the limit of %d", limits.MaxJudgeLooks)) {
		t.Errorf("%d looks: %d %+v", limits.MaxJudgeLooks+1, resp.status, p.Errors)
	}
	resp = s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody("", aaJudgeLooks(limits.MaxJudgeLooks)...))
	if resp.status != http.StatusOK {
		t.Errorf("%d looks: %d", limits.MaxJudgeLooks, resp.status)
	}
	// The history has the same bounds: the body's size, and the most
	// looks (intervals of the history, beside them).
	history := `"history":[` + steadyJudgeHistory(60_000) + `]`
	resp = s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody(history, regressionLooks...))
	if p := resp.problem(t); resp.status != http.StatusRequestEntityTooLarge || len(p.Errors) != 1 || p.Errors[0].Field != "body" {
		t.Errorf("a history of %d bytes: %d %+v, want 413 on the body", len(history), resp.status, p.Errors)
	}
	resp = s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody(`"history":[`+steadyJudgeHistory(limits.MaxJudgeLooks+1)+`]`, regressionLooks...))
	if p := resp.problem(t); resp.status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "history" ||
		!strings.Contains(p.Errors[0].Message, fmt.Sprintf("more than the limit of %d", limits.MaxJudgeLooks)) {
		t.Errorf("%d intervals of history: %d %+v", limits.MaxJudgeLooks+1, resp.status, p.Errors)
	}
	resp = s.do(http.MethodPost, "/v1/judge", "application/json", judgeBody(`"history":[`+steadyJudgeHistory(limits.MaxJudgeLooks)+`]`, regressionLooks...))
	if resp.status != http.StatusOK {
		t.Errorf("%d intervals of history: %d %s", limits.MaxJudgeLooks, resp.status, resp.body)
	}
	// JSON only.
	resp = s.do(http.MethodPost, "/v1/judge", "application/yaml", "looks: []")
	if resp.status != http.StatusUnsupportedMediaType {
		t.Errorf("YAML: status %d, want 415", resp.status)
	}

	// Behind the token, as every /v1 route.
	s = start(t, options{prometheus: []string{"http://127.0.0.1:9"}, tokens: []string{"t0ken"}})
	body := judgeBody("", regressionLooks...)
	if resp := s.do(http.MethodPost, "/v1/judge", "application/json", body); resp.status != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", resp.status)
	}
	if resp := s.do(http.MethodPost, "/v1/judge", "application/json", body, "Authorization", "Bearer t0ken"); resp.status != http.StatusOK {
		t.Errorf("the token: status %d, want 200", resp.status)
	}
}

// TestJudgeTakesADecodeSlot: with every decode slot held (a document
// whose metric's source waits), a body of looks is a 429 too-many-decodes;
// once the slot is free, it is judged.
func TestJudgeTakesADecodeSlot(t *testing.T) {
	entered, hold := make(chan struct{}, 1), make(chan struct{})
	s := start(t, options{maxDecodes: 1, sources: func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		if strings.Contains(m.Query, "hold") {
			entered <- struct{}{}
			<-hold
		}
		return analysis.SourceFunc(nil), nil, nil
	}})
	done := make(chan int, 1)
	// Ends when hold is closed below.
	go func() {
		done <- s.do(http.MethodPost, "/v1/validate", yamlType, "metrics:\n- {name: m, provider: {prometheus: {query: vector(1) or hold}}}\n").status
	}()
	<-entered
	body := judgeBody("", regressionLooks...)
	resp := s.do(http.MethodPost, "/v1/judge", "application/json", body)
	if p := resp.problem(t); resp.status != http.StatusTooManyRequests || p.Type != server.ProblemTooManyDecodes {
		t.Errorf("with the slot held: %d %+v, want 429 too-many-decodes", resp.status, p)
	}
	close(hold)
	if status := <-done; status != http.StatusOK {
		t.Errorf("the held document: %d", status)
	}
	if resp := s.do(http.MethodPost, "/v1/judge", "application/json", body); resp.status != http.StatusOK {
		t.Errorf("with the slot free: %d %s", resp.status, resp.body)
	}
}
