package analysis

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

// Options configure one run.
type Options struct {
	// ID identifies the analysis in its resource and events.
	ID string
	// Clock is the engine's time; the wall clock when nil. A run started
	// on a Scheduler takes the scheduler's clock instead.
	Clock clock.Clock
	// Scheduler runs the analysis: its timer and its workers. When nil,
	// a run on the wall clock shares the package's default scheduler
	// (DefaultWorkers), and a run on another clock (a test's fake one)
	// gets one of its own, with a worker per metric.
	Scheduler *Scheduler
	// Lateness, when set, is given each measurement's lateness: the time
	// from when it was due to when its source was asked, which grows when
	// the scheduler's workers cannot keep up. It is called from the
	// scheduler's workers, for many runs at once, and must not block.
	Lateness func(time.Duration)
	// ErrorRetryInterval is the wait after an Error measurement; Argo's
	// 10 s when zero.
	ErrorRetryInterval time.Duration
	// MaxDuration bounds the whole analysis: when it passes, the run ends
	// with phase Error. Zero means no bound.
	MaxDuration time.Duration
	// Observer, when set, is called with every event of the run, in
	// order, one call at a time: from the goroutines of the run's
	// Scheduler (its dispatcher or the worker that took the measurement),
	// never from Start's caller nor from Terminate's. It must not block:
	// while it runs, the scheduler's goroutine serves no other run.
	Observer func(api.Event)
	// Template and Args are copied into the resource for the reader.
	Template string
	Args     map[string]string
	// Kind and Series are copied into the resource too: what made the
	// analysis (a round, a gate; "" for an analysis started as one) and
	// the series of calls it is one of (api.Analysis.Series).
	Kind   string
	Series string
	// Resume, when set, continues the analysis it holds (a Snapshot of an
	// earlier run of the same plan, as a store kept it) instead of
	// starting anew, as Argo Rollouts' controller continues an
	// AnalysisRun from its status after a restart; the package
	// documentation gives the rules. Plan.CheckResume says whether a
	// snapshot fits the plan; Start ends a run whose snapshot does not
	// fit in Error at once, saying why. ID, Template and Args, when
	// empty, are taken from it.
	Resume *api.Analysis

	// onIdle is called when the run is about to wait for its clock with
	// no measurement in flight, so that a fake clock can be moved on deterministically:
	// backtests run in virtual time with it, and so do the engine's tests.
	onIdle func()
}

// Run is one analysis in progress. All methods are safe for concurrent use.
type Run struct {
	plan *Plan
	// opts are the Options a run needs after Start: the status holds the
	// rest (Template, Args, Kind, Series), and the clock and scheduler
	// have fields of their own.
	opts  runOptions
	clock clock.Clock

	done chan struct{}

	// sched runs the run; heapIndex is the run's place in its heap (-1
	// when it is not there, gone once it finished), under sched.mu.
	sched     *Scheduler
	heapIndex int32

	// The run's course, under drive: the scheduler's dispatcher and its
	// workers take it in turn (attend, take), so the run is driven by one
	// goroutine at a time and its observer is called in order.
	drive sync.Mutex
	course

	mu        sync.Mutex
	status    api.Analysis
	results   []*api.MetricResult
	subs      map[int]chan api.Event
	nextSubID int
	// request is the first stop asked for (Terminate, Abort, Suspend,
	// the end of Start's context); asked says there is one.
	asked   bool
	request control
}

// runOptions are the Options a run keeps.
type runOptions struct {
	ID                 string
	Lateness           func(time.Duration)
	ErrorRetryInterval time.Duration
	MaxDuration        time.Duration
	Observer           func(api.Event)
	onIdle             func()
}

// kept are the options of o that a run keeps.
func (o *Options) kept() runOptions {
	return runOptions{ID: o.ID, Lateness: o.Lateness, ErrorRetryInterval: o.ErrorRetryInterval,
		MaxDuration: o.MaxDuration, Observer: o.Observer, onIdle: o.onIdle}
}

type control struct {
	abort   bool
	suspend bool
	message string
}

