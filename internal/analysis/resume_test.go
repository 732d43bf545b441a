package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/judge"
)

// after returns the instant d after t0.
func after(d time.Duration) *time.Time {
	at := t0.Add(d)
	return &at
}

// finished is a stored measurement of phase p taken from started to
// finished (offsets from t0).
func finished(p api.Phase, started, finished time.Duration) api.Measurement {
	ms := api.Measurement{Phase: p, StartedAt: after(started), FinishedAt: after(finished), Value: string(p)}
	if p == api.PhaseError {
		ms.Message = "query failed"
	}
	return ms
}

// inFlight is a stored measurement that had not finished.
func inFlight(started time.Duration) api.Measurement {
	return api.Measurement{Phase: api.PhaseRunning, StartedAt: after(started)}
}

// stored is an analysis as a store keeps it while it runs: started at t0.
func stored(results ...api.MetricResult) *api.Analysis {
	for i := range results {
		if results[i].Measurements == nil {
			results[i].Measurements = []api.Measurement{}
		}
	}
	return &api.Analysis{ID: "test", Phase: api.PhaseRunning, StartedAt: after(0), MetricResults: results}
}

// resume starts a run of plan from snapshot on a fake clock reading t0+at.
func resume(t *testing.T, plan *Plan, snapshot *api.Analysis, at time.Duration, configure ...func(*Options)) *harness {
	t.Helper()
	clk := clock.NewFake(t0.Add(at))
	return startOn(t, clk, plan, append([]func(*Options){func(o *Options) { o.Resume = snapshot }}, configure...)...)
}

