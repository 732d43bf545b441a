package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// phaseJudge treats the measured value as the phase to give, so a test
// scripts verdicts directly.
type phaseJudge struct{}

func (phaseJudge) Judge(v any) (api.Phase, error) {
	if err, ok := v.(error); ok {
		return "", err
	}
	return v.(api.Phase), nil
}

// script is a source that returns its observations in order, repeating the
// last, and records the instants it was asked to measure at.
type script struct {
	mu  sync.Mutex
	obs []Observation
	at  []time.Time
}

func (s *script) Measure(ctx context.Context, at time.Time) Observation {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, at)
	o := s.obs[min(len(s.at), len(s.obs))-1]
	return o
}

func (s *script) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

func phases(ps ...api.Phase) *script {
	s := &script{}
	for _, p := range ps {
		if p == api.PhaseError {
			s.obs = append(s.obs, Observation{Err: errors.New("query failed")})
			continue
		}
		s.obs = append(s.obs, Observation{Value: p, Display: string(p)})
	}
	return s
}

// harness runs a plan on a fake clock and drives it to its end.
type harness struct {
	t      *testing.T
	clk    *clock.Fake
	idle   chan struct{}
	run    *Run
	events []api.Event
	mu     sync.Mutex
}

func start(t *testing.T, plan *Plan, configure ...func(*Options)) *harness {
	t.Helper()
	return startOn(t, clock.NewFake(t0), plan, configure...)
}

// startOn is start on a clock of the test's, which a resumed run shares
// with the run it continues.
func startOn(t *testing.T, clk *clock.Fake, plan *Plan, configure ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, clk: clk, idle: make(chan struct{}, 1)}
	opts := Options{ID: "test", Clock: h.clk}
	opts.onIdle = func() {
		select {
		case h.idle <- struct{}{}:
		default:
		}
	}
	opts.Observer = func(ev api.Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}
	for _, c := range configure {
		c(&opts)
	}
	h.run = Start(context.Background(), plan, opts)
	return h
}

// step waits until the run is idle and advances the clock to its next
// timer; it reports false once the run is done.
func (h *harness) step() bool {
	h.t.Helper()
	select {
	case <-h.run.Done():
		return false
	case <-h.idle:
		if !h.clk.AdvanceToNext() {
			// Idle with nothing scheduled: only a stop can end it.
			select {
			case <-h.run.Done():
				return false
			case <-time.After(5 * time.Second):
				h.t.Fatalf("run is idle with nothing scheduled")
			}
		}
		return true
	case <-time.After(5 * time.Second):
		h.t.Fatalf("run made no progress")
		return false
	}
}

func (h *harness) finish() api.Analysis {
	h.t.Helper()
	for h.step() {
	}
	return h.run.Snapshot()
}

// waitMeasurements steps until n measurements have been recorded.
// finishSlow checks a run that is decided while the measurement of its
// metric "slow" is in flight: a watcher sees it Running, not completed,
// until release lets that measurement end, and then is told of the
// measurement, then of the completion. It returns the final state.
func (h *harness) finishSlow(release chan<- struct{}) api.Analysis {
	h.t.Helper()
	now, events, cancel := h.run.Watch()
	defer cancel()
	if now.Phase != api.PhaseRunning || now.CompletedAt != nil {
		h.t.Errorf("decided, slow in flight: phase %s, completedAt %v; want Running until it completes", now.Phase, now.CompletedAt)
	}
	close(release)
	got := h.finish()
	var watched []string
	for ev := range events {
		watched = append(watched, string(ev.Type)+" "+ev.Metric)
	}
	if fmt.Sprint(watched) != "[measurement slow completed ]" {
		h.t.Errorf("watched %q, want the slow measurement, then completed", watched)
	}
	return got
}