// subscriberBuffer is how many events a slow watcher may fall behind before
// it is cut off (it still sees the final state through Done and Snapshot).
const subscriberBuffer = 256

// Start begins an analysis of plan and returns at once. The run goes on
// until its metrics complete, it is terminated, or ctx is cancelled (which
// terminates it with Argo's terminate semantics). It runs on
// opts.Scheduler: Start makes no goroutine of its own.
func Start(ctx context.Context, plan *Plan, opts Options) *Run {
	sched := opts.Scheduler
	if sched == nil {
		sched = schedulerFor(opts.Clock, len(plan.Metrics))
	}
	opts.Clock = sched.clock
	// plan may be shared by other runs (a server keeps the plans it
	// compiled): a metric that needs its count filled in is given it in a
	// copy.
	plan = plan.Counted()
	if opts.ErrorRetryInterval <= 0 {
		opts.ErrorRetryInterval = DefaultErrorRetryInterval
	}
	r := &Run{
		plan:    plan,
		opts:    opts.kept(),
		clock:   opts.Clock,
		results: make([]*api.MetricResult, len(plan.Metrics)),
		sched:   sched,
	}
	if a := opts.Resume; a != nil && a.CompletedAt != nil && plan.CheckResume(a) == nil {
		// Already complete: held as it was. Its completed event was sent
		// by the run that completed it, and is not sent again.
		r.done = closed
		r.startedAt = r.restore(a, &opts, nil)
		return r
	}
	r.done = make(chan struct{})
	now := r.clock.Now()
	r.status = api.Analysis{
		ID:        opts.ID,
		Phase:     api.PhaseRunning,
		StartedAt: &now,
		Template:  opts.Template,
		Args:      opts.Args,
		Kind:      opts.Kind,
		Series:    opts.Series,
	}
	r.states = make([]metricState, len(plan.Metrics))
	r.startedAt = now
	if opts.Resume != nil {
		if err := plan.CheckResume(opts.Resume); err != nil {
			// Ends at once, on the scheduler, which tells the observer.
			r.failed = &RunAssessment{Phase: api.PhaseError, Message: "cannot resume the analysis: " + err.Error()}
		} else {
			// Copied: the caller's snapshot is not kept.
			r.startedAt = r.restore(opts.Resume, &opts, r.states)
		}
	}
	r.enter(ctx)
	return r
}

// closed is the Done of the runs that are complete from their start: a
// completed Resume.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// schedulerFor is the scheduler of a run on clk that was given none: the
// package's default on the wall clock, one of its own on another clock.
func schedulerFor(clk clock.Clock, metrics int) *Scheduler {
	if clk == nil {
		return defaultScheduler
	}
	if _, ok := clk.(clock.Real); ok {
		return defaultScheduler
	}
	return NewScheduler(clk, max(metrics, 1))
}

// CheckResume reports whether the analysis a can be resumed with plan p
// (Options.Resume): a result for each of p's metrics, named as they are and
// in their order, as Snapshot lists them, and the instant it started. A
// completed analysis needs only its results to fit.
func (p *Plan) CheckResume(a *api.Analysis) error {
	if len(a.MetricResults) != len(p.Metrics) {
		return fmt.Errorf("metricResults: %d results for the plan's %d metrics", len(a.MetricResults), len(p.Metrics))
	}
	for i := range p.Metrics {
		if got, want := a.MetricResults[i].Name, p.Metrics[i].Name; got != want {
			return fmt.Errorf("metricResults[%d]: the result of metric %q where the plan has %q", i, got, want)
		}
	}
	if a.CompletedAt != nil {
		if !a.Phase.Completed() {
			return fmt.Errorf("phase: %s, but completedAt is set", a.Phase)
		}
		return nil
	}
	if a.StartedAt == nil {
		return fmt.Errorf("startedAt: missing, and each metric's schedule is measured from it")
	}
	return nil
}