// TestResumeSchedule checks each rule by which a resumed metric is
// scheduled and counted, as Argo's controller continues an AnalysisRun from
// its status: the next measurement at the last finishedAt + interval (the
// error retry interval after an Error), at once when overdue; a metric not
// yet measured at the stored startedAt + initialDelay; initialDelay not
// applied again; a measurement in flight taken again and counted once;
// counters and streaks as stored.
func TestResumeSchedule(t *testing.T) {
	successes2 := api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 2, Successful: 2, ConsecutiveSuccess: 2,
		Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0), finished(api.PhaseSuccessful, time.Minute, time.Minute+2*time.Second)}}
	tests := []struct {
		name        string
		metric      Metric
		stored      api.MetricResult
		resumeAt    time.Duration
		source      *script
		wantAt      []time.Duration
		wantPhase   api.Phase
		wantMessage string
		wantCounts  [7]int32 // count, successful, failed, inconclusive, error, consecutiveError, consecutiveSuccess
		wantLast    int      // measurements kept
	}{
		{
			name:   "next at the last finishedAt + interval",
			metric: metric("m", withCount(4)), stored: successes2, resumeAt: 90 * time.Second,
			source:    phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{2*time.Minute + 2*time.Second, 3*time.Minute + 2*time.Second},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{4, 4, 0, 0, 0, 0, 4}, wantLast: 4,
		},
		{
			name:   "overdue: at once, then every interval",
			metric: metric("m", withCount(4)), stored: successes2, resumeAt: 10 * time.Minute,
			source:    phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{10 * time.Minute, 11 * time.Minute},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{4, 4, 0, 0, 0, 0, 4}, wantLast: 4,
		},
		{
			name:   "after an Error: the error retry interval",
			metric: metric("m", withCount(2)),
			stored: api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 1, Successful: 1, Error: 1, ConsecutiveError: 1,
				Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0), finished(api.PhaseError, time.Minute, time.Minute)}},
			resumeAt: time.Minute + 5*time.Second, source: phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{time.Minute + 10*time.Second},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{2, 2, 0, 0, 1, 0, 1}, wantLast: 3,
		},
		{
			name:   "not measured yet: initialDelay from the stored startedAt",
			metric: metric("m", withCount(2), func(m *Metric) { m.InitialDelay = 5 * time.Minute }),
			stored: api.MetricResult{Name: "m", Phase: api.PhasePending}, resumeAt: 2 * time.Minute,
			source:    phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{5 * time.Minute, 6 * time.Minute},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{2, 2, 0, 0, 0, 0, 2}, wantLast: 2,
		},
		{
			name:   "not measured yet, its initialDelay over: at once",
			metric: metric("m", withCount(2), func(m *Metric) { m.InitialDelay = 5 * time.Minute }),
			stored: api.MetricResult{Name: "m", Phase: api.PhasePending}, resumeAt: 7 * time.Minute,
			source:    phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{7 * time.Minute, 8 * time.Minute},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{2, 2, 0, 0, 0, 0, 2}, wantLast: 2,
		},
		{
			name:   "initialDelay not applied again",
			metric: metric("m", withCount(2), func(m *Metric) { m.InitialDelay = 5 * time.Minute }),
			stored: api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
				Measurements: []api.Measurement{finished(api.PhaseSuccessful, 5*time.Minute, 5*time.Minute)}},
			resumeAt: 5*time.Minute + 30*time.Second, source: phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{6 * time.Minute},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{2, 2, 0, 0, 0, 0, 2}, wantLast: 2,
		},
		{
			name:   "in flight: taken again at once, counted once",
			metric: metric("m", withCount(3)),
			stored: api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
				Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0), inFlight(time.Minute)}},
			resumeAt: time.Minute + 20*time.Second, source: phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{time.Minute + 20*time.Second, 2*time.Minute + 20*time.Second},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{3, 3, 0, 0, 0, 0, 3}, wantLast: 3,
		},
		{
			name:     "in flight, its first measurement: taken again at once",
			metric:   metric("m", withCount(2), func(m *Metric) { m.InitialDelay = time.Minute }),
			stored:   api.MetricResult{Name: "m", Phase: api.PhaseRunning, Measurements: []api.Measurement{inFlight(time.Minute)}},
			resumeAt: 3 * time.Minute, source: phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{3 * time.Minute, 4 * time.Minute},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{2, 2, 0, 0, 0, 0, 2}, wantLast: 2,
		},
		{
			name:   "consecutiveSuccess as stored",
			metric: metric("m", indefinite, limits(-1, 0, 4, 3)), stored: successes2, resumeAt: 2 * time.Minute,
			source:    phases(api.PhaseSuccessful),
			wantAt:    []time.Duration{2*time.Minute + 2*time.Second},
			wantPhase: api.PhaseSuccessful, wantCounts: [7]int32{3, 3, 0, 0, 0, 0, 3}, wantLast: 3,
		},
		{
			name:   "consecutiveError as stored",
			metric: metric("m", withCount(3)),
			stored: api.MetricResult{Name: "m", Phase: api.PhaseRunning, Error: 4, ConsecutiveError: 4,
				Measurements: []api.Measurement{finished(api.PhaseError, 30*time.Second, 30*time.Second)}},
			resumeAt: 35 * time.Second, source: phases(api.PhaseError),
			wantAt:      []time.Duration{40 * time.Second},
			wantPhase:   api.PhaseError,
			wantMessage: `Metric "m" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: query failed"`,
			wantCounts:  [7]int32{0, 0, 0, 0, 5, 5, 0}, wantLast: 2,
		},
		{
			name:   "failed as stored",
			metric: metric("m", withCount(5), limits(1, 0, 4, 0)),
			stored: api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 1, Failed: 1,
				Measurements: []api.Measurement{finished(api.PhaseFailed, 0, 0)}},
			resumeAt: 0, source: phases(api.PhaseFailed),
			wantAt:      []time.Duration{time.Minute},
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "m" assessed Failed due to failed (2) > failureLimit (1)`,
			wantCounts:  [7]int32{2, 0, 2, 0, 0, 0, 0}, wantLast: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.metric
			m.Source, m.Judge = tt.source, phaseJudge{}
			snapshot := stored(tt.stored)
			before := fmt.Sprintf("%+v", *snapshot)
			got := resume(t, &Plan{Metrics: []Metric{m}}, snapshot, tt.resumeAt).finish()
			if at := offsets(tt.source.times()); fmt.Sprint(at) != fmt.Sprint(tt.wantAt) {
				t.Errorf("measured at %v, want %v", at, tt.wantAt)
			}
			if got.Phase != tt.wantPhase || got.Message != tt.wantMessage {
				t.Errorf("got (%s, %q), want (%s, %q)", got.Phase, got.Message, tt.wantPhase, tt.wantMessage)
			}
			r := got.MetricResults[0]
			if c := [7]int32{r.Count, r.Successful, r.Failed, r.Inconclusive, r.Error, r.ConsecutiveError, r.ConsecutiveSuccess}; c != tt.wantCounts {
				t.Errorf("counters %v, want %v", c, tt.wantCounts)
			}
			if len(r.Measurements) != tt.wantLast {
				t.Errorf("%d measurements kept, want %d: %+v", len(r.Measurements), tt.wantLast, r.Measurements)
			}
			for i, ms := range r.Measurements {
				if !ms.Phase.Completed() || ms.FinishedAt == nil {
					t.Errorf("measurement %d unfinished: %+v", i, ms)
				}
			}
			if got.StartedAt == nil || !got.StartedAt.Equal(t0) {
				t.Errorf("startedAt %v, want the stored %v", got.StartedAt, t0)
			}
			if after := fmt.Sprintf("%+v", *snapshot); after != before {
				t.Errorf("the caller's snapshot was changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// TestResumeCompletedMetricsStayCompleted: a metric that had completed (its
// count reached, or a dry-run metric that failed) is not measured again and
// keeps its result; the others go on.
func TestResumeCompletedMetricsStayCompleted(t *testing.T) {
	once := metric("once")
	onceSrc := phases(api.PhaseFailed)
	once.Source, once.Judge = onceSrc, phaseJudge{}
	dry := metric("dry", withCount(3))
	dry.DryRun = true
	drySrc := phases(api.PhaseSuccessful)
	dry.Source, dry.Judge = drySrc, phaseJudge{}
	more := metric("more", withCount(2))
	moreSrc := phases(api.PhaseSuccessful)
	more.Source, more.Judge = moreSrc, phaseJudge{}

	onceResult := api.MetricResult{Name: "once", Phase: api.PhaseSuccessful, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
		Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0)}}
	dryResult := api.MetricResult{Name: "dry", Phase: api.PhaseFailed, DryRun: true, Count: 1, Failed: 1,
		Message:      "Metric assessed Failed due to failed (1) > failureLimit (0)",
		Measurements: []api.Measurement{finished(api.PhaseFailed, 0, 0)}}
	snapshot := stored(onceResult, dryResult, api.MetricResult{Name: "more", Phase: api.PhaseRunning, Count: 1, Successful: 1,
		ConsecutiveSuccess: 1, Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0)}})
	got := resume(t, &Plan{Metrics: []Metric{once, dry, more}}, snapshot, 30*time.Second).finish()

	if n, m := len(onceSrc.times()), len(drySrc.times()); n != 0 || m != 0 {
		t.Errorf("completed metrics measured again: %d and %d times", n, m)
	}
	if at := offsets(moreSrc.times()); fmt.Sprint(at) != fmt.Sprint([]time.Duration{time.Minute}) {
		t.Errorf("the running metric measured at %v, want [1m0s]", at)
	}
	if got.Phase != api.PhaseSuccessful {
		t.Errorf("phase %s, want Successful", got.Phase)
	}
	if !reflect.DeepEqual(got.MetricResults[0], onceResult) || !reflect.DeepEqual(got.MetricResults[1], dryResult) {
		t.Errorf("completed results changed:\n%+v\n%+v", got.MetricResults[0], got.MetricResults[1])
	}
	if got.DryRunSummary != (api.RunSummary{Count: 1, Failed: 1}) || got.RunSummary != (api.RunSummary{Count: 2, Successful: 2}) {
		t.Errorf("summaries %+v %+v", got.RunSummary, got.DryRunSummary)
	}
}

// TestResumeInFlightCountsWithTheDecision: one metric had failed the run
// while another's measurement was in flight. Undisturbed, that measurement
// would have been recorded with the failure (measurements taken together
// count together); resumed, it is taken again, though the run is already
// decided, and recorded.
func TestResumeInFlightCountsWithTheDecision(t *testing.T) {
	fast := metric("fast", withCount(3))
	fastSrc := phases(api.PhaseSuccessful)
	fast.Source, fast.Judge = fastSrc, phaseJudge{}
	slow := metric("slow", withCount(3))
	slowSrc := phases(api.PhaseInconclusive)
	taking, release := make(chan struct{}), make(chan struct{})
	slow.Source = SourceFunc(func(ctx context.Context, at time.Time) Observation {
		close(taking)
		<-release
		return slowSrc.Measure(ctx, at)
	})
	slow.Judge = phaseJudge{}
	snapshot := stored(
		api.MetricResult{Name: "fast", Phase: api.PhaseFailed, Count: 1, Failed: 1, Message: "",
			Measurements: []api.Measurement{finished(api.PhaseFailed, time.Minute, time.Minute)}},
		api.MetricResult{Name: "slow", Phase: api.PhaseRunning, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
			Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0), inFlight(time.Minute)}},
	)
	snapshot.Phase = api.PhaseFailed // decided, not yet completed
	h := resume(t, &Plan{Metrics: []Metric{fast, slow}}, snapshot, time.Minute)
	<-taking
	// Decided but not completed: a watcher is told of the measurement
	// taken again, then of the completion.
	got := h.finishSlow(release)
	if n := len(fastSrc.times()); n != 0 {
		t.Errorf("the failed metric measured %d times", n)
	}
	if at := offsets(slowSrc.times()); fmt.Sprint(at) != fmt.Sprint([]time.Duration{time.Minute}) {
		t.Errorf("the in-flight metric measured at %v, want once, at once", at)
	}
	s := got.MetricResults[1]
	if got.Phase != api.PhaseFailed || s.Phase != api.PhaseInconclusive || s.Count != 2 || s.Inconclusive != 1 || len(s.Measurements) != 2 {
		t.Errorf("run %s, slow %s count=%d inconclusive=%d %+v; want Failed, and slow's measurement recorded once",
			got.Phase, s.Phase, s.Count, s.Inconclusive, s.Measurements)
	}
	if got.CompletedAt == nil || !got.CompletedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("completedAt %v, want %v", got.CompletedAt, t0.Add(time.Minute))
	}
}

// TestResumeMaxDuration: MaxDuration runs from the stored startedAt.
func TestResumeMaxDuration(t *testing.T) {
	snapshot := func() *api.Analysis {
		return stored(api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 9, Successful: 9, ConsecutiveSuccess: 9,
			Measurements: []api.Measurement{finished(api.PhaseSuccessful, 8*time.Minute, 8*time.Minute)}})
	}
	withMax := func(o *Options) { o.MaxDuration = 10 * time.Minute }
	const message = "analysis exceeded its maximum duration of 10m0s"

	t.Run("within it", func(t *testing.T) {
		m := metric("m", indefinite)
		src := phases(api.PhaseSuccessful)
		m.Source, m.Judge = src, phaseJudge{}
		got := resume(t, &Plan{Metrics: []Metric{m}}, snapshot(), 8*time.Minute+30*time.Second, withMax).finish()
		if at := offsets(src.times()); fmt.Sprint(at) != fmt.Sprint([]time.Duration{9 * time.Minute}) {
			t.Errorf("measured at %v, want [9m0s] and no more after 10m", at)
		}
		if got.Phase != api.PhaseError || got.Message != message || !got.CompletedAt.Equal(t0.Add(10*time.Minute)) {
			t.Errorf("got (%s, %q) at %v, want Error at 10m", got.Phase, got.Message, got.CompletedAt)
		}
		if got.MetricResults[0].Count != 10 {
			t.Errorf("count %d, want 10", got.MetricResults[0].Count)
		}
	})
	t.Run("passed while it was stopped", func(t *testing.T) {
		m := metric("m", indefinite)
		src := phases(api.PhaseSuccessful)
		m.Source, m.Judge = src, phaseJudge{}
		s := snapshot()
		s.MetricResults[0].Measurements = append(s.MetricResults[0].Measurements, inFlight(9*time.Minute))
		got := resume(t, &Plan{Metrics: []Metric{m}}, s, 11*time.Minute, withMax).finish()
		if n := len(src.times()); n != 0 {
			t.Errorf("measured %d times past the maximum duration", n)
		}
		if got.Phase != api.PhaseError || got.Message != message || !got.CompletedAt.Equal(t0.Add(11*time.Minute)) {
			t.Errorf("got (%s, %q) at %v, want Error at once", got.Phase, got.Message, got.CompletedAt)
		}
		if r := got.MetricResults[0]; r.Count != 9 || len(r.Measurements) != 1 {
			t.Errorf("result %+v, want the stored one, the in-flight measurement dropped", r)
		}
	})
}

// TestResumeComplete: an analysis that had completed is returned as it
// was, at once; nothing is measured and no event is sent again.
func TestResumeComplete(t *testing.T) {
	m := metric("m", withCount(2))
	src := phases(api.PhaseSuccessful)
	m.Source, m.Judge = src, phaseJudge{}
	snapshot := stored(api.MetricResult{Name: "m", Phase: api.PhaseFailed, Count: 1, Failed: 1, Message: "measured Failed",
		Measurements: []api.Measurement{finished(api.PhaseFailed, 0, 0)}})
	snapshot.Phase, snapshot.Message = api.PhaseFailed, `Metric "m" assessed Failed due to failed (1) > failureLimit (0)`
	snapshot.CompletedAt = after(time.Second)
	snapshot.RunSummary = api.RunSummary{Count: 1, Failed: 1}
	snapshot.Template, snapshot.Args = "tmpl", map[string]string{"a": "b"}
	want := *snapshot
	want.MetricResults = append([]api.MetricResult(nil), snapshot.MetricResults...)

	h := resume(t, &Plan{Metrics: []Metric{m}}, snapshot, time.Hour)
	select {
	case <-h.run.Done():
	default:
		t.Fatal("a completed analysis is not done at once")
	}
	if got := h.run.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	_, events, cancel := h.run.Watch()
	defer cancel()
	if ev, ok := <-events; !ok || ev.Type != api.EventCompleted || ev.Analysis.Phase != api.PhaseFailed {
		t.Errorf("watch: %+v, %v; want the completed event", ev, ok)
	}
	if n := len(src.times()); n != 0 {
		t.Errorf("measured %d times", n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) != 0 {
		t.Errorf("observer saw %+v; the completed event was sent when it completed", h.events)
	}
}

// TestResumeEvents: events go on from where the snapshot stood: the first
// is the next measurement's (here the one taken again), the last the
// completed event; the measurement dropped has no event.
func TestResumeEvents(t *testing.T) {
	m := metric("m", withCount(3))
	m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	snapshot := stored(api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
		Measurements: []api.Measurement{finished(api.PhaseSuccessful, 0, 0), inFlight(time.Minute)}})
	h := resume(t, &Plan{Metrics: []Metric{m}}, snapshot, 2*time.Minute)
	got := h.finish()
	h.mu.Lock()
	defer h.mu.Unlock()
	var seen []string
	for _, ev := range h.events {
		s := string(ev.Type)
		if ev.Measurement != nil {
			s += " " + ev.Measurement.StartedAt.Sub(t0).String() + " " + string(ev.MetricPhase)
		}
		seen = append(seen, s)
	}
	want := []string{"measurement 2m0s Running", "measurement 3m0s Successful", "completed"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", seen, want)
	}
	if last := h.events[len(h.events)-1]; last.Analysis == nil || !reflect.DeepEqual(*last.Analysis, got) {
		t.Errorf("completed event %+v, want the final state", last.Analysis)
	}
}

// TestResumeMismatch: a snapshot that does not fit the plan is refused by
// CheckResume, and a run started from it ends in Error at once, saying why.
func TestResumeMismatch(t *testing.T) {
	m := metric("m")
	src := phases(api.PhaseSuccessful)
	m.Source, m.Judge = src, phaseJudge{}
	plan := &Plan{Metrics: []Metric{m}}
	tests := []struct {
		name     string
		snapshot *api.Analysis
		want     string
	}{
		{"another metric", stored(api.MetricResult{Name: "other", Phase: api.PhasePending}),
			`metricResults[0]: the result of metric "other" where the plan has "m"`},
		{"a metric more", stored(api.MetricResult{Name: "m", Phase: api.PhasePending}, api.MetricResult{Name: "n", Phase: api.PhasePending}),
			"metricResults: 2 results for the plan's 1 metrics"},
		{"no startedAt", func() *api.Analysis {
			a := stored(api.MetricResult{Name: "m", Phase: api.PhasePending})
			a.StartedAt = nil
			return a
		}(), "startedAt: missing, and each metric's schedule is measured from it"},
		{"completedAt while Running", func() *api.Analysis {
			a := stored(api.MetricResult{Name: "m", Phase: api.PhasePending})
			a.CompletedAt = after(0)
			return a
		}(), "phase: Running, but completedAt is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := plan.CheckResume(tt.snapshot); err == nil || err.Error() != tt.want {
				t.Errorf("CheckResume: %v, want %q", err, tt.want)
			}
			h := resume(t, plan, tt.snapshot, 0)
			got := h.finish()
			if got.Phase != api.PhaseError || got.Message != "cannot resume the analysis: "+tt.want || got.CompletedAt == nil {
				t.Errorf("got (%s, %q)", got.Phase, got.Message)
			}
			h.mu.Lock()
			n := len(h.events)
			h.mu.Unlock()
			if n != 1 {
				t.Errorf("observer saw %d events, want the completed one", n)
			}
		})
	}
	if n := len(src.times()); n != 0 {
		t.Errorf("measured %d times", n)
	}
	if err := plan.CheckResume(stored(api.MetricResult{Name: "m", Phase: api.PhasePending})); err != nil {
		t.Errorf("CheckResume of a fitting snapshot: %v", err)
	}
}

// TestResumeKeepsIdentity: the id, template and arguments are the stored
// ones when the options give none.
func TestResumeKeepsIdentity(t *testing.T) {
	m := metric("m")
	m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	snapshot := stored(api.MetricResult{Name: "m", Phase: api.PhasePending})
	snapshot.ID, snapshot.Template, snapshot.Args = "stored-id", "tmpl", map[string]string{"service": "api"}
	snapshot.Webhook = &api.WebhookStatus{}
	h := startOn(t, clock.NewFake(t0), &Plan{Metrics: []Metric{m}}, func(o *Options) { o.Resume = snapshot; o.ID = "" })
	got := h.finish()
	if got.ID != "stored-id" || got.Template != "tmpl" || got.Args["service"] != "api" || got.Webhook != nil {
		t.Errorf("got id %q template %q args %v webhook %v; want the stored ones, and no webhook status (the service's)",
			got.ID, got.Template, got.Args, got.Webhook)
	}
	if got.Phase != api.PhaseSuccessful {
		t.Errorf("phase %s, want Successful", got.Phase)
	}
}

// series is one metric's data: what its n-th measurement observes, by its
// ordinal rather than its instant, so that a measurement taken later after
// a resume sees what it would have seen undisturbed. Past its end every
// measurement is Successful, so that every plan ends.
type series []Observation

func (s series) observation(n int) Observation {
	if n < len(s) {
		return s[n]
	}
	return Observation{Value: api.PhaseSuccessful, Display: fmt.Sprintf("#%d", n)}
}

// cursor is a source reading a series from an ordinal on, one measurement
// after another; the measurement of ordinal block (when not -1) waits for
// its context to end, after saying so on blocked.
type cursor struct {
	mu      sync.Mutex
	data    series
	next    int
	at      []time.Time
	block   int
	blocked chan struct{}
}

func (c *cursor) Measure(ctx context.Context, at time.Time) Observation {
	c.mu.Lock()
	n := c.next
	c.next++
	c.at = append(c.at, at)
	c.mu.Unlock()
	if n == c.block {
		c.blocked <- struct{}{}
		<-ctx.Done()
		return Observation{Err: ctx.Err()}
	}
	return c.data.observation(n)
}

func (c *cursor) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at...)
}

// randomPlan makes a plan of one to four metrics with random schedules,
// counts, limits, dry-run flags and retention, scored as Kayenta scores a
// canary now and then, and each metric's data.
func randomPlan(rng *rand.Rand) (*Plan, []series, time.Duration) {
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	metrics := make([]Metric, 1+rng.IntN(4))
	data := make([]series, len(metrics))
	for i := range metrics {
		m := metric(fmt.Sprintf("m%d", i))
		m.Interval = pick(10*time.Second, 30*time.Second, time.Minute, 90*time.Second, 5*time.Minute)
		if rng.IntN(2) == 0 {
			m.InitialDelay = pick(15*time.Second, time.Minute, 2*time.Minute, 7*time.Minute)
		}
		m.FailureLimit = int32(rng.IntN(4)) - 1
		m.InconclusiveLimit = int32(rng.IntN(3))
		m.ConsecutiveErrorLimit = []int32{0, 1, 2, 4, 4}[rng.IntN(5)]
		m.ConsecutiveSuccessLimit = []int32{0, 0, 1, 2, 3}[rng.IntN(5)]
		indefinite := rng.IntN(10) < 3 // ends by a limit
		if (m.FailureLimit < 0 || indefinite) && m.ConsecutiveSuccessLimit == 0 {
			m.ConsecutiveSuccessLimit = 1 + int32(rng.IntN(3))
		}
		if indefinite {
			m.Count = nil
		} else {
			// At least what Argo's validation asks of a count.
			m.Count = i32(max(1+int32(rng.IntN(8)), max(m.FailureLimit, 0)+m.ConsecutiveSuccessLimit, m.InconclusiveLimit))
		}
		m.DryRun = rng.IntN(5) == 0
		m.Retention = []int{0, 1, 2, 3, DefaultMeasurementRetention}[rng.IntN(5)]
		m.Judge = phaseJudge{}
		// Percentages of Error, Failed and Inconclusive measurements:
		// a metric that often goes wrong, now and then, or hardly ever.
		rates := [][3]int{{15, 8, 5}, {5, 3, 1}, {1, 1, 0}}[rng.IntN(3)]
		s := make(series, 40)
		for n := range s {
			switch p := rng.IntN(100); {
			case p < rates[0]:
				s[n] = Observation{Err: fmt.Errorf("query %d failed", n), Display: ""}
			case p < rates[0]+rates[1]:
				s[n] = Observation{Value: api.PhaseFailed, Display: fmt.Sprintf("%.3f", rng.Float64())}
			case p < rates[0]+rates[1]+rates[2]:
				s[n] = Observation{Value: api.PhaseInconclusive, Display: fmt.Sprintf("%.3f", rng.Float64())}
			default:
				s[n] = Observation{Value: api.PhaseSuccessful, Display: fmt.Sprintf("%.3f", rng.Float64())}
			}
		}
		metrics[i], data[i] = m, s
	}
	plan := &Plan{Metrics: metrics}
	if rng.IntN(4) == 0 {
		plan.Scoring = &judge.ScoreConfig{GroupWeights: map[string]float64{"a": 70, "b": 30}, Pass: 95, Marginal: 75}
		for i := range metrics {
			metrics[i].Group = []string{"a", "b"}[rng.IntN(2)]
		}
	}
	var maxDuration time.Duration
	if rng.IntN(10) < 3 {
		maxDuration = pick(5*time.Minute, 10*time.Minute, 20*time.Minute)
	}
	return plan, data, maxDuration
}

// withCursors returns a copy of plan whose metrics measure data through
// cursors starting at the given ordinals (from 0 when from is nil).
func withCursors(plan *Plan, data []series, from []int, block [2]int, blocked chan struct{}) (*Plan, []*cursor) {
	plan = plan.Copy()
	cursors := make([]*cursor, len(plan.Metrics))
	for i := range plan.Metrics {
		c := &cursor{data: data[i], block: -1, blocked: blocked}
		if from != nil {
			c.next = from[i]
		}
		if block[0] == i {
			c.block = block[1]
		}
		cursors[i] = c
		plan.Metrics[i].Source = c
	}
	return plan, cursors
}

// drive moves h's clock on until its run is done, or until the run has
// been idle stopAfter times (when not -1) or a source says it is blocked:
// it returns the run's snapshot then, and the number of steps taken.
func drive(h *harness, name string, stopAfter int, blocked <-chan struct{}) (api.Analysis, int) {
	h.t.Helper()
	for steps := 0; ; {
		select {
		case <-h.run.Done():
			return h.run.Snapshot(), steps
		case <-blocked:
			return h.run.Snapshot(), steps
		case <-h.idle:
			if steps == stopAfter {
				return h.run.Snapshot(), steps
			}
			steps++
			if !h.clk.AdvanceToNext() {
				select {
				case <-h.run.Done():
					return h.run.Snapshot(), steps
				case <-time.After(5 * time.Second):
					h.t.Fatalf("%s: run is idle with nothing scheduled", name)
				}
			}
		case <-time.After(5 * time.Second):
			h.t.Fatalf("%s: run made no progress after %d steps", name, steps)
		}
	}
}

// TestResumeEqualsUndisturbed runs random plans undisturbed, then again
// stopped at a random moment (while idle, or while a measurement is in
// flight) and resumed from the snapshot taken then (every other one through
// JSON, as a store keeps it), on the same clock and data.
//
// Resumed at the instant it stopped, the analysis ends exactly as the
// undisturbed one did: the same phases, messages, counters, measurements
// and instants. Resumed after a random downtime instead, every metric's
// measurements after the resume are taken when the rules say (the next at
// the last finishedAt + interval, at once if overdue; one that was in flight
// at once), and a plan of one metric with no maximum duration ends as the
// undisturbed one did but for its instants. (With several metrics, or a
// maximum duration, a downtime may change which metric decides the run
// first or what is measured in time, as it would in Argo.)
func TestResumeEqualsUndisturbed(t *testing.T) {
	const seeds = 1000
	var idle, blocked, completed, downtime, scored, totalSteps, measurements int
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		random, data, maxDuration := randomPlan(rng)
		metrics := random.Metrics
		if random.Scoring != nil {
			scored++
		}
		configure := func(o *Options) { o.MaxDuration = maxDuration }
		name := fmt.Sprintf("seed %d", seed)

		plan, _ := withCursors(random, data, nil, [2]int{-1, -1}, nil)
		control := startOn(t, clock.NewFake(t0), plan, configure)
		want, steps := drive(control, name+", undisturbed", -1, nil)
		undisturbedCalls := make([]int, len(metrics))
		for i := range metrics {
			undisturbedCalls[i] = len(plan.Metrics[i].Source.(*cursor).times())
		}

		// The disturbed run: stopped at a random idle moment, or while the
		// measurement of a random metric and ordinal is in flight.
		clk := clock.NewFake(t0)
		stopAfter, block := -1, [2]int{-1, -1}
		j := rng.IntN(len(metrics))
		switch k := rng.IntN(10); {
		case k == 0:
			stopAfter = steps // complete
		case k < 5 || undisturbedCalls[j] == 0:
			stopAfter = rng.IntN(steps + 1)
		default:
			block = [2]int{j, rng.IntN(undisturbedCalls[j])}
		}
		totalSteps += steps
		for _, r := range want.MetricResults {
			measurements += int(r.Count + r.Error)
		}
		blockedC := make(chan struct{}, 1)
		plan, _ = withCursors(random, data, nil, block, blockedC)
		disturbed := startOn(t, clk, plan, configure)
		snapshot, _ := drive(disturbed, name+", disturbed", stopAfter, blockedC)
		// Stopped as the service stops a run it hands over: the state
		// it leaves, but for its own end, is the analysis as it stood.
		disturbed.run.Suspend("handed over")
		select {
		case <-disturbed.run.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the disturbed run did not stop", name)
		}
		if suspended := disturbed.run.Snapshot(); snapshot.CompletedAt == nil && stopAfter >= 0 {
			if suspended.Phase != api.PhaseError || suspended.Message != "handed over" || suspended.CompletedAt == nil {
				t.Errorf("%s: suspended as %s %q, completedAt %v; want Error with its message", name, suspended.Phase, suspended.Message, suspended.CompletedAt)
			}
			suspended.Phase, suspended.Message, suspended.CompletedAt = snapshot.Phase, snapshot.Message, nil
			if !reflect.DeepEqual(suspended, snapshot) {
				t.Errorf("%s: suspended, the analysis is not as it stood:\ngot  %s\nwant %s", name, describeSnapshot(suspended), describeSnapshot(snapshot))
			}
		}
		if snapshot.Phase.Completed() != (snapshot.CompletedAt != nil) {
			t.Errorf("%s: snapshot %s with completedAt %v: a phase is completed when the run is", name, snapshot.Phase, snapshot.CompletedAt)
		}
		switch {
		case snapshot.CompletedAt != nil:
			completed++
		case stopAfter >= 0:
			idle++
		default:
			blocked++
		}

		var down time.Duration
		if rng.IntN(2) == 0 {
			down = []time.Duration{7 * time.Second, time.Minute, 3 * time.Minute, 20 * time.Minute}[rng.IntN(4)]
			downtime++
		}
		clk.Advance(down)
		resumedAt := clk.Now()
		from := make([]int, len(metrics))
		for i, r := range snapshot.MetricResults {
			from[i] = int(r.Count + r.Error) // the measurements it recorded
		}
		if seed%2 == 1 {
			// As a store keeps it.
			b, err := json.Marshal(snapshot)
			if err != nil {
				t.Fatal(err)
			}
			snapshot = api.Analysis{}
			if err := json.Unmarshal(b, &snapshot); err != nil {
				t.Fatal(err)
			}
		}
		plan, cursors := withCursors(random, data, from, [2]int{-1, -1}, nil)
		resumed := startOn(t, clk, plan, configure, func(o *Options) { o.Resume = &snapshot })
		got, _ := drive(resumed, name+", resumed", -1, nil)

		switch {
		case down == 0:
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (resumed from %s):\ngot  %s\nwant %s", name, describeSnapshot(snapshot), describe(got, true), describe(want, true))
			}
			continue
		case len(metrics) == 1 && maxDuration == 0:
			if g, w := describe(got, false), describe(want, false); g != w {
				t.Errorf("%s (resumed %s later from %s):\ngot  %s\nwant %s", name, down, describeSnapshot(snapshot), g, w)
			}
		}
		if snapshot.CompletedAt == nil {
			for i := range metrics {
				checkResumedSchedule(t, name, &metrics[i], data[i], &snapshot.MetricResults[i], snapshot.StartedAt, resumedAt, cursors[i])
			}
		}
	}
	t.Logf("%d seeds, %d measurements and %d idle moments each on average: %d resumed from an idle moment, %d with a measurement in flight, %d complete; %d after a downtime; %d scored",
		seeds, measurements/seeds, totalSteps/seeds, idle, blocked, completed, downtime, scored)
	if idle == 0 || blocked == 0 || completed == 0 || downtime == 0 || scored == 0 {
		t.Errorf("a kind of resume was never tried")
	}
}

// checkResumedSchedule checks the instants at which a resumed metric was
// measured: the first when the stored results say it is due (at once when
// overdue, or when it was in flight), each next one its interval (the error
// retry interval after an Error) after the one before, as measurements take
// no time on the fake clock.
func checkResumedSchedule(t *testing.T, name string, m *Metric, data series, stored *api.MetricResult, startedAt *time.Time, resumedAt time.Time, c *cursor) {
	t.Helper()
	gap := func(n int) time.Duration {
		if data.observation(n).Err != nil {
			return DefaultErrorRetryInterval
		}
		return m.Interval
	}
	kept := stored.Measurements
	inflight := len(kept) > 0 && kept[len(kept)-1].FinishedAt == nil
	if inflight {
		kept = kept[:len(kept)-1]
	}
	n := int(stored.Count + stored.Error)
	var due time.Time
	switch {
	case inflight:
		due = resumedAt
	case len(kept) == 0:
		due = startedAt.Add(m.InitialDelay)
	default:
		due = kept[len(kept)-1].FinishedAt.Add(gap(n - 1))
	}
	var want []time.Time
	for i := range c.times() {
		if i > 0 {
			due = want[i-1].Add(gap(n + i - 1))
		}
		want = append(want, maxTime(due, resumedAt))
	}
	if got := c.times(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %s resumed at %s, measured at %v, want %v", name, m.Name, resumedAt.Sub(t0), offsets(got), offsets(want))
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// describe writes an analysis' outcome on a line: its phase and message,
// and each metric's phase, counters and measurements (with their instants
// when withTimes).
func describe(a api.Analysis, withTimes bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q %+v %+v", a.Phase, a.Message, a.RunSummary, a.DryRunSummary)
	if a.Score != nil {
		fmt.Fprintf(&b, " score %v %s", a.Score.Score, a.Score.Verdict)
	}
	for _, r := range a.MetricResults {
		fmt.Fprintf(&b, " | %s %s %q c%d s%d f%d i%d e%d ce%d cs%d [", r.Name, r.Phase, r.Message,
			r.Count, r.Successful, r.Failed, r.Inconclusive, r.Error, r.ConsecutiveError, r.ConsecutiveSuccess)
		for _, ms := range r.Measurements {
			fmt.Fprintf(&b, " %s:%s:%q", ms.Phase, ms.Value, ms.Message)
			if withTimes && ms.StartedAt != nil {
				fmt.Fprintf(&b, "@%s", ms.StartedAt.Sub(t0))
			}
		}
		b.WriteString(" ]")
	}
	if withTimes && a.CompletedAt != nil {
		fmt.Fprintf(&b, " completed @%s", a.CompletedAt.Sub(t0))
	}
	return b.String()
}

func describeSnapshot(a api.Analysis) string {
	return describe(a, true)
}

// TestResumeBounds: what a run keeps of a snapshot is held to the bounds of
// what it keeps of its own measurements: the metric's retention, and the
// bytes of a value and a message.
func TestResumeBounds(t *testing.T) {
	m := metric("m", withCount(30))
	m.Retention = 3
	m.Source, m.Judge = phases(api.PhaseSuccessful), phaseJudge{}
	r := api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 20, Successful: 20, ConsecutiveSuccess: 20}
	for i := range 20 {
		ms := finished(api.PhaseSuccessful, time.Duration(i)*time.Minute, time.Duration(i)*time.Minute)
		ms.Value = fmt.Sprint(i)
		r.Measurements = append(r.Measurements, ms)
	}
	r.Measurements[19].Value = strings.Repeat("v", 10*MaxValueBytes)
	r.Measurements[19].Message = strings.Repeat("m", 10*MaxMessageBytes)
	h := resume(t, &Plan{Metrics: []Metric{m}}, stored(r), 19*time.Minute)
	got := h.run.Snapshot().MetricResults[0]
	if len(got.Measurements) != 3 || got.Measurements[0].Value != "17" {
		t.Errorf("kept %d measurements from %q, want the newest 3", len(got.Measurements), got.Measurements[0].Value)
	}
	if last := got.Measurements[2]; len(last.Value) > MaxValueBytes || len(last.Message) > MaxMessageBytes || !strings.HasSuffix(last.Value, valueCut) {
		t.Errorf("kept a value of %d bytes and a message of %d", len(last.Value), len(last.Message))
	}
	h.run.Abort("done")
	h.finish()
}