func (h *harness) waitMeasurements(n int) {
	h.t.Helper()
	for {
		h.mu.Lock()
		got := 0
		for _, ev := range h.events {
			if ev.Type == api.EventMeasurement {
				got++
			}
		}
		h.mu.Unlock()
		if got >= n {
			return
		}
		if !h.step() {
			h.t.Fatalf("run ended after %d measurements, want %d", got, n)
		}
	}
}

func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, at := range ts {
		out[i] = at.Sub(t0)
	}
	return out
}

func TestRunSchedules(t *testing.T) {
	tests := []struct {
		name        string
		metric      Metric
		source      *script
		wantPhase   api.Phase
		wantMessage string
		wantAt      []time.Duration
		wantCounts  [5]int32 // count, successful, failed, inconclusive, error
	}{
		{
			name:      "no count no interval: one measurement",
			metric:    metric("m"),
			source:    phases(api.PhaseSuccessful),
			wantPhase: api.PhaseSuccessful, wantAt: []time.Duration{0},
			wantCounts: [5]int32{1, 1, 0, 0, 0},
		},
		{
			name:      "count 3 every 10 minutes",
			metric:    metric("m", func(m *Metric) { m.Interval = 10 * time.Minute; m.Count = i32(3) }),
			source:    phases(api.PhaseSuccessful),
			wantPhase: api.PhaseSuccessful, wantAt: []time.Duration{0, 10 * time.Minute, 20 * time.Minute},
			wantCounts: [5]int32{3, 3, 0, 0, 0},
		},
		{
			name:      "initialDelay",
			metric:    metric("m", func(m *Metric) { m.InitialDelay = 5 * time.Minute; m.Interval = time.Minute; m.Count = i32(2) }),
			source:    phases(api.PhaseSuccessful),
			wantPhase: api.PhaseSuccessful, wantAt: []time.Duration{5 * time.Minute, 6 * time.Minute},
			wantCounts: [5]int32{2, 2, 0, 0, 0},
		},
		{
			name:        "first failure fails at once with the default failureLimit",
			metric:      metric("m", withCount(5)),
			source:      phases(api.PhaseSuccessful, api.PhaseFailed),
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "m" assessed Failed due to failed (1) > failureLimit (0)`,
			wantAt:      []time.Duration{0, time.Minute},
			wantCounts:  [5]int32{2, 1, 1, 0, 0},
		},
		{
			name: "seed: failureLimit 1, two failures",
			metric: metric("non-5xx-rate", func(m *Metric) {
				m.Interval = 30 * time.Second
				m.Count = i32(3)
				m.FailureLimit = 1
			}),
			source:      phases(api.PhaseFailed),
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "non-5xx-rate" assessed Failed due to failed (2) > failureLimit (1)`,
			wantAt:      []time.Duration{0, 30 * time.Second},
			wantCounts:  [5]int32{2, 0, 2, 0, 0},
		},
		{
			name: "seed: one failure within failureLimit 1",
			metric: metric("non-5xx-rate", func(m *Metric) {
				m.Interval = 30 * time.Second
				m.Count = i32(3)
				m.FailureLimit = 1
			}),
			source:     phases(api.PhaseSuccessful, api.PhaseFailed, api.PhaseSuccessful),
			wantPhase:  api.PhaseSuccessful,
			wantAt:     []time.Duration{0, 30 * time.Second, time.Minute},
			wantCounts: [5]int32{3, 2, 1, 0, 0},
		},
		{
			name:        "inconclusive",
			metric:      metric("m", withCount(3)),
			source:      phases(api.PhaseInconclusive),
			wantPhase:   api.PhaseInconclusive,
			wantMessage: `Metric "m" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)`,
			wantAt:      []time.Duration{0},
			wantCounts:  [5]int32{1, 0, 0, 1, 0},
		},
		{
			name:   "errors retry after 10s and do not count",
			metric: metric("m", withCount(2)),
			source: phases(api.PhaseError, api.PhaseError, api.PhaseSuccessful),
			// 0 error, +10s error, +20s success, +1m20s success
			wantPhase:  api.PhaseSuccessful,
			wantAt:     []time.Duration{0, 10 * time.Second, 20 * time.Second, 80 * time.Second},
			wantCounts: [5]int32{2, 2, 0, 0, 2},
		},
		{
			name:        "five consecutive errors end in Error",
			metric:      metric("m", withCount(3)),
			source:      phases(api.PhaseError),
			wantPhase:   api.PhaseError,
			wantMessage: `Metric "m" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: query failed"`,
			wantAt:      []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second},
			wantCounts:  [5]int32{0, 0, 0, 0, 5},
		},
		{
			name:        "consecutiveErrorLimit 0: the first error",
			metric:      metric("m", withCount(3), limits(0, 0, 0, 0)),
			source:      phases(api.PhaseError),
			wantPhase:   api.PhaseError,
			wantMessage: `Metric "m" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: query failed"`,
			wantAt:      []time.Duration{0},
			wantCounts:  [5]int32{0, 0, 0, 0, 1},
		},
		{
			name:       "a success resets consecutive errors",
			metric:     metric("m", withCount(3), limits(0, 0, 1, 0)),
			wantPhase:  api.PhaseSuccessful,
			source:     phases(api.PhaseError, api.PhaseSuccessful, api.PhaseError, api.PhaseSuccessful, api.PhaseSuccessful),
			wantAt:     []time.Duration{0, 10 * time.Second, 70 * time.Second, 80 * time.Second, 140 * time.Second},
			wantCounts: [5]int32{3, 3, 0, 0, 2},
		},
		{
			name:       "consecutiveSuccessLimit ends early",
			metric:     metric("m", withCount(10), limits(-1, 0, 4, 2)),
			source:     phases(api.PhaseFailed, api.PhaseSuccessful, api.PhaseSuccessful),
			wantPhase:  api.PhaseSuccessful,
			wantAt:     []time.Duration{0, time.Minute, 2 * time.Minute},
			wantCounts: [5]int32{3, 2, 1, 0, 0},
		},
		{
			name:       "consecutiveSuccessLimit not reached within count",
			metric:     metric("m", withCount(3), limits(-1, 0, 4, 3)),
			source:     phases(api.PhaseSuccessful, api.PhaseFailed, api.PhaseSuccessful),
			wantPhase:  api.PhaseFailed,
			wantAt:     []time.Duration{0, time.Minute, 2 * time.Minute},
			wantCounts: [5]int32{3, 2, 1, 0, 0},
		},
		{
			name:       "indefinite with consecutiveSuccessLimit",
			metric:     metric("m", indefinite, limits(-1, 0, 4, 3)),
			source:     phases(api.PhaseSuccessful),
			wantPhase:  api.PhaseSuccessful,
			wantAt:     []time.Duration{0, time.Minute, 2 * time.Minute},
			wantCounts: [5]int32{3, 3, 0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.metric
			m.Source = tt.source
			m.Judge = phaseJudge{}
			h := start(t, &Plan{Metrics: []Metric{m}})
			got := h.finish()
			if got.Phase != tt.wantPhase || got.Message != tt.wantMessage {
				t.Errorf("got (%s, %q), want (%s, %q)", got.Phase, got.Message, tt.wantPhase, tt.wantMessage)
			}
			if at := offsets(tt.source.times()); fmt.Sprint(at) != fmt.Sprint(tt.wantAt) {
				t.Errorf("measured at %v, want %v", at, tt.wantAt)
			}
			r := got.MetricResults[0]
			if c := [5]int32{r.Count, r.Successful, r.Failed, r.Inconclusive, r.Error}; c != tt.wantCounts {
				t.Errorf("counters %v, want %v", c, tt.wantCounts)
			}
			if got.CompletedAt == nil || got.StartedAt == nil || !got.StartedAt.Equal(t0) {
				t.Errorf("startedAt %v completedAt %v", got.StartedAt, got.CompletedAt)
			}
			if r.Phase != tt.wantPhase {
				t.Errorf("metric phase %s, want %s", r.Phase, tt.wantPhase)
			}
		})
	}
}