// restore takes over the analysis a, which CheckResume accepted, and fills
// in each metric's schedule; it returns the instant the analysis started.
// The caller's snapshot is copied, not kept; opts are Start's, whose ID,
// Template, Args, Kind and Series, when set, win over the snapshot's.
func (r *Run) restore(a *api.Analysis, opts *Options, states []metricState) time.Time {
	st := *a
	st.MetricResults = nil
	st.Webhook = nil // the service's, not the engine's
	if opts.ID != "" {
		st.ID = opts.ID
	}
	if opts.Template != "" {
		st.Template = opts.Template
	}
	if opts.Args != nil {
		st.Args = opts.Args
	}
	if opts.Kind != "" {
		st.Kind = opts.Kind
	}
	if opts.Series != "" {
		st.Series = opts.Series
	}
	complete := a.CompletedAt != nil
	if !complete {
		// Running until it completes, as Snapshot shows it; the first
		// assessment says more.
		st.Phase, st.Message = api.PhaseRunning, ""
	}
	if st.StartedAt != nil || st.CompletedAt != nil {
		// Both instants in one allocation.
		times := new([2]time.Time)
		if st.StartedAt != nil {
			times[0] = *st.StartedAt
			st.StartedAt = &times[0]
		}
		if st.CompletedAt != nil {
			times[1] = *st.CompletedAt
			st.CompletedAt = &times[1]
		}
	}
	r.status = st
	for i := range a.MetricResults {
		stored := &a.MetricResults[i]
		kept := stored.Measurements
		if !complete {
			// A measurement that was in flight measured nothing that was
			// kept: it is taken again (see loop), and counted once.
			if n := len(kept); n > 0 && (kept[n-1].FinishedAt == nil || !kept[n-1].Phase.Completed()) {
				kept = kept[:n-1]
				states[i].retake = true
			}
			if len(kept) == 0 && stored.Count == 0 && stored.Error == 0 {
				// Not measured yet: its initialDelay runs from the stored
				// startedAt, and a retake is its first measurement.
				continue
			}
		}
		res := new(api.MetricResult)
		*res = *stored
		if m := &r.plan.Metrics[i]; m.Retention > 0 && len(kept) > m.Retention {
			kept = kept[len(kept)-m.Retention:]
		}
		res.Measurements = append([]api.Measurement(nil), kept...)
		for j := range res.Measurements {
			// Held to the bounds of the measurements the engine takes,
			// whatever the store gave back.
			ms := &res.Measurements[j]
			ms.Value, ms.Message = capText(ms.Value, MaxValueBytes), capText(ms.Message, MaxMessageBytes)
		}
		if !complete && !res.Phase.Completed() {
			res.Phase = api.PhaseRunning
		}
		r.results[i] = res
		if complete {
			continue
		}
		states[i].measured = true
		if n := len(kept); n > 0 {
			last := kept[n-1]
			states[i].lastPhase = last.Phase
			switch {
			case last.FinishedAt != nil:
				states[i].lastFinished = *last.FinishedAt
			case last.StartedAt != nil:
				states[i].lastFinished = *last.StartedAt
			}
		}
		// With no measurement kept (none are, by a retention of 0 in the
		// store), the next one is overdue: it is taken at once.
	}
	return *r.status.StartedAt
}

// Terminate stops the run as Argo's `terminate: true` does: no new
// measurements; metrics whose limits did not trip end Successful; the message
// is "Run Terminated". It does not wait; use Done.
func (r *Run) Terminate() { r.send(control{}) }

// Abort stops the run with phase Error and the given message, for when the
// service cannot finish it (shutdown, deadline).
func (r *Run) Abort(message string) { r.send(control{abort: true, message: message}) }

// Suspend stops the run as Abort does, but leaves every metric as it
// stood: one still measuring stays Running, with no limit assessed as at
// a termination, so that the snapshot is the analysis as it goes on, for
// another process to resume (Options.Resume) once the run's own phase,
// message and completedAt are taken off. The measurement in flight is
// dropped, to be taken again.
func (r *Run) Suspend(message string) {
	r.send(control{abort: true, suspend: true, message: message})
}

