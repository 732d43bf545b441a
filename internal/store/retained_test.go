package store_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/store"
)

// sized is a finished analysis of size bytes, counted in r's total while
// it is held.
type sized struct {
	r       *store.Retained
	size    int64
	evicted int
}

func (s *sized) Evicted() {
	s.evicted++
	s.r.Bytes().Add(-s.size)
}

func hold(r *store.Retained, id string, size int64) *sized {
	s := &sized{r: r, size: size}
	r.Bytes().Add(size)
	r.Keep(id, s, api.PhaseSuccessful)
	return s
}

// TestRetainedInMemory: a memory store that is not shared is where its
// process holds its analyses, one Retained; any other store gets a new one.
func TestRetainedInMemory(t *testing.T) {
	o := store.RetainOptions{MaxFinished: 1, MaxBytes: 1 << 20, Retention: time.Hour}
	mem := store.NewMemory(store.Options{})
	first, second := store.RetainedIn(mem, o), store.RetainedIn(mem, o)
	if first != second {
		t.Error("a memory store holds two Retained")
	}
	shared := store.NewMemory(store.Options{Shared: true})
	first, second = store.RetainedIn(shared, o), store.RetainedIn(shared, o)
	if first == second {
		t.Error("a shared store's processes share one Retained")
	}
}

// TestRetainedEvicts: finished analyses are evicted oldest first beyond
// MaxFinished, past their retention, and while the byte total is over
// MaxBytes, each once, but none younger than MinRetention: then Room
// refuses one more, naming the bound.
func TestRetainedEvicts(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	r := store.NewRetained(store.RetainOptions{MaxFinished: 2, MaxBytes: 1000, Retention: time.Hour, MinRetention: time.Minute, Clock: clk})
	a := hold(r, "a", 100)
	r.Bytes().Add(1000)
	if r.Full() {
		t.Error("Full below MaxFinished: Room's answer depends on the bytes then")
	}
	r.Bytes().Add(-1000)
	b := hold(r, "b", 100)
	if err := r.Room(); !errors.Is(err, store.ErrFinishedFull) {
		t.Errorf("Room with MaxFinished held, none a minute old: %v, want ErrFinishedFull", err)
	}
	if !r.Full() {
		t.Error("not Full with MaxFinished held, none a minute old")
	}
	clk.Advance(2 * time.Minute)
	if r.Full() {
		t.Error("Full once the oldest may be evicted")
	}
	if err := r.Room(); err != nil {
		t.Errorf("Room once the oldest may be evicted: %v", err)
	}
	c := hold(r, "c", 100)
	if _, ok := r.Get("a"); ok || a.evicted != 1 {
		t.Errorf("the oldest beyond MaxFinished: held %v, evicted %d times; want evicted once", ok, a.evicted)
	}
	if got := r.Bytes().Load(); got != 200 {
		t.Errorf("byte total %d, want 200", got)
	}
	// Over MaxBytes: the finished at least MinRetention old go, the
	// younger stay and the next is refused.
	r.Bytes().Add(1000)
	if !r.Over() {
		t.Error("not Over at 1200 bytes of 1000")
	}
	clk.Advance(30 * time.Second)
	d := hold(r, "d", 0)
	if err := r.Room(); !errors.Is(err, store.ErrRetainedFull) {
		t.Errorf("Room over MaxBytes: %v, want ErrRetainedFull", err)
	}
	if !r.Full() {
		t.Error("not Full with MaxFinished held, the oldest 30s old")
	}
	// b finished 2m30s ago, c 30s and d now.
	if b.evicted != 1 || c.evicted != 0 || d.evicted != 0 || r.Len() != 2 {
		t.Errorf("evicted b %d, c %d, d %d times, %d held; want b once, c and d held", b.evicted, c.evicted, d.evicted, r.Len())
	}
	r.Bytes().Add(-1000)
	clk.Advance(time.Hour)
	if _, ok := r.Get("d"); ok || c.evicted != 1 || d.evicted != 1 || r.Bytes().Load() != 0 {
		t.Errorf("past their retention: d held %v, c evicted %d, d %d times, %d bytes left", ok, c.evicted, d.evicted, r.Bytes().Load())
	}
}

// TestRetainedLetsTheEvictedGo checks that an analysis evicted is held
// by nothing of the Retained that held it, while thousands come and go.
func TestRetainedLetsTheEvictedGo(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	r := store.NewRetained(store.RetainOptions{MaxFinished: 10, MaxBytes: 1 << 40, Retention: time.Hour, MinRetention: time.Second, Clock: clk})
	var evicted []weak.Pointer[sized]
	for i := range 5000 {
		s := hold(r, fmt.Sprint(i), 1)
		if i < 4990 {
			evicted = append(evicted, weak.Make(s))
		}
		clk.Advance(time.Second)
	}
	if r.Len() != 10 {
		t.Fatalf("%d held, want 10", r.Len())
	}
	runtime.GC()
	for i, w := range evicted {
		if w.Value() != nil {
			t.Fatalf("analysis %d, evicted, is still held", i)
		}
	}
	for i := 4990; i < 5000; i++ {
		if _, ok := r.Get(fmt.Sprint(i)); !ok {
			t.Errorf("analysis %d, among the ten youngest, is not held", i)
		}
	}
}