func TestRunIndefiniteUntilTerminated(t *testing.T) {
	src := phases(api.PhaseSuccessful)
	m := metric("background", indefinite)
	m.Source, m.Judge = src, phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{m}})
	h.waitMeasurements(4)
	h.run.Terminate()
	got := h.finish()
	if got.Phase != api.PhaseSuccessful || got.Message != "Run Terminated" {
		t.Fatalf("got (%s, %q), want Successful / Run Terminated", got.Phase, got.Message)
	}
	if n := len(src.times()); n != 4 {
		t.Errorf("%d measurements after terminate, want 4", n)
	}
	if got.MetricResults[0].Count != 4 {
		t.Errorf("count %d, want 4", got.MetricResults[0].Count)
	}
}

func TestRunTerminateKeepsTrippedLimits(t *testing.T) {
	// A failure within failureLimit, then terminate: the metric ends
	// Successful because the limit did not trip (Argo's semantics).
	src := phases(api.PhaseFailed, api.PhaseSuccessful)
	m := metric("m", indefinite, limits(1, 0, 4, 0))
	m.Source, m.Judge = src, phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{m}})
	h.waitMeasurements(2)
	h.run.Terminate()
	if got := h.finish(); got.Phase != api.PhaseSuccessful {
		t.Fatalf("phase %s, want Successful", got.Phase)
	}
}

