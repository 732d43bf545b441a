package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// seedSpec is the seed template as it is: three measurements 30 s apart,
// which a backtest takes in no time.
func seedSpec(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/specs/success-rate-args.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// at formats an instant for a query.
func at(t time.Time) string { return url.QueryEscape(t.UTC().Format(time.RFC3339)) }

// TestBacktests runs backtests against a real Prometheus whose namespace
// echo-incident had a 5xx incident from 90 to 60 minutes before the data's
// now (promtest's default fixture): the seed template must fail inside it
// and pass outside it, at the starts `canaryd backtest` reports.
func TestBacktests(t *testing.T) {
	prom := promtest.Start(t)
	urls := []string{prom.URL}
	now := prom.Now
	dir := t.TempDir()
	data, err := os.ReadFile("../../testdata/templates/success-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeTemplate(t, dir, "success-rate.yaml", string(data))
	s := start(t, options{prometheus: urls, templates: dir})
	incident := "&arg.namespace=" + promtest.IncidentNamespace

	t.Run("single", func(t *testing.T) {
		tests := []struct {
			name       string
			query      string
			wantPhase  api.Phase
			wantMsg    string
			wantCount  int32
			wantStart  time.Time
			relativeTo time.Time // for a start relative to now: the test's now
		}{
			{name: "an hour before the incident passes", query: "start=" + at(now.Add(-115*time.Minute)) + "&end=" + at(now.Add(-100*time.Minute)),
				wantPhase: api.PhaseSuccessful, wantCount: 3, wantStart: now.Add(-115 * time.Minute).Truncate(time.Second)},
			{name: "the incident is caught", query: "start=" + at(now.Add(-80*time.Minute)) + "&end=" + at(now.Add(-30*time.Minute)),
				wantPhase: api.PhaseFailed, wantMsg: `Metric "non-5xx-rate" assessed Failed due to failed (2) > failureLimit (1)`, wantCount: 2,
				wantStart: now.Add(-80 * time.Minute).Truncate(time.Second)},
			{name: "Unix seconds", query: fmt.Sprintf("start=%d&end=%d", now.Add(-50*time.Minute).Unix(), now.Add(-40*time.Minute).Unix()),
				wantPhase: api.PhaseSuccessful, wantCount: 3, wantStart: time.Unix(now.Add(-50*time.Minute).Unix(), 0)},
			{name: "relative to now, end defaulting to now", query: "start=-75m",
				wantPhase: api.PhaseFailed, wantMsg: `Metric "non-5xx-rate" assessed Failed due to failed (2) > failureLimit (1)`, wantCount: 2,
				relativeTo: time.Now().Add(-75 * time.Minute)},
		}
		for _, tt := range tests {
			resp := s.do(http.MethodPost, "/v1/backtests?"+tt.query+incident, yamlType, seedSpec(t))
			if resp.status != http.StatusOK {
				t.Errorf("%s: status %d, want 200: %s", tt.name, resp.status, resp.body)
				continue
			}
			a := resp.analysis(t)
			if a.Phase != tt.wantPhase || a.Message != tt.wantMsg || a.MetricResults[0].Count != tt.wantCount {
				t.Errorf("%s: %s %q with count %d, want %s %q with count %d", tt.name, a.Phase, a.Message, a.MetricResults[0].Count, tt.wantPhase, tt.wantMsg, tt.wantCount)
			}
			switch {
			case !tt.wantStart.IsZero() && !a.StartedAt.Equal(tt.wantStart):
				t.Errorf("%s: startedAt %v, want the backtest's start %v", tt.name, a.StartedAt, tt.wantStart)
			case !tt.relativeTo.IsZero() && a.StartedAt.Sub(tt.relativeTo).Abs() > 10*time.Second:
				t.Errorf("%s: startedAt %v, want about %v", tt.name, a.StartedAt, tt.relativeTo)
			}
			if a.Template != "success-rate-args" || a.Args["namespace"] != promtest.IncidentNamespace {
				t.Errorf("%s: template %q args %v", tt.name, a.Template, a.Args)
			}
			if resp.header.Get("Location") != "" {
				t.Errorf("%s: Location %q: a backtest is not kept", tt.name, resp.header.Get("Location"))
			}
			if got := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", ""); got.status != http.StatusNotFound {
				t.Errorf("%s: GET of the backtest's id: %d, want 404 (not kept)", tt.name, got.status)
			}
		}
	})

	t.Run("series", func(t *testing.T) {
		start, end := now.Add(-115*time.Minute), now.Add(-35*time.Minute)
		resp := s.do(http.MethodPost, "/v1/backtests?start="+at(start)+"&end="+at(end)+"&every=10m"+incident, yamlType, seedSpec(t))
		if resp.status != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", resp.status, resp.body)
		}
		var series server.BacktestSeries
		mustJSON(t, resp.body, &series)
		// The incident ran from about -90m to -60m; a start measures for a
		// minute, its rates over the minute before each measurement.
		want := []api.Phase{api.PhaseSuccessful, api.PhaseSuccessful, api.PhaseSuccessful, api.PhaseFailed, api.PhaseFailed, api.PhaseFailed, api.PhaseSuccessful, api.PhaseSuccessful}
		var got []api.Phase
		for i, r := range series.Results {
			got = append(got, r.Analysis.Phase)
			if wantAt := start.Truncate(time.Second).Add(time.Duration(i) * 10 * time.Minute); !r.Start.Equal(wantAt) || !r.Analysis.StartedAt.Equal(wantAt) {
				t.Errorf("result %d starts at %v (analysis %v), want %v", i, r.Start, r.Analysis.StartedAt, wantAt)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("phases %v, want %v", got, want)
		}
		if series.Every != "10m0s" || !series.Start.Equal(start.Truncate(time.Second)) || !series.End.Equal(end.Truncate(time.Second)) {
			t.Errorf("series start %v end %v every %q", series.Start, series.End, series.Every)
		}
	})

	t.Run("template", func(t *testing.T) {
		query := "start=" + at(now.Add(-75*time.Minute)) + "&end=" + at(now.Add(-60*time.Minute))
		for _, tc := range []struct{ name, query, contentType, body string }{
			{"arguments in the body", query, jsonType, `{"args": {"namespace": "echo-incident"}}`},
			{"arguments in the query", query + "&arg.namespace=echo-incident", "", ""},
		} {
			resp := s.do(http.MethodPost, "/v1/templates/success-rate/backtests?"+tc.query, tc.contentType, tc.body)
			if resp.status != http.StatusOK {
				t.Errorf("%s: status %d, want 200: %s", tc.name, resp.status, resp.body)
				continue
			}
			if a := resp.analysis(t); a.Phase != api.PhaseFailed || a.Template != "success-rate" {
				t.Errorf("%s: phase %s template %q, want Failed from success-rate", tc.name, a.Phase, a.Template)
			}
		}
		series := s.do(http.MethodPost, "/v1/templates/success-rate/backtests?start=-115m&end=-95m&every=10m&arg.namespace=echo-good", "", "")
		var got server.BacktestSeries
		mustJSON(t, series.body, &got)
		if series.status != http.StatusOK || len(got.Results) != 2 || got.Results[0].Analysis.Phase != api.PhaseSuccessful {
			t.Errorf("template series: %d %s", series.status, series.body)
		}
		if resp := s.do(http.MethodPost, "/v1/templates/success-rate/backtests?end=-1h&arg.namespace=echo", "", ""); resp.status != http.StatusBadRequest ||
			len(resp.problem(t).Errors) != 1 || resp.problem(t).Errors[0].Field != "start" {
			t.Errorf("no start: %d %s, want a 400 on start", resp.status, resp.body)
		}
		if resp := s.do(http.MethodPost, "/v1/templates/nope/backtests?start=-1h", "", ""); resp.status != http.StatusNotFound {
			t.Errorf("unknown template: %d, want 404", resp.status)
		}
		if resp := s.do(http.MethodPost, "/v1/templates/success-rate/backtests?start=-1h&arg.namespace=echo", "text/plain", "args: {}"); resp.status != http.StatusUnsupportedMediaType {
			t.Errorf("a text/plain body: %d, want 415", resp.status)
		}
		big := `{"args": {"namespace": "` + strings.Repeat("x", server.DefaultMaxBodyBytes) + `"}}`
		if resp := s.do(http.MethodPost, "/v1/templates/success-rate/backtests?start=-1h", jsonType, big); resp.status != http.StatusRequestEntityTooLarge {
			t.Errorf("a body over 1 MiB: %d, want 413", resp.status)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		body := string(s.do(http.MethodGet, "/metrics", "", "").body)
		for _, want := range []string{`canaryd_backtests_total{outcome="completed"}`, "canaryd_backtests_running 0"} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// TestBacktestBadRequests checks that every problem with a backtest's
// window, and every bound on its work, is a 400 naming its parameter, and
// that nothing ran.
func TestBacktestBadRequests(t *testing.T) {
	var queries int
	var mu sync.Mutex
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		queries++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
	}))
	defer prom.Close()
	s := start(t, options{prometheus: []string{prom.URL}, limits: limits.Limits{
		MaxBacktestWindow: 48 * time.Hour, MaxBacktestStarts: 10, MaxBacktestMeasurements: 100,
	}})
	indefinite := "metrics: [{name: m, interval: 1m, provider: {prometheus: {query: up}}}]\n"
	tests := []struct {
		name, query, body string
		want              map[string]string // field → a part of its message
	}{
		{"no start", "end=-1h", seed(t), map[string]string{"start": "required (RFC 3339", "args[0].value": `argument "namespace" was not supplied`}},
		{"an unreadable start", "start=yesterday&arg.namespace=echo", seed(t), map[string]string{"start": `"yesterday" is not a time`}},
		{"an unreadable end", "start=-2h&end=soon&arg.namespace=echo", seed(t), map[string]string{"end": `"soon" is not a time`}},
		{"end before start", "start=-1h&end=-2h&arg.namespace=echo", seed(t), map[string]string{"end": "must be after start"}},
		{"end equal to start", "start=1700000000&end=2023-11-14T22:13:20Z&arg.namespace=echo", seed(t), map[string]string{"end": "must be after start"}},
		{"every not a duration", "start=-1h&every=often&arg.namespace=echo", seed(t), map[string]string{"every": `must be a Go duration such as 10m or 1h, got "often"`}},
		{"every zero", "start=-1h&every=0s&arg.namespace=echo", seed(t), map[string]string{"every": "must be a positive duration"}},
		{"every negative", "start=-1h&every=-5m&arg.namespace=echo", seed(t), map[string]string{"every": "must be a positive duration"}},
		{"start given twice", "start=-1h&start=-2h&arg.namespace=echo", seed(t), map[string]string{"start": "given 2 times with different values"}},
		{"the window and the spec at once", "start=nope", "metrics: [{name: m, successCondition: 'result >', provider: {prometheus: {query: up}}}]",
			map[string]string{"start": "is not a time", "metrics[0].successCondition": ""}},
		{"a window too long", "start=-49h&arg.namespace=echo", seed(t), map[string]string{"end": "longer than a backtest may replay here (--max-backtest-window 48h0m0s)"}},
		{"too many starts", "start=-2h&every=10m&arg.namespace=echo", seed(t), map[string]string{"every": "starts more than 10 analyses, the most one backtest may start here (--max-backtest-starts)"}},
		{"too many measurements in one", "start=-2h", indefinite, map[string]string{"end": "more than 100 measurements in this backtest, the most one may take here (--max-backtest-measurements); take a shorter window"}},
		{"too many measurements in a series", "start=-40m&every=5m", indefinite, map[string]string{"every": "more than 100 measurements in this backtest"}},
		{"no wait here", "start=-1h&wait=true&arg.namespace=echo", seed(t), map[string]string{"wait": "unknown query parameter; this endpoint takes arg.NAME=VALUE, start=TIME, end=TIME, every=DURATION"}},
		{"no webhook here", "start=-1h&webhook=http://x&arg.namespace=echo", seed(t), map[string]string{"webhook": "sends no webhook"}},
		{"no timeout here", "start=-1h&timeout=5s&arg.namespace=echo", seed(t), map[string]string{"timeout": "unknown query parameter"}},
	}
	for _, tt := range tests {
		resp := s.do(http.MethodPost, "/v1/backtests?"+tt.query, yamlType, tt.body)
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tt.name, resp.status, resp.body)
			continue
		}
		p := resp.problem(t)
		got := map[string]string{}
		for _, e := range p.Errors {
			got[e.Field] = e.Message
		}
		for field, part := range tt.want {
			if msg, ok := got[field]; !ok || !strings.Contains(msg, part) {
				t.Errorf("%s: %s: %q, want a problem containing %q; all: %v", tt.name, field, msg, part, p.Errors)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: problems on %v, want on %v", tt.name, got, tt.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if queries != 0 {
		t.Errorf("refused backtests sent %d queries", queries)
	}
}

// stallingProm answers no query until release is closed (or the query's
// caller gives up), and counts the queries it got.
type stallingProm struct {
	srv     *httptest.Server
	release chan struct{}
	mu      sync.Mutex
	got     int
}

func newStallingProm(t *testing.T) *stallingProm {
	p := &stallingProm{release: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		p.got++
		p.mu.Unlock()
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
	}))
	t.Cleanup(p.srv.Close)
	t.Cleanup(p.free)
	return p
}