func (r *Run) send(c control) {
	r.mu.Lock()
	if r.asked || r.status.CompletedAt != nil {
		// A stop is already asked for, and the first one wins; or the
		// run has finished.
		r.mu.Unlock()
		return
	}
	r.asked, r.request = true, c
	r.mu.Unlock()
	// The measurements in flight end now, whatever the scheduler is
	// doing; the run is stopped when it attends to it, at once.
	r.cancel()
	r.sched.set(r, urgent)
}

// Done is closed when the run has finished and its final state is set.
func (r *Run) Done() <-chan struct{} { return r.done }

// ID returns the analysis id.
func (r *Run) ID() string { return r.opts.ID }

// Plan returns the plan the run measures, its metrics' limits and compiled
// conditions (an HTML report shades its charts with them). It may be
// shared with other runs: the caller must not change it.
func (r *Run) Plan() *Plan { return r.plan }

// Snapshot returns a copy of the analysis as it stands. Its phase is
// completed only once the run has completed, with CompletedAt set: a run
// that a metric has decided stays Running while the measurements taken
// beside that metric's finish.
func (r *Run) Snapshot() api.Analysis {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

// Watch returns the analysis as it stands and a channel of the events that
// follow, which is closed after the completed event (at once, with the
// completed event, if the run has already finished). A watcher that falls
// more than a few hundred events behind is cut off: its channel closes
// early. cancel releases the subscription.
func (r *Run) Watch() (snapshot api.Analysis, events <-chan api.Event, cancel func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	snapshot = r.snapshotLocked()
	ch := make(chan api.Event, subscriberBuffer)
	// Finished, not merely decided: a run that a metric has decided still
	// records the measurements in flight beside it before it completes.
	if snapshot.CompletedAt != nil {
		final := snapshot
		ch <- api.Event{Type: api.EventCompleted, AnalysisID: r.opts.ID, Analysis: &final}
		close(ch)
		return snapshot, ch, func() {}
	}
	id := r.nextSubID
	r.nextSubID++
	if r.subs == nil {
		// Made for the first watcher: most runs have none.
		r.subs = make(map[int]chan api.Event, 1)
	}
	r.subs[id] = ch
	return snapshot, ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if c, ok := r.subs[id]; ok {
			delete(r.subs, id)
			close(c)
		}
	}
}

func (r *Run) snapshotLocked() api.Analysis {
	a := r.status
	a.MetricResults = make([]api.MetricResult, 0, len(r.results))
	for i, res := range r.results {
		if res == nil {
			// Not started yet (initialDelay): shown as Pending, as a
			// reader expects every metric to be listed.
			m := &r.plan.Metrics[i]
			a.MetricResults = append(a.MetricResults, api.MetricResult{
				Name: m.Name, Phase: api.PhasePending, DryRun: m.DryRun,
				Metadata: m.Metadata, Measurements: []api.Measurement{},
			})
			continue
		}
		c := *res
		c.Measurements = append([]api.Measurement(nil), res.Measurements...)
		if c.Measurements == nil {
			c.Measurements = []api.Measurement{}
		}
		a.MetricResults = append(a.MetricResults, c)
	}
	return a
}

// outcome is a finished measurement on its way back to the loop.
type outcome struct {
	metric      int
	measurement api.Measurement
}

// metricState is the loop's private schedule of one metric.
type metricState struct {
	inFlight bool
	// retake marks a resumed metric whose measurement was in flight in
	// the snapshot: it is taken again as soon as the run resumes.
	retake       bool
	lastFinished time.Time
	lastPhase    api.Phase
	measured     bool
}

// finished records in the schedule that the metric's measurement m ended.
func (s *metricState) finished(m api.Measurement) {
	s.inFlight = false
	s.measured = true
	s.lastFinished = *m.FinishedAt
	s.lastPhase = m.Phase
}

// due returns when metric i should next be measured, and false when it
// should not be (in flight, completed, or its count reached).
func (r *Run) due(i int, s *metricState, startedAt time.Time) (time.Time, bool) {
	m := &r.plan.Metrics[i]
	if s.inFlight || !r.measurable(i) {
		return time.Time{}, false
	}
	if !s.measured {
		return startedAt.Add(m.InitialDelay), true
	}
	if s.lastPhase == api.PhaseError {
		return s.lastFinished.Add(r.opts.ErrorRetryInterval), true
	}
	if m.Interval > 0 {
		return s.lastFinished.Add(m.Interval), true
	}
	return time.Time{}, false
}