func TestRunSelfTermination(t *testing.T) {
	fast := metric("fast", withCount(1))
	fast.Source, fast.Judge = phases(api.PhaseFailed), phaseJudge{}
	slow := metric("slow", withCount(10))
	slowSrc := phases(api.PhaseSuccessful)
	slow.Source, slow.Judge = slowSrc, phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{fast, slow}})
	got := h.finish()
	if got.Phase != api.PhaseFailed {
		t.Fatalf("phase %s, want Failed", got.Phase)
	}
	if n := len(slowSrc.times()); n > 1 {
		t.Errorf("slow metric measured %d times after the run failed", n)
	}
	if p := got.MetricResults[1].Phase; p != api.PhaseSuccessful {
		t.Errorf("slow metric %s, want Successful (terminated, no limit tripped)", p)
	}
	if got.RunSummary != (api.RunSummary{Count: 2, Successful: 1, Failed: 1}) {
		t.Errorf("runSummary %+v", got.RunSummary)
	}
}

func TestRunDryRun(t *testing.T) {
	real := metric("real", withCount(2))
	real.Source, real.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	dry := metric("dry", withCount(2))
	dry.DryRun = true
	dry.Source, dry.Judge = phases(api.PhaseFailed), phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{real, dry}})
	got := h.finish()
	if got.Phase != api.PhaseSuccessful || got.Message != "" {
		t.Fatalf("got (%s, %q), want Successful", got.Phase, got.Message)
	}
	d := got.MetricResults[1]
	if d.Phase != api.PhaseFailed || !d.DryRun || d.Message != "Metric assessed Failed due to failed (1) > failureLimit (0)" {
		t.Errorf("dry-run result %s %v %q", d.Phase, d.DryRun, d.Message)
	}
	if got.DryRunSummary != (api.RunSummary{Count: 1, Failed: 1}) || got.RunSummary != (api.RunSummary{Count: 1, Successful: 1}) {
		t.Errorf("summaries %+v %+v", got.RunSummary, got.DryRunSummary)
	}
	if got.MetricResults[0].Count != 2 {
		t.Errorf("real metric count %d, want 2: a failing dry-run metric must not stop it", got.MetricResults[0].Count)
	}
}

