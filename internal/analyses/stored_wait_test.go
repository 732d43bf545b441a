package analyses

import (
	"context"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/store"
)

// heldFinal is a store that holds the commit of an analysis' final state
// until release is closed.
type heldFinal struct {
	store.Store
	release chan struct{}
}

func (h *heldFinal) Commit(ctx context.Context, l store.Lease, m store.Mutation) error {
	if m.State != nil && m.State.CompletedAt != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Store.Commit(ctx, l, m)
}

// TestAwaitStored: once a run is done, AwaitStored returns when the store
// holds its final state, so that an answer with the verdict (?wait=true)
// is the one every replica reads; and it returns when its context ends,
// the final state still held back.
func TestAwaitStored(t *testing.T) {
	mem := store.NewMemory(store.Options{})
	t.Cleanup(mem.Close)
	held := &heldFinal{Store: mem, release: make(chan struct{})}
	a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 10, MaxFinished: 10, Retention: time.Hour, Replica: "r", Store: held})
	ctx := context.Background()
	for _, release := range []bool{false, true} {
		run, err := a.Start(plan(t, 1), StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		<-run.Done()
		if !release {
			// Held back: a caller that hangs up stops waiting.
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			run.AwaitStored(cctx)
			if st, err := mem.Get(ctx, run.ID()); err != nil || st.CompletedAt != nil {
				t.Fatalf("the final state was stored while the store held it back: %+v, %v", st, err)
			}
			continue
		}
		go func() {
			time.Sleep(20 * time.Millisecond)
			close(held.release)
		}()
		run.AwaitStored(ctx)
		st, err := mem.Get(ctx, run.ID())
		if err != nil || st.CompletedAt == nil {
			t.Fatalf("AwaitStored returned before the store held the final state: %+v, %v", st, err)
		}
	}
}