// schedule is the Schedule of metric i's next measurement in a run that
// started at startedAt.
func (r *Run) schedule(i int, startedAt time.Time) Schedule {
	m := &r.plan.Metrics[i]
	s := Schedule{Start: startedAt, Interval: m.Interval}
	if m.Count != nil {
		r.mu.Lock()
		var count int32
		if res := r.results[i]; res != nil {
			count = res.Count
		}
		r.mu.Unlock()
		s.Last = count+1 >= *m.Count
	}
	return s
}

// measurable reports whether metric i takes more measurements: it has not
// completed, nor reached its count.
func (r *Run) measurable(i int) bool {
	m := &r.plan.Metrics[i]
	res := r.results[i]
	if res == nil {
		return true
	}
	return !res.Phase.Completed() && (m.Count == nil || res.Count < *m.Count)
}

// measure takes one measurement of metric i and judges it.
func (r *Run) measure(ctx context.Context, i int) api.Measurement {
	return r.measureDue(ctx, i, time.Time{})
}

// measureDue is measure of a measurement that was due at due: its
// lateness, when due is set, goes to Options.Lateness as its source is
// asked.
func (r *Run) measureDue(ctx context.Context, i int, due time.Time) api.Measurement {
	// Both instants in one allocation: a measurement is kept with both.
	times := new([2]time.Time)
	times[0] = r.clock.Now()
	if r.opts.Lateness != nil && !due.IsZero() {
		r.opts.Lateness(max(times[0].Sub(due), 0))
	}
	return measureAt(ctx, &r.plan.Metrics[i], r.clock, times)
}

// measureAt takes metric m's measurement from times[0], when it starts,
// and judges it; times[1] is set to when its source returned, and the
// measurement's instants point into times.
func measureAt(ctx context.Context, m *Metric, clk clock.Clock, times *[2]time.Time) api.Measurement {
	obs := m.Source.Measure(ctx, times[0])
	times[1] = clk.Now()
	ms := api.Measurement{
		StartedAt:  &times[0],
		FinishedAt: &times[1],
		Value:      capText(obs.Display, MaxValueBytes),
		Metadata:   obs.Metadata,
	}
	if obs.Err != nil {
		ms.Phase = api.PhaseError
		ms.Message = capText(obs.Err.Error(), MaxMessageBytes)
		return ms
	}
	if m.NoData != "" && IsNoData(obs.Value) {
		ms.Phase = m.NoData
		ms.Message = fmt.Sprintf("no data: the query returned %s (noData: %s)", describeNoData(obs.Value), m.NoData)
		return ms
	}
	var phase api.Phase
	var err error
	if j, ok := m.Judge.(ContextJudge); ok {
		phase, err = j.JudgeContext(ctx, obs.Value)
	} else {
		phase, err = m.Judge.Judge(obs.Value)
	}
	ms.Phase = phase
	if err != nil {
		ms.Phase = api.PhaseError
		ms.Message = capText(err.Error(), MaxMessageBytes)
	}
	return ms
}

// valueCut ends a value or message cut to its bound.
const valueCut = "… (cut)"

// capText cuts a text longer than max bytes, at a character's boundary,
// and says so.
func capText(v string, max int) string {
	if len(v) <= max {
		return v
	}
	end := max - len(valueCut)
	for end > 0 && !utf8.RuneStart(v[end]) {
		end--
	}
	return v[:end] + valueCut
}

// begin shows metric i's measurement as in progress, as Argo shows a
// measurement that has not finished: a Running measurement, last in the
// list, which keeps the metric Running until it is recorded.
func (r *Run) begin(i int, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.resultLocked(i)
	started := at
	r.appendLocked(i, res, api.Measurement{Phase: api.PhaseRunning, StartedAt: &started})
}