func TestRunRetention(t *testing.T) {
	src := &script{}
	for i := range 25 {
		src.obs = append(src.obs, Observation{Value: api.PhaseSuccessful, Display: fmt.Sprint(i)})
	}
	m := metric("m", withCount(25))
	m.Retention = 3
	m.Source, m.Judge = src, phaseJudge{}
	got := start(t, &Plan{Metrics: []Metric{m}}).finish()
	r := got.MetricResults[0]
	if len(r.Measurements) != 3 || r.Measurements[0].Value != "22" || r.Measurements[2].Value != "24" {
		t.Errorf("kept %v, want the newest three (22..24)", r.Measurements)
	}
	if r.Count != 25 || r.Successful != 25 {
		t.Errorf("counters count=%d successful=%d, want 25: retention must not touch them", r.Count, r.Successful)
	}
}

// TestRunMeasurementListGrows checks that a metric's list of measurements
// grows as they come, and to no more than the metric keeps: room for
// ten at the second measurement would be held for the run's whole life.
func TestRunMeasurementListGrows(t *testing.T) {
	listCap := func(r *Run) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cap(r.results[0].Measurements)
	}
	for _, tc := range []struct {
		count, retention, final int
	}{
		{count: 10, retention: 10, final: 10}, // the count, not append's 16
		{count: 25, retention: 3, final: 4},   // the retention and one in progress
	} {
		m := metric("m", withCount(int32(tc.count)), func(m *Metric) { m.Retention = tc.retention })
		m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
		h := start(t, &Plan{Metrics: []Metric{m}})
		h.waitMeasurements(2)
		if got := listCap(h.run); got > 4 {
			t.Errorf("count %d, retention %d: room for %d measurements after 2, want at most 4", tc.count, tc.retention, got)
		}
		h.finish()
		if got := listCap(h.run); got != tc.final {
			t.Errorf("count %d, retention %d: room for %d measurements at the end, want %d", tc.count, tc.retention, got, tc.final)
		}
	}
}

func TestRunEventsAndWatch(t *testing.T) {
	m := metric("m", withCount(3))
	m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{m}})
	_, events, cancel := h.run.Watch()
	defer cancel()
	got := h.finish()
	var types []api.EventType
	for ev := range events {
		types = append(types, ev.Type)
		if ev.Type == api.EventCompleted && ev.Analysis.Phase != got.Phase {
			t.Errorf("completed event phase %s, want %s", ev.Analysis.Phase, got.Phase)
		}
	}
	// The watcher may have joined after the first measurement.
	if len(types) < 2 || types[len(types)-1] != api.EventCompleted {
		t.Errorf("watched %v, want measurements then completed", types)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) != 4 || h.events[3].Type != api.EventCompleted {
		t.Errorf("observer saw %d events, want 3 measurements and completed", len(h.events))
	}
	for i, ev := range h.events[:3] {
		if ev.Metric != "m" || ev.Measurement == nil || ev.Measurement.Phase != api.PhaseSuccessful {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	// Watching a finished run yields the completed event at once.
	_, late, _ := h.run.Watch()
	ev, ok := <-late
	if !ok || ev.Type != api.EventCompleted {
		t.Errorf("late watcher got %+v, %v", ev, ok)
	}
}

func TestRunAbort(t *testing.T) {
	m := metric("m", indefinite)
	m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{m}})
	h.waitMeasurements(2)
	h.run.Abort("canaryd stopped before the analysis completed")
	got := h.finish()
	if got.Phase != api.PhaseError || got.Message != "canaryd stopped before the analysis completed" {
		t.Fatalf("got (%s, %q)", got.Phase, got.Message)
	}
}

