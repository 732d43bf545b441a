package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

// Retained results.
//
// What a process holds of its analyses in memory is bounded in bytes as
// well as in number. Each analysis held, running or finished, counts its
// size in one byte total (Retained.Bytes), kept up as it measures.
// Finished ones are held for their retention, and evicted oldest first
// when the total is over MaxBytes or they are more than MaxFinished; but
// never one finished less than MinRetention ago: a new analysis is
// refused instead (Room), so that no caller can evict another's result
// before it has had the time to read it.
//
// A memory store (memory:) is where they are held: RetainedIn answers its
// own. With a shared store (postgres), which keeps every analysis, the
// process holds those it ran in a Retained of its own.

// Errors of Retained.Room when nothing held can be evicted.
var (
	// ErrRetainedFull: the results held are at their bound in bytes, and
	// every finished analysis is younger than MinRetention.
	ErrRetainedFull = errors.New("the results held are at their limit in bytes")
	// ErrFinishedFull: MaxFinished finished analyses are held, every one
	// younger than MinRetention.
	ErrFinishedFull = errors.New("the finished analyses held are at their limit")
)

// RetainOptions bound what a Retained holds.
type RetainOptions struct {
	// MaxFinished bounds the finished analyses held; MaxBytes the byte
	// total of those held, running and finished.
	MaxFinished int
	MaxBytes    int64
	// Retention is how long a finished analysis is held; MinRetention
	// how long at least, whatever the bounds.
	Retention, MinRetention time.Duration
	// Clock tells when an analysis finished; the wall clock when nil.
	Clock clock.Clock
}

// Held is a finished analysis held by reference.
type Held interface {
	// Evicted is called once, when it is dropped: it takes its size off
	// the byte total.
	Evicted()
}

// Retained holds finished analyses for their retention, and the byte
// total of the analyses held. Its methods are safe for concurrent use.
type Retained struct {
	opts  RetainOptions
	bytes atomic.Int64

	mu       sync.Mutex
	finished []heldAt // oldest completion first
	byID     map[string]Held
}

type heldAt struct {
	id    string
	held  Held
	at    time.Time
	phase api.Phase
}

// NewRetained returns an empty Retained bounded by o.
func NewRetained(o RetainOptions) *Retained {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Retained{opts: o, byID: map[string]Held{}}
}

// RetainedIn is where the analyses of a process that keeps them in st are
// held: the memory store's own when st is one that is not shared, and
// otherwise a new Retained. o is the first caller's.
func RetainedIn(st Store, o RetainOptions) *Retained {
	if m, ok := st.(*memoryStore); ok && !m.Shared() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.retained == nil {
			m.retained = NewRetained(o)
		}
		return m.retained
	}
	return NewRetained(o)
}

// Bytes is the byte total of the analyses held, running and finished:
// each one adds its size, and takes it off once evicted.
func (r *Retained) Bytes() *atomic.Int64 { return &r.bytes }

// Over says whether the analyses held take more than MaxBytes.
func (r *Retained) Over() bool { return r.bytes.Load() > r.opts.MaxBytes }

// Keep holds h, the analysis id that has just finished with phase, and
// evicts what it must.
func (r *Retained) Keep(id string, h Held, phase api.Phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Clock.Now()
	r.finished = append(r.finished, heldAt{id: id, held: h, at: now, phase: phase})
	r.byID[id] = h
	r.pruneAt(now)
}

// Get returns the finished analysis id, held within its retention.
func (r *Retained) Get(id string) (Held, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked()
	h, ok := r.byID[id]
	return h, ok
}

// Len is how many finished analyses are held.
func (r *Retained) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked()
	return len(r.finished)
}

// Room says whether one more analysis may be held, after what may be is
// evicted: ErrRetainedFull or ErrFinishedFull when none can be.
func (r *Retained) Room() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Clock.Now()
	r.pruneAt(now)
	if r.Over() {
		return ErrRetainedFull
	}
	if len(r.finished) >= r.opts.MaxFinished && now.Sub(r.finished[0].at) < r.opts.MinRetention {
		// One more would make them more, with none to evict.
		return ErrFinishedFull
	}
	return nil
}

// Full reports whether Room says no whatever the analysis to be held
// adds to the byte total: MaxFinished finished analyses are held, and the
// oldest of them, finished less than MinRetention and Retention ago, can
// be evicted for none. It evicts nothing, as Room would not.
func (r *Retained) Full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.finished) == 0 || len(r.finished) < r.opts.MaxFinished {
		return false
	}
	age := r.opts.Clock.Now().Sub(r.finished[0].at)
	return age < r.opts.MinRetention && age < r.opts.Retention
}

// Prune evicts the finished analyses past their retention, and the oldest
// while they are more than MaxFinished or the total is over MaxBytes.
func (r *Retained) Prune() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked()
}

// Each calls fn with every finished analysis held, oldest first; fn must
// not call r.
func (r *Retained) Each(fn func(h Held, phase api.Phase)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked()
	for _, f := range r.finished {
		fn(f.held, f.phase)
	}
}

// pruneLocked drops finished analyses past their retention, and the oldest
// while they are more than MaxFinished or the analyses held take more than
// MaxBytes; but none finished less than MinRetention ago.
func (r *Retained) pruneLocked() { r.pruneAt(r.opts.Clock.Now()) }

// pruneAt is pruneLocked at now.
func (r *Retained) pruneAt(now time.Time) {
	drop := 0
	for drop < len(r.finished) {
		f := r.finished[drop]
		age := now.Sub(f.at)
		over := len(r.finished)-drop > r.opts.MaxFinished || r.Over()
		if age < r.opts.Retention && !(over && age >= r.opts.MinRetention) {
			// In the order they finished: the ones after this are
			// younger still.
			break
		}
		delete(r.byID, f.id)
		f.held.Evicted()
		drop++
	}
	if drop > 0 {
		// Resliced, not shifted: moving every younger one down a place
		// at each eviction made keeping an analysis cost in proportion to
		// those held (5 µs at a thousand). The evicted ones' places are
		// cleared, so that nothing keeps them, and append moves the
		// younger ones to a new array once the old one is used up.
		clear(r.finished[:drop])
		r.finished = r.finished[drop:]
	}
}