// appendLocked adds ms to res, metric i's result. The list grows as
// measurements come, doubling up to all that the metric keeps (its
// retention, or its count when that is smaller, and one in progress):
// over the life of a run of ten measurements kept, that is about 450
// bytes on average, where a list made for all ten at the first takes 720
// from the start. r.mu must be held.
func (r *Run) appendLocked(i int, res *api.MetricResult, ms api.Measurement) {
	if n := len(res.Measurements); n == cap(res.Measurements) {
		grown := make([]api.Measurement, n, r.listCap(i, n))
		copy(grown, res.Measurements)
		res.Measurements = grown
	}
	res.Measurements = append(res.Measurements, ms)
}

// listCap is the capacity of metric i's list when it grows from n
// measurements: twice n, but no more than the metric keeps while n is
// below that (only Errors, which do not count, take it further).
func (r *Run) listCap(i, n int) int {
	c := max(2*n, 1)
	if m := &r.plan.Metrics[i]; m.Retention > 0 {
		size := m.Retention + 1
		if m.Count != nil && int(*m.Count) < size {
			size = max(int(*m.Count), 1)
		}
		if n < size {
			c = min(c, size)
		}
	}
	return c
}

// resultLocked returns metric i's result, made on its first measurement.
// r.mu must be held.
func (r *Run) resultLocked(i int) *api.MetricResult {
	if res := r.results[i]; res != nil {
		return res
	}
	res := r.newResult(i)
	r.results[i] = res
	return res
}

// newResult makes a result for metric i.
func (r *Run) newResult(i int) *api.MetricResult {
	m := &r.plan.Metrics[i]
	return &api.MetricResult{Name: m.Name, Phase: api.PhaseRunning, DryRun: m.DryRun, Metadata: m.Metadata}
}

// dropUnfinished removes the measurements that were cancelled before they
// finished: they measured nothing.
func (r *Run) dropUnfinished() (dropped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, res := range r.results {
		if res == nil {
			continue
		}
		if n := len(res.Measurements); n > 0 && !res.Measurements[n-1].Phase.Completed() {
			dropped = true
			res.Measurements = res.Measurements[:n-1]
			if len(res.Measurements) == 0 && res.Count == 0 && res.Error == 0 {
				// Its first measurement was cut short: it never started.
				r.results[i] = nil
			}
		}
	}
	return dropped
}

// record applies a finished measurement to its metric's counters, as Argo's
// runMeasurements does, and keeps the newest measurements only.
func (r *Run) record(o outcome) {
	m := &r.plan.Metrics[o.metric]
	r.mu.Lock()
	res := r.resultLocked(o.metric)
	switch o.measurement.Phase {
	case api.PhaseSuccessful:
		res.Successful++
		res.Count++
		res.ConsecutiveError = 0
		res.ConsecutiveSuccess++
	case api.PhaseFailed:
		res.Failed++
		res.Count++
		res.ConsecutiveError = 0
		res.ConsecutiveSuccess = 0
	case api.PhaseInconclusive:
		res.Inconclusive++
		res.Count++
		res.ConsecutiveError = 0
		res.ConsecutiveSuccess = 0
	case api.PhaseError:
		res.Error++
		res.ConsecutiveError++
		res.ConsecutiveSuccess = 0
	}
	if n := len(res.Measurements); n > 0 && !res.Measurements[n-1].Phase.Completed() {
		res.Measurements[n-1] = o.measurement
	} else {
		r.appendLocked(o.metric, res, o.measurement)
	}
	if keep := m.Retention; keep > 0 && len(res.Measurements) > keep {
		// In place: the list is the run's own (snapshots and events copy
		// what they show), so its array is reused for the run's life
		// rather than copied anew for every measurement.
		n := copy(res.Measurements, res.Measurements[len(res.Measurements)-keep:])
		clear(res.Measurements[n:])
		res.Measurements = res.Measurements[:n]
	}
	// The metric's phase after this measurement, for the event.
	// A phase that decides the run is shown when the run completes (see
	// Snapshot), as assess does.
	if assessment := r.assessPlan(false); !assessment.Phase.Completed() {
		r.status.Phase = assessment.Phase
		r.status.RunSummary = assessment.RunSummary
		r.status.DryRunSummary = assessment.DryRunSummary
	}
	ms := o.measurement
	ev := api.Event{
		Type:        api.EventMeasurement,
		AnalysisID:  r.opts.ID,
		Metric:      m.Name,
		Measurement: &ms,
		MetricPhase: res.Phase,
	}
	r.publishLocked(ev)
	r.mu.Unlock()
	if r.opts.Observer != nil {
		r.opts.Observer(ev)
	}
}