func TestRunMaxDuration(t *testing.T) {
	m := metric("m", indefinite)
	m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{m}}, func(o *Options) { o.MaxDuration = 150 * time.Second })
	got := h.finish()
	if got.Phase != api.PhaseError || got.Message != "analysis exceeded its maximum duration of 2m30s" {
		t.Fatalf("got (%s, %q)", got.Phase, got.Message)
	}
	if got.MetricResults[0].Count != 3 {
		t.Errorf("count %d, want 3 (at 0, 1m, 2m)", got.MetricResults[0].Count)
	}
}

func TestRunContextCancelTerminates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	m := metric("m", withCount(3))
	m.Judge = phaseJudge{}
	m.Source = SourceFunc(func(ctx context.Context, at time.Time) Observation {
		close(block)
		<-ctx.Done()
		return Observation{Err: ctx.Err()}
	})
	run := Start(ctx, &Plan{Metrics: []Metric{m}}, Options{Clock: clock.NewFake(t0)})
	<-block
	cancel()
	select {
	case <-run.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("run did not stop")
	}
	got := run.Snapshot()
	if got.Phase != api.PhaseSuccessful || got.Message != "Run Terminated" {
		t.Errorf("got (%s, %q): an in-flight measurement is dropped and the run terminated", got.Phase, got.Message)
	}
}

func TestRunJudgeErrorKeepsValue(t *testing.T) {
	m := metric("m", func(m *Metric) { m.ConsecutiveErrorLimit = 0 })
	m.Judge = phaseJudge{}
	m.Source = SourceFunc(func(context.Context, time.Time) Observation {
		return Observation{Value: errors.New("could not evaluate"), Display: "[]"}
	})
	got := start(t, &Plan{Metrics: []Metric{m}}).finish()
	ms := got.MetricResults[0].Measurements[0]
	if ms.Phase != api.PhaseError || ms.Message != "could not evaluate" || ms.Value != "[]" {
		t.Errorf("measurement %+v", ms)
	}
}

func TestIsNoData(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		value any
		want  bool
	}{
		{nil, true},
		{[]float64{}, true},
		{[]float64{nan, nan}, true},
		{nan, true},
		{[]float64{nan, 0.5}, false},
		{0.0, false},
		{[]float64{0}, false},
		{map[string]any{}, false},
	}
	for _, tt := range tests {
		if got := IsNoData(tt.value); got != tt.want {
			t.Errorf("IsNoData(%#v) = %v, want %v", tt.value, got, tt.want)
		}
	}
}

// TestRunNoDataPolicy: with a noData policy an empty result decides the
// measurement without the conditions, which would have passed it
// vacuously (all(result, …)) or errored (result[0]).
func TestRunNoDataPolicy(t *testing.T) {
	empty := SourceFunc(func(context.Context, time.Time) Observation {
		return Observation{Value: []float64{}, Display: "[]"}
	})
	tests := []struct {
		policy      api.Phase
		wantPhase   api.Phase
		wantMessage string
	}{
		{"", api.PhaseSuccessful, ""}, // Argo: the judge decides
		{api.PhaseInconclusive, api.PhaseInconclusive, "no data: the query returned an empty result (noData: Inconclusive)"},
		{api.PhaseFailed, api.PhaseFailed, "no data: the query returned an empty result (noData: Failed)"},
		{api.PhaseError, api.PhaseError, "no data: the query returned an empty result (noData: Error)"},
	}
	for _, tt := range tests {
		m := metric("m", func(m *Metric) { m.ConsecutiveErrorLimit = 0 })
		m.NoData = tt.policy
		m.Source = empty
		// A judge that passes everything, like all(result, # < 0.1) on [].
		m.Judge = judgeFunc(func(any) (api.Phase, error) { return api.PhaseSuccessful, nil })
		got := start(t, &Plan{Metrics: []Metric{m}}).finish()
		ms := got.MetricResults[0].Measurements[0]
		if ms.Phase != tt.wantPhase || ms.Message != tt.wantMessage || ms.Value != "[]" {
			t.Errorf("policy %q: measurement (%s, %q, %q), want (%s, %q, [])", tt.policy, ms.Phase, ms.Message, ms.Value, tt.wantPhase, tt.wantMessage)
		}
		if got.Phase != tt.wantPhase {
			t.Errorf("policy %q: analysis %s, want %s", tt.policy, got.Phase, tt.wantPhase)
		}
	}
}

