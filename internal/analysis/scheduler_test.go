package analysis

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

// schedulingPath pushes runs on s's heap, moves them, pops those due and
// hands one due measurement of each to a worker's queue, which it then
// drains: the scheduler's part of every measurement, without the
// measurement.
func schedulingPath(s *Scheduler, g *generation, runs []*Run, batch *[dispatchBatch]*Run, jobs []job) {
	// As a live heap is: each run pushed after those due before it, then
	// moved (a measurement that returned), all due by now.
	now := s.clock.Now().UnixNano()
	for i, r := range runs {
		s.set(r, now-2*int64(len(runs)-i)) // push
	}
	for i, r := range runs {
		s.set(r, now-2*int64(len(runs)-i)+1) // fix
	}
	for {
		n, more, _, _ := s.due(g, batch) // pop
		for _, r := range batch[:n] {
			jobs = append(jobs[:0], job{run: r, metric: 0, due: now})
			s.hand(g, jobs)
			<-g.queue
		}
		if !more {
			return
		}
	}
}

// newPathScheduler returns a scheduler on the wall clock with a generation
// whose goroutines are not started, and runs that are not started either:
// for the scheduling path alone.
func newPathScheduler(n int) (*Scheduler, *generation, []*Run) {
	s := NewScheduler(clock.Real{}, 1)
	g := &generation{timer: s.clock.NewTimer(time.Hour), queue: make(chan job, 1), quit: make(chan struct{})}
	s.gen = g
	runs := make([]*Run, n)
	for i := range runs {
		runs[i] = &Run{sched: s, heapIndex: -1}
	}
	s.heap = make([]entry, 0, n)
	return s, g, runs
}

func TestSchedulingPathAllocatesNothing(t *testing.T) {
	s, g, runs := newPathScheduler(100)
	defer g.timer.Stop()
	var batch [dispatchBatch]*Run
	jobs := make([]job, 0, 1)
	allocs := testing.AllocsPerRun(20, func() { schedulingPath(s, g, runs, &batch, jobs) })
	if allocs != 0 {
		t.Errorf("the scheduling path allocates %v times per round of %d runs, want 0", allocs, len(runs))
	}
	if len(s.heap) != 0 {
		t.Errorf("%d runs left on the heap, want every one popped", len(s.heap))
	}
}

func TestSchedulerHeapOrder(t *testing.T) {
	s, g, runs := newPathScheduler(50)
	defer g.timer.Stop()
	base := time.Now().Add(-time.Hour).UnixNano()
	for i, r := range runs {
		s.set(r, base+int64((i*37)%50))
	}
	// Move some, take some off.
	s.set(runs[3], base+100)
	s.set(runs[7], never)
	s.set(runs[9], base-1)
	var got []int64
	for len(s.heap) > 0 {
		for i, e := range s.heap {
			if int(e.run.heapIndex) != i {
				t.Fatalf("entry %d holds heap index %d", i, e.run.heapIndex)
			}
		}
		s.mu.Lock()
		at := s.heap[0].at
		s.popLocked()
		s.mu.Unlock()
		got = append(got, at)
	}
	if len(got) != len(runs)-1 {
		t.Fatalf("popped %d runs, want %d", len(got), len(runs)-1)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("popped out of order: %v", got)
		}
	}
	if got[0] != base-1 || got[len(got)-1] != base+100 {
		t.Errorf("first %d, last %d; want the moved runs first and last", got[0]-base, got[len(got)-1]-base)
	}
}

