package analysis

import (
	"math"
	"sync"
	"time"

	"github.com/canaryd/canaryd/internal/clock"
)

// DefaultWorkers is how many measurements a Scheduler takes at once when
// it is given no other number, and the size of the package's default
// scheduler (Options.Scheduler nil, on the wall clock). A worker is idle
// while its source waits on the network, so the pool is sized for
// queries in flight, not for cores: 256 queries of 50 ms each make 5,000
// measurements a second, 300,000 a minute.
const DefaultWorkers = 256

// Scheduler runs the analyses started on it (Options.Scheduler): one heap
// of timers, keyed by the instant each run next needs attention, driven
// by one timer of its clock, and a bounded pool of workers that take the
// measurements. There is no goroutine per analysis nor per measurement.
//
// A run's due measurements are handed to the workers through a queue of
// as many places as there are workers. When every worker is busy, a due
// measurement waits for one to free: it starts late, and its lateness
// (the time from when it was due to when its query was sent) is given to
// Options.Lateness; it is never dropped and never taken twice.
//
// The scheduler's goroutines, the dispatcher that pops the heap and the
// workers, run while it has runs: they start with its first and end
// with its last, so an idle scheduler holds none.
type Scheduler struct {
	clock   clock.Clock
	workers int

	mu   sync.Mutex
	heap []entry
	// armed is when the generation's timer fires, in Unix nanoseconds;
	// never when it is stopped or has fired.
	armed int64
	live  int // runs started and not finished
	gen   *generation
}

// entry is one run in the heap: at, in Unix nanoseconds, is when it next
// needs attention (a measurement due, its deadline, or now: a stop).
type entry struct {
	at  int64
	run *Run
}

// gone is the heap index of a run that has left its scheduler.
const gone = -2

// never is an entry's instant when nothing is due; urgent is a stopped
// run's, before any other.
const (
	never  int64 = math.MaxInt64
	urgent int64 = math.MinInt64
)

// generation is the scheduler's goroutines while it has runs: a later
// generation has its own timer, queue and quit, so that the goroutines of
// one that is ending cannot take the next one's work.
type generation struct {
	timer clock.Timer
	queue chan job
	quit  chan struct{}
}

// job is a due measurement on its way to a worker: metric of run, due at
// (Unix nanoseconds).
type job struct {
	run    *Run
	metric int
	due    int64
}

// NewScheduler returns a scheduler on clk (the wall clock when nil) with
// the given number of workers (DefaultWorkers when not positive). Runs
// started on it take their time from clk.
func NewScheduler(clk clock.Clock, workers int) *Scheduler {
	if clk == nil {
		clk = clock.Real{}
	}
	if workers <= 0 {
		workers = DefaultWorkers
	}
	return &Scheduler{clock: clk, workers: workers, armed: never}
}

// defaultScheduler runs the analyses started on the wall clock with no
// scheduler of their own; its goroutines start with its first run.
var defaultScheduler = NewScheduler(clock.Real{}, DefaultWorkers)

// add counts a run in, starting the scheduler's goroutines if it had none.
func (s *Scheduler) add(r *Run) {
	r.heapIndex = -1
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live++
	if s.gen != nil {
		return
	}
	g := &generation{
		timer: s.clock.NewTimer(time.Hour),
		queue: make(chan job, s.workers),
		quit:  make(chan struct{}),
	}
	g.timer.Stop()
	s.armed = never
	s.gen = g
	// They end when the scheduler's last run finishes (remove).
	go s.dispatch(g)
	for range s.workers {
		go s.work(g)
	}
}

// remove takes a finished run off the heap and counts it out, ending the
// scheduler's goroutines with its last run.
func (s *Scheduler) remove(r *Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.heapIndex >= 0 {
		s.deleteLocked(int(r.heapIndex))
	}
	r.heapIndex = gone
	s.live--
	if s.live > 0 || s.gen == nil {
		return
	}
	s.gen.timer.Stop()
	close(s.gen.quit)
	s.gen = nil
	s.armed = never
}

// set makes at (Unix nanoseconds; never for no instant) the next instant
// run r needs attention, moving its entry, and arms the timer when the
// heap's first instant changed.
func (s *Scheduler) set(r *Run, at int64) {
	s.mu.Lock()
	s.setLocked(r, at)
	s.mu.Unlock()
}

func (s *Scheduler) setLocked(r *Run, at int64) {
	switch i := int(r.heapIndex); {
	case i == gone:
		return // finished: a stop asked for as it finished
	case at == never && i >= 0:
		s.deleteLocked(i)
	case at == never:
		return
	case i >= 0:
		s.heap[i].at = at
		if !s.up(i) {
			s.down(i)
		}
	default:
		s.pushLocked(entry{at: at, run: r})
	}
	s.armLocked()
}