func (p *stallingProm) free() {
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

func (p *stallingProm) queries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got
}

// TestBacktestLimits checks the limit of backtests running at once (429),
// a hang-up (the backtest stops) and a shutdown (the caller gets a 503, not
// a result cut short).
func TestBacktestLimits(t *testing.T) {
	const spec = "metrics: [{name: m, interval: 1m, count: 2, provider: {prometheus: {query: up}}}]\n"

	t.Run("429 at --max-backtests", func(t *testing.T) {
		prom := newStallingProm(t)
		s := start(t, options{prometheus: []string{prom.srv.URL}, maxBacktests: 1, templates: templatesDir(t, nil)})
		first := make(chan response, 1)
		// Ends when the first backtest is answered, once prom is freed.
		go func() {
			resp, err := s.send(http.MethodPost, "/v1/backtests?start=-1h", yamlType, spec)
			if err != nil {
				t.Error(err)
			}
			first <- resp
		}()
		waitFor(t, "the first backtest to query", func() bool { return prom.queries() > 0 })
		resp := s.do(http.MethodPost, "/v1/backtests?start=-1h", yamlType, spec)
		if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" {
			t.Fatalf("second backtest: %d (Retry-After %q), want 429 with Retry-After: %s", resp.status, resp.header.Get("Retry-After"), resp.body)
		}
		if p := resp.problem(t); p.Type != server.ProblemTooManyAnalyses || !strings.Contains(p.Detail, "--max-backtests") {
			t.Errorf("problem %+v, want too-many-analyses naming --max-backtests", p)
		}
		if resp := s.do(http.MethodPost, "/v1/templates/success-rate/backtests?start=-1h&arg.namespace=echo", "", ""); resp.status != http.StatusTooManyRequests {
			t.Errorf("a template backtest beside it: %d, want 429", resp.status)
		}
		// Analyses do not count against backtests.
		if resp := s.do(http.MethodPost, "/v1/analyses", yamlType, spec); resp.status != http.StatusAccepted {
			t.Errorf("an analysis beside a backtest: %d, want 202", resp.status)
		}
		prom.free()
		if got := <-first; got.status != http.StatusOK || got.analysis(t).Phase != api.PhaseSuccessful {
			t.Errorf("first backtest: %d %s", got.status, got.body)
		}
		if resp := s.do(http.MethodPost, "/v1/backtests?start=-1h", yamlType, spec); resp.status != http.StatusOK {
			t.Errorf("after the first ended: %d, want 200", resp.status)
		}
	})

	t.Run("a hang-up stops the backtest", func(t *testing.T) {
		prom := newStallingProm(t)
		s := start(t, options{prometheus: []string{prom.srv.URL}, maxBacktests: 1})
		ctx, cancel := context.WithCancel(context.Background())
		req := s.request(ctx, http.MethodPost, "/v1/backtests?start=-1h", yamlType, spec)
		done := make(chan struct{})
		// Ends when the request fails: at cancel below.
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = readAllQuiet(resp)
			}
		}()
		waitFor(t, "the backtest to query", func() bool { return prom.queries() > 0 })
		cancel()
		<-done
		waitFor(t, "the backtest to stop", func() bool {
			return len(s.logs.FilterMessage("backtest stopped before it finished").All()) == 1
		})
		// Its place is free again, with prom still stalling: the next one
		// is refused for nothing but the query it waits on.
		waitFor(t, "the backtest's place to be free", func() bool {
			return strings.Contains(string(s.do(http.MethodGet, "/metrics", "", "").body), "canaryd_backtests_running 0")
		})
		if body := string(s.do(http.MethodGet, "/metrics", "", "").body); !strings.Contains(body, `canaryd_backtests_total{outcome="canceled"} 1`) {
			t.Errorf("/metrics does not count the canceled backtest")
		}
	})

	t.Run("503 while draining, and when the grace runs out", func(t *testing.T) {
		prom := newStallingProm(t)
		s := start(t, options{prometheus: []string{prom.srv.URL}})
		caller := make(chan response, 1)
		// Ends when the backtest is answered: at the end of the grace below.
		go func() {
			resp, err := s.send(http.MethodPost, "/v1/backtests?start=-1h", yamlType, spec)
			if err != nil {
				t.Error(err)
			}
			caller <- resp
		}()
		waitFor(t, "the backtest to query", func() bool { return prom.queries() > 0 })
		grace, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		drained := make(chan struct{})
		// Ends when the grace has run out and the backtest has stopped.
		go func() {
			s.analyses.Drain(grace)
			close(drained)
		}()
		waitFor(t, "draining", s.analyses.Draining)
		resp := s.do(http.MethodPost, "/v1/backtests?start=-1h", yamlType, spec)
		if resp.status != http.StatusServiceUnavailable || resp.problem(t).Type != server.ProblemShuttingDown {
			t.Errorf("a backtest while draining: %d %s, want a 503 shutting-down problem", resp.status, resp.body)
		}
		if resp := s.do(http.MethodPost, "/v1/templates/x/backtests?start=-1h", "", ""); resp.status != http.StatusServiceUnavailable {
			t.Errorf("a template backtest while draining: %d, want 503", resp.status)
		}
		<-drained
		got := <-caller
		if got.status != http.StatusServiceUnavailable || got.problem(t).Type != server.ProblemShuttingDown {
			t.Errorf("the backtest cut off by the shutdown: %d %s, want a 503 shutting-down problem", got.status, got.body)
		}
	})
}

// TestBacktestAuth checks that backtests are behind the token like every
// /v1 call.
func TestBacktestAuth(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, tokens: []string{"t0ken"}})
	for _, path := range []string{"/v1/backtests?start=-1h", "/v1/templates/x/backtests?start=-1h"} {
		if resp := s.do(http.MethodPost, path, yamlType, "metrics: []"); resp.status != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", path, resp.status)
		}
	}
	resp := s.do(http.MethodPost, "/v1/backtests?start=-1h", "", "metrics: []", "Authorization", "Bearer t0ken")
	if resp.status != http.StatusUnsupportedMediaType {
		t.Errorf("with the token and no Content-Type: %d, want 415", resp.status)
	}
	big := strings.Repeat("#", server.DefaultMaxBodyBytes+1)
	if resp := s.do(http.MethodPost, "/v1/backtests?start=-1h", yamlType, big, "Authorization", "Bearer t0ken"); resp.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: %d, want 413", resp.status)
	}
}