func BenchmarkScheduler(b *testing.B) {
	const n = 1000
	s, g, runs := newPathScheduler(n)
	defer g.timer.Stop()
	var batch [dispatchBatch]*Run
	jobs := make([]job, 0, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		schedulingPath(s, g, runs, &batch, jobs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/measurement")
}

// gate is a source that blocks every measurement until it is opened, and
// counts the measurements of each analysis and the instants they were
// taken at.
type gate struct {
	open    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	at      map[string][]time.Time
}

type gateSource struct {
	g  *gate
	id string
}

func (s gateSource) Measure(ctx context.Context, at time.Time) Observation {
	s.g.mu.Lock()
	s.g.at[s.id] = append(s.g.at[s.id], at)
	s.g.mu.Unlock()
	s.g.entered <- struct{}{}
	select {
	case <-s.g.open:
	case <-ctx.Done():
		return Observation{Err: ctx.Err()}
	}
	return Observation{Value: api.PhaseSuccessful}
}

// waitFor waits until cond holds, failing the test when it does not after
// a long while (a stuck scheduler, not a slow one).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); {
		if time.Since(start) > time.Minute {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSchedulerOverloaded runs more analyses than a pool of two workers can
// measure at once while the workers are stuck: the due measurements wait
// and start late, each is taken once and counted as late, and none is
// dropped.
func TestSchedulerOverloaded(t *testing.T) {
	const analyses, count = 20, 3
	clk := clock.NewFake(t0)
	sched := NewScheduler(clk, 2)
	g := &gate{open: make(chan struct{}), entered: make(chan struct{}, analyses*count), at: map[string][]time.Time{}}
	var (
		mu       sync.Mutex
		lateness []time.Duration
		measured atomic.Int32
	)
	runs := make([]*Run, analyses)
	for i := range runs {
		id := fmt.Sprintf("a%02d", i)
		plan := &Plan{Metrics: []Metric{metric("m", withCount(count), func(m *Metric) { m.Source = gateSource{g: g, id: id}; m.Judge = phaseJudge{} })}}
		runs[i] = Start(context.Background(), plan, Options{ID: id, Scheduler: sched,
			Lateness: func(d time.Duration) { mu.Lock(); lateness = append(lateness, d); mu.Unlock() },
			Observer: func(ev api.Event) {
				if ev.Type == api.EventMeasurement {
					measured.Add(1)
				}
			},
		})
	}
	// Both workers are stuck in a measurement; the others are due and
	// wait.
	<-g.entered
	<-g.entered
	clk.Advance(5 * time.Second)
	snapshot := runs[analyses-1].Snapshot()
	if snapshot.Phase != api.PhaseRunning || snapshot.CompletedAt != nil {
		t.Errorf("while the workers are stuck, an analysis reads %s, want Running", snapshot.Phase)
	}
	close(g.open)
	for round := int32(1); round <= count; round++ {
		waitFor(t, fmt.Sprintf("round %d's measurements", round), func() bool { return measured.Load() >= round*analyses })
		clk.Advance(time.Minute)
	}
	for _, r := range runs {
		<-r.Done()
		if a := r.Snapshot(); a.Phase != api.PhaseSuccessful || a.MetricResults[0].Count != count {
			t.Errorf("%s: %s after %d measurements, want Successful after %d", a.ID, a.Phase, a.MetricResults[0].Count, count)
		}
		if got := len(g.at[r.ID()]); got != count {
			t.Errorf("%s measured %d times, want %d: each due measurement once", r.ID(), got, count)
		}
	}
	late := 0
	for _, d := range lateness {
		if d >= time.Second {
			late++
			if d != 5*time.Second {
				t.Errorf("a late measurement started %v after it was due, want the 5s the workers were stuck", d)
			}
		}
	}
	if len(lateness) != analyses*count || late != analyses-2 {
		t.Errorf("%d lateness values, %d late; want %d, of which %d late (all but the two taken at once)", len(lateness), late, analyses*count, analyses-2)
	}
}

// TestSchedulerObserverOneAtATime checks that a run's observer is called
// one event at a time, in order, though its metrics are measured on
// several workers at once.
func TestSchedulerObserverOneAtATime(t *testing.T) {
	var in, overlaps atomic.Int32
	var events []string
	metrics := make([]Metric, 8)
	for i := range metrics {
		metrics[i] = metric(fmt.Sprintf("m%d", i), func(m *Metric) { m.Source = phases(api.PhaseSuccessful); m.Judge = phaseJudge{} })
	}
	sched := NewScheduler(clock.Real{}, len(metrics))
	for range 20 {
		events = events[:0]
		run := Start(context.Background(), &Plan{Metrics: metrics}, Options{Scheduler: sched, Observer: func(ev api.Event) {
			if in.Add(1) > 1 {
				overlaps.Add(1)
			}
			events = append(events, string(ev.Type))
			runtime.Gosched()
			in.Add(-1)
		}})
		<-run.Done()
		if n := len(events); n != len(metrics)+1 || events[n-1] != string(api.EventCompleted) {
			t.Fatalf("events %v, want %d measurements, then completed", events, len(metrics))
		}
	}
	if overlaps.Load() != 0 {
		t.Errorf("the observer was called %d times while a call for the same run was under way", overlaps.Load())
	}
}

// TestSchedulerStops runs many analyses on a small pool on the wall clock
// and stops some of them every way while their measurements are due or in
// flight: every run ends, once, with the phase its stop gives, and what
// its observer was told matches its final state.
func TestSchedulerStops(t *testing.T) {
	const runs = 120
	sched := NewScheduler(clock.Real{}, 3)
	type watched struct {
		run          *Run
		measurements atomic.Int32
		completed    atomic.Int32
	}
	all := make([]*watched, runs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range all {
		w := &watched{}
		runCtx := context.Background()
		if i%5 == 4 {
			runCtx = ctx
		}
		m := metric("m", func(m *Metric) {
			m.Interval, m.Count = time.Millisecond, i32(1000)
			m.Source = SourceFunc(func(ctx context.Context, _ time.Time) Observation {
				runtime.Gosched()
				return Observation{Value: api.PhaseSuccessful}
			})
			m.Judge = phaseJudge{}
		})
		w.run = Start(runCtx, &Plan{Metrics: []Metric{m, m}}, Options{ID: fmt.Sprint(i), Scheduler: sched,
			Observer: func(ev api.Event) {
				switch ev.Type {
				case api.EventMeasurement:
					w.measurements.Add(1)
				case api.EventCompleted:
					w.completed.Add(1)
				}
			}})
		all[i] = w
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	for i, w := range all {
		switch i % 5 {
		case 0:
			w.run.Terminate()
		case 1:
			w.run.Abort("stopped")
		case 2:
			w.run.Suspend("handed over")
		case 3:
			w.run.Terminate()
			w.run.Abort("too late: the terminate came first")
		}
	}
	for i, w := range all {
		<-w.run.Done()
		a := w.run.Snapshot()
		want := api.PhaseSuccessful
		if i%5 == 1 || i%5 == 2 {
			want = api.PhaseError
		}
		if a.Phase != want || a.CompletedAt == nil {
			t.Errorf("run %d: %s (%s), want %s", i, a.Phase, a.Message, want)
		}
		taken := int32(0)
		for _, res := range a.MetricResults {
			taken += res.Count + res.Error
			for _, ms := range res.Measurements {
				if ms.FinishedAt == nil {
					t.Errorf("run %d: a measurement in flight kept after the run ended: %+v", i, ms)
				}
			}
		}
		if got := w.measurements.Load(); got != taken || w.completed.Load() != 1 {
			t.Errorf("run %d: observer told of %d measurements and %d completions; the run counts %d measurements and completed once",
				i, got, w.completed.Load(), taken)
		}
	}
}