// armLocked sets the timer to the heap's first instant, unless it is set
// to it already.
func (s *Scheduler) armLocked() {
	if s.gen == nil {
		return
	}
	if len(s.heap) == 0 {
		if s.armed != never {
			s.gen.timer.Stop()
			s.armed = never
		}
		return
	}
	at := s.heap[0].at
	if at == s.armed {
		return
	}
	s.armed = at
	d := time.Duration(0)
	if at != urgent {
		d = time.Duration(at - s.clock.Now().UnixNano())
	}
	s.gen.timer.Reset(d)
}

// pushLocked adds e to the heap.
func (s *Scheduler) pushLocked(e entry) {
	s.heap = append(s.heap, e)
	i := len(s.heap) - 1
	e.run.heapIndex = int32(i)
	s.up(i)
}

// popLocked takes the heap's first entry off and returns its run.
func (s *Scheduler) popLocked() *Run {
	r := s.heap[0].run
	s.deleteLocked(0)
	return r
}

// deleteLocked takes entry i off the heap.
func (s *Scheduler) deleteLocked(i int) {
	last := len(s.heap) - 1
	s.heap[i].run.heapIndex = -1
	if i != last {
		s.heap[i] = s.heap[last]
		s.heap[i].run.heapIndex = int32(i)
	}
	s.heap[last] = entry{}
	s.heap = s.heap[:last]
	if i != last && !s.up(i) {
		s.down(i)
	}
}

// up moves entry i towards the root while it is earlier than its parent,
// and reports whether it moved.
func (s *Scheduler) up(i int) bool {
	h := s.heap
	moved := false
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[p], h[i] = h[i], h[p]
		h[p].run.heapIndex, h[i].run.heapIndex = int32(p), int32(i)
		i, moved = p, true
	}
	return moved
}

// down moves entry i towards the leaves while a child is earlier.
func (s *Scheduler) down(i int) {
	h := s.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].at < h[c].at {
			c++
		}
		if h[i].at <= h[c].at {
			return
		}
		h[i], h[c] = h[c], h[i]
		h[i].run.heapIndex, h[c].run.heapIndex = int32(i), int32(c)
		i = c
	}
}

// dispatchBatch is how many due runs the dispatcher takes off the heap
// under one hold of its lock.
const dispatchBatch = 64

// dispatch is the generation's dispatcher: when the timer fires, it takes
// the runs that are due off the heap, lets each decide what it does now
// (Run.attend), and hands their due measurements to the workers, waiting
// for room in the queue when every worker is busy.
func (s *Scheduler) dispatch(g *generation) {
	var due [dispatchBatch]*Run
	jobs := make([]job, 0, 8)
	for {
		select {
		case <-g.timer.C():
		case <-g.quit:
			return
		}
		for {
			n, more, now, ok := s.due(g, &due)
			if !ok {
				return
			}
			for _, r := range due[:n] {
				jobs = r.attend(now, jobs[:0])
				if !s.hand(g, jobs) {
					return
				}
			}
			clear(due[:n])
			if !more {
				break
			}
		}
	}
}

// due takes up to len(batch) runs due at the clock's now off the heap into
// batch, and arms the timer for the rest; more reports that others are
// due already, ok false that the generation has ended.
func (s *Scheduler) due(g *generation, batch *[dispatchBatch]*Run) (n int, more bool, now time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != g {
		return 0, false, now, false
	}
	// The timer has fired (or a stale value was read): armed anew below.
	s.armed = never
	now = s.clock.Now()
	t := now.UnixNano()
	for n < len(batch) && len(s.heap) > 0 && s.heap[0].at <= t {
		batch[n] = s.popLocked()
		n++
	}
	more = len(s.heap) > 0 && s.heap[0].at <= t
	if !more {
		s.armLocked()
	}
	return n, more, now, true
}

// hand gives jobs to the workers, waiting while the queue is full; false
// when the generation ended meanwhile.
func (s *Scheduler) hand(g *generation, jobs []job) bool {
	for _, j := range jobs {
		select {
		case g.queue <- j:
		case <-g.quit:
			return false
		}
	}
	return true
}

// work is one worker: it takes the due measurements, one at a time.
func (s *Scheduler) work(g *generation) {
	for {
		select {
		case j := <-g.queue:
			j.run.take(j)
		case <-g.quit:
			return
		}
	}
}