type judgeFunc func(any) (api.Phase, error)

func (f judgeFunc) Judge(v any) (api.Phase, error) { return f(v) }

// TestRunSelfTerminationRecordsInFlight: measurements taken together count
// together, as in Argo's reconcile. When one metric fails the run, another
// metric's measurement still in flight finishes and is recorded; it is
// shown as a Running measurement meanwhile.
func TestRunSelfTerminationRecordsInFlight(t *testing.T) {
	release := make(chan struct{})
	fast := metric("fast")
	fast.Source, fast.Judge = phases(api.PhaseFailed), phaseJudge{}
	slow := metric("slow")
	slow.Judge = phaseJudge{}
	slow.Source = SourceFunc(func(ctx context.Context, at time.Time) Observation {
		<-release
		return Observation{Value: api.PhaseInconclusive, Display: "late"}
	})
	h := start(t, &Plan{Metrics: []Metric{fast, slow}})
	// Wait until the fast metric has failed, then look at the slow one.
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := h.run.Snapshot()
		if a.MetricResults[0].Phase == api.PhaseFailed {
			ms := a.MetricResults[1].Measurements
			if a.Phase.Completed() || len(ms) != 1 || ms[0].Phase != api.PhaseRunning || ms[0].FinishedAt != nil {
				t.Fatalf("while slow is in flight: run %s, slow measurements %+v; want Running and one unfinished measurement", a.Phase, ms)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fast metric never failed")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	got := h.finish()
	s := got.MetricResults[1]
	if got.Phase != api.PhaseFailed || s.Count != 1 || s.Inconclusive != 1 || s.Phase != api.PhaseInconclusive || s.Measurements[0].Value != "late" {
		t.Errorf("run %s; slow %s count=%d inconclusive=%d %+v; want Failed, and the slow measurement recorded (Inconclusive)",
			got.Phase, s.Phase, s.Count, s.Inconclusive, s.Measurements)
	}
	if got.RunSummary != (api.RunSummary{Count: 2, Failed: 1, Inconclusive: 1}) {
		t.Errorf("runSummary %+v", got.RunSummary)
	}
}

// TestRunDoesNotChangeItsPlan checks that Start leaves the plan it is given
// as it was, so that a plan can be shared by runs (a server keeps the plans
// it compiled): a metric without an interval or a count gets its count of
// one in the run's own copy.
func TestRunDoesNotChangeItsPlan(t *testing.T) {
	m := metric("once", func(m *Metric) { m.Count = nil })
	m.Judge = phaseJudge{}
	m.Source = phases(api.PhaseSuccessful)
	plan := &Plan{Metrics: []Metric{m}}
	got := start(t, plan).finish()
	if got.Phase != api.PhaseSuccessful || got.MetricResults[0].Count != 1 {
		t.Errorf("run %+v, want one Successful measurement", got)
	}
	if plan.Metrics[0].Count != nil {
		t.Errorf("the plan's count was set to %d; the run must keep its own", *plan.Metrics[0].Count)
	}
}

// TestRunSlowMetricDoesNotHoldBackOthers checks that each metric is measured
// on its own schedule: while one metric's query has not returned, another
// metric takes all its measurements. (Argo's reconcile waits for every
// measurement it started before the next; canaryd deliberately does not, as
// docs/differences.md says.) The slow query returns only once
// the fast metric has been measured three times, so a run that held the fast
// metric back would never finish.
func TestRunSlowMetricDoesNotHoldBackOthers(t *testing.T) {
	fastDone := make(chan struct{})
	var fastCalls int
	fast := metric("fast", func(m *Metric) { m.Interval = time.Millisecond; m.Count = i32(3) })
	fast.Judge = phaseJudge{}
	fast.Source = SourceFunc(func(ctx context.Context, at time.Time) Observation {
		fastCalls++ // measurements of one metric never overlap
		if fastCalls == 3 {
			close(fastDone)
		}
		return Observation{Value: api.PhaseSuccessful, Display: "fast"}
	})
	slow := metric("slow", withCount(1))
	slow.Judge = phaseJudge{}
	slow.Source = SourceFunc(func(ctx context.Context, at time.Time) Observation {
		select {
		case <-fastDone:
		case <-ctx.Done():
		}
		return Observation{Value: api.PhaseFailed, Display: "slow"}
	})
	run := Start(context.Background(), &Plan{Metrics: []Metric{fast, slow}}, Options{ID: "test"})
	select {
	case <-run.Done():
	case <-time.After(10 * time.Second):
		run.Abort("test timed out")
		t.Fatal("the fast metric was held back by the slow one")
	}
	got := run.Snapshot()
	if got.Phase != api.PhaseFailed || got.MetricResults[0].Count != 3 {
		t.Errorf("run %s, fast count %d; want Failed and 3", got.Phase, got.MetricResults[0].Count)
	}
}

// TestRunDecidedIsNotCompleted: once a metric has decided the run, the run
// shows phase Running, without completedAt, until the measurements in flight
// beside it have been recorded, so that a reader (a store keeping the
// snapshot, a watcher joining then) never takes a run that is still
// recording for a completed one.
func TestRunDecidedIsNotCompleted(t *testing.T) {
	releaseMid, releaseSlow := make(chan struct{}), make(chan struct{})
	gated := func(release chan struct{}, p api.Phase) Source {
		return SourceFunc(func(ctx context.Context, at time.Time) Observation {
			<-release
			return Observation{Value: p, Display: string(p)}
		})
	}
	fast := metric("fast")
	fast.Source, fast.Judge = phases(api.PhaseFailed), phaseJudge{}
	mid := metric("mid")
	mid.Source, mid.Judge = gated(releaseMid, api.PhaseSuccessful), phaseJudge{}
	slow := metric("slow")
	slow.Source, slow.Judge = gated(releaseSlow, api.PhaseInconclusive), phaseJudge{}
	h := start(t, &Plan{Metrics: []Metric{fast, mid, slow}})
	waitFor := func(what string, ok func(api.Analysis) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(h.run.Snapshot()); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened", what)
			}
		}
	}
	waitFor("fast failing", func(a api.Analysis) bool { return a.MetricResults[0].Phase == api.PhaseFailed })
	close(releaseMid)
	waitFor("mid recorded", func(a api.Analysis) bool { return a.MetricResults[1].Count == 1 })
	got := h.finishSlow(releaseSlow)
	if got.Phase != api.PhaseFailed || got.MetricResults[2].Inconclusive != 1 {
		t.Errorf("got %s, slow %+v; want Failed with slow's measurement recorded", got.Phase, got.MetricResults[2])
	}
}

// TestIsNoDataNamedList: a named list of numbers (condition.Doubles,
// InfluxDB's) holds no data when it holds only NaN, as a []float64 does.
func TestIsNoDataNamedList(t *testing.T) {
	type doubles []float64
	if !IsNoData(doubles{math.NaN()}) || describeNoData(doubles{math.NaN()}) != "only NaN" {
		t.Errorf("a named list of NaN: IsNoData %v (%s), want true (only NaN)", IsNoData(doubles{math.NaN()}), describeNoData(doubles{math.NaN()}))
	}
	if IsNoData(doubles{math.NaN(), 1}) || IsNoData(doubles{}) == false {
		t.Errorf("a named list with a number: IsNoData %v, want false; an empty one: %v, want true", IsNoData(doubles{math.NaN(), 1}), IsNoData(doubles{}))
	}
}