// assessPlan assesses the run by Argo's rules, or by the score when the
// plan declares scoring. r.mu must be held.
func (r *Run) assessPlan(terminated bool) RunAssessment {
	if r.plan.Scoring != nil {
		return AssessScored(r.plan, r.results, terminated)
	}
	return AssessRun(r.plan.Metrics, r.results, terminated)
}

// assess re-evaluates every metric and the run.
func (r *Run) assess(terminated bool) RunAssessment {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.assessPlan(terminated)
	if !a.Phase.Completed() {
		r.status.Phase = a.Phase
		r.status.RunSummary = a.RunSummary
		r.status.DryRunSummary = a.DryRunSummary
	}
	return a
}

// stop ends the run with phase Error: the service could not finish it
// (Abort), or goes on with it elsewhere (Suspend: the metrics are left as
// they were last assessed).
// Its measurements have been cancelled and have all returned.
func (r *Run) stop(c control) {
	_ = r.dropUnfinished()
	r.mu.Lock()
	var a RunAssessment
	if c.suspend {
		a.RunSummary, a.DryRunSummary = r.status.RunSummary, r.status.DryRunSummary
	} else {
		a = r.assessPlan(true)
	}
	r.mu.Unlock()
	a.Phase = api.PhaseError
	a.Message = c.message
	a.Score = nil // the run did not finish: there is nothing to score
	r.finish(a)
}

// finish sets the final state and tells every watcher, then closes Done
// and leaves the scheduler. r.drive must be held.
func (r *Run) finish(a RunAssessment) {
	r.ended = true
	now := r.clock.Now()
	r.mu.Lock()
	r.status.Phase = a.Phase
	r.status.Message = a.Message
	r.status.RunSummary = a.RunSummary
	r.status.DryRunSummary = a.DryRunSummary
	r.status.Score = a.Score
	r.status.CompletedAt = &now
	final := r.snapshotLocked()
	ev := api.Event{Type: api.EventCompleted, AnalysisID: r.opts.ID, Analysis: &final}
	r.publishLocked(ev)
	for id, c := range r.subs {
		close(c)
		delete(r.subs, id)
	}
	r.mu.Unlock()
	if r.opts.Observer != nil {
		r.opts.Observer(ev)
	}
	r.leave()
}

func (r *Run) publishLocked(ev api.Event) {
	for id, c := range r.subs {
		select {
		case c <- ev:
		default:
			// Too far behind: cut it off rather than stall the analysis.
			close(c)
			delete(r.subs, id)
		}
	}
}

// IsNoData reports whether a measured value holds no data: nil, an empty
// list, or nothing but NaN (what a ratio of two zero rates gives). Argo
// hands such a value to the conditions, where `result[0]` is an Error and
// `all(result, …)` is vacuously true; a metric's noData policy decides it
// instead.
func IsNoData(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case float64:
		return math.IsNaN(x)
	case []float64:
		return allNaN(x)
	}
	// A named list of numbers (condition.Doubles, InfluxDB's).
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Float64 {
		return allNaN(rv.Convert(reflect.TypeFor[[]float64]()).Interface().([]float64))
	}
	return false
}

func allNaN(fs []float64) bool {
	for _, f := range fs {
		if !math.IsNaN(f) {
			return false
		}
	}
	return true
}

func describeNoData(v any) string {
	switch x := v.(type) {
	case float64:
		return "NaN"
	case []float64:
		if len(x) > 0 {
			return "only NaN"
		}
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.Len() > 0 {
		return "only NaN"
	}
	return "an empty result"
}
