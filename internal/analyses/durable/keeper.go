package durable

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/store"
)

// The leases of a replica. A Keeper holds the writers of the runs a
// replica runs on a store, and their leases: its renew loop extends them
// every LeaseTTL/3 and stops the runs whose lease another replica took; in
// between, it claims the expired leases of other replicas every
// claimInterval and resumes their analyses (adopt.go); at shutdown it
// stops the runs here without ending their analyses and hands their leases
// over (HandOver), for other replicas to claim at once.

// Bounds of the leases' upkeep.
const (
	// claimInterval is how often, at most, a replica on a store looks
	// for analyses whose lease has expired (their replica died): an
	// analysis is adopted at most this long after its lease expires, that
	// is at most LeaseTTL + claimInterval after its replica died. A look
	// is one indexed query.
	claimInterval = time.Second
	// deleteInterval is how often a replica removes from the store the
	// analyses finished longer than their retention ago.
	deleteInterval = time.Minute
)

// HandOverMessage ends a run here that another replica resumes.
const HandOverMessage = "canaryd stopped here; another replica resumes the analysis"

// KeeperOptions configure a Keeper.
type KeeperOptions struct {
	// Store keeps the analyses.
	Store store.Store
	// Owner is this process' name as the owner of leases: unique to the
	// process, so that a restarted replica renews none of the leases of
	// its earlier run, which other replicas adopt.
	Owner string
	// LeaseTTL is the store's lease length: the leases are renewed every
	// third of it. store.DefaultLeaseTTL when 0.
	LeaseTTL time.Duration
	// Retention is how long a finished analysis is kept in the store.
	Retention time.Duration
	// Clock tells the time of the writes and of the retention; the wall
	// clock when nil.
	Clock clock.Clock
	// Logger receives the lines of the writers and of the leases; Nop
	// when nil.
	Logger *zap.Logger
	// Host runs the analyses claimed from other replicas (Host); none is
	// claimed when nil.
	Host Host
	// StopTimeout is how long a run stopped to be handed over is waited
	// for at most once the shutdown's context is done, with StoreTimeout
	// for its last writes.
	StopTimeout time.Duration
	// OnLeaseLost is called each time a run stops here because another
	// replica claimed its lease; none when nil.
	OnLeaseLost func()
}

// Keeper keeps the runs of a replica in a store: their writers and their
// leases. It is safe for concurrent use.
type Keeper struct {
	opts KeeperOptions
	st   store.Store
	log  *zap.Logger
	ttl  time.Duration

	mu      sync.Mutex
	writers map[string]*Writer
	// lastDelete is when the renew loop last removed expired analyses.
	lastDelete time.Time

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// NewKeeper starts the renew loop of the leases of opts.Owner; Close
// ends it.
func NewKeeper(opts KeeperOptions) *Keeper {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	k := &Keeper{opts: opts, st: opts.Store, log: opts.Logger, ttl: cmp.Or(opts.LeaseTTL, store.DefaultLeaseTTL),
		writers: map[string]*Writer{}, stop: make(chan struct{}), done: make(chan struct{})}
	go k.renewLoop()
	return k
}

// Owner is this process' name as the owner of leases.
func (k *Keeper) Owner() string { return k.opts.Owner }

// Create stores a new analysis before it starts, with this replica's
// lease, and returns the writer of its run (Start starts it).
func (k *Keeper) Create(ctx context.Context, n store.NewAnalysis, log *zap.Logger) (*Writer, error) {
	n.Owner = k.opts.Owner
	l, err := k.st.Create(ctx, n)
	if err != nil {
		return nil, err
	}
	return newWriter(k, l, log), nil
}

// Start begins writing run with w, which Create or a claim made: w is
// one of the keeper's until it has written all it will.
func (k *Keeper) Start(w *Writer, run Run) {
	k.mu.Lock()
	k.writers[run.ID()] = w
	k.mu.Unlock()
	w.start(run)
	go func() {
		w.loop()
		k.mu.Lock()
		delete(k.writers, run.ID())
		k.mu.Unlock()
	}()
}

// snapshot returns the writers at hand.
func (k *Keeper) snapshot() []*Writer {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*Writer, 0, len(k.writers))
	for _, w := range k.writers {
		out = append(out, w)
	}
	return out
}

// Pending counts the measurements the writers have yet to write, for
// canaryd_store_measurements_pending.
func (k *Keeper) Pending() int {
	n := 0
	for _, w := range k.snapshot() {
		n += w.pendingCount()
	}
	return n
}

// renewLoop renews this replica's leases every LeaseTTL/3 until Close,
// and stops the runs whose lease was not renewed; in between, it claims
// the expired leases of other replicas every claimInterval (every
// LeaseTTL/3 when that is shorter).
func (k *Keeper) renewLoop() {
	defer close(k.done)
	t := time.NewTicker(k.ttl / 3)
	defer t.Stop()
	c := time.NewTicker(min(claimInterval, k.ttl/3))
	defer c.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-c.C:
			k.claim()
			continue
		case <-t.C:
		}
		k.renew()
		k.claim()
		k.deleteExpired()
	}
}

// renew extends this replica's leases, and stops the runs whose lease
// another replica took.
func (k *Keeper) renew() {
	// The writers before the renewal: one created since holds a lease
	// the renewal may not have seen.
	k.mu.Lock()
	writers := make(map[string]*Writer, len(k.writers))
	for id, w := range k.writers {
		writers[id] = w
	}
	k.mu.Unlock()
	leases, err := k.st.Renew(context.Background(), k.opts.Owner)
	if err != nil {
		k.log.Warn("could not renew this replica's leases", zap.Error(err))
		return
	}
	held := make(map[string]store.Lease, len(leases))
	for _, l := range leases {
		held[l.ID] = l
	}
	for id, w := range writers {
		if l, ok := held[id]; ok {
			w.renewed(l)
			if l.Terminate {
				w.terminate()
			}
			continue
		}
		select {
		case <-w.done:
			// Its final state is written: the lease is the store's.
		default:
			if k.leaseTaken(w) {
				w.loseLease()
			}
		}
	}
}

// leaseTaken says whether the lease of a writer that a renewal did not
// return was taken by another replica. A renewal leaves out the analyses
// that have completed and owe nothing too: the state a writer stores may
// show the end before the writer has written all that led to it.
func (k *Keeper) leaseTaken(w *Writer) bool {
	lease := w.currentLease()
	st, err := k.st.Get(context.Background(), lease.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		// Asked again at the next renewal.
		return false
	}
	return st.Lease.Token != lease.Token
}

// deleteExpired removes the analyses finished longer ago than Retention,
// at most every deleteInterval.
func (k *Keeper) deleteExpired() {
	now := k.opts.Clock.Now()
	if now.Sub(k.lastDelete) < deleteInterval {
		return
	}
	k.lastDelete = now
	ctx := context.Background()
	if _, err := k.st.DeleteCompleted(ctx, now.Add(-k.opts.Retention)); err != nil {
		k.log.Warn("could not remove the analyses past their retention from the store", zap.Error(err))
	}
}

// releaseLease hands a lease back to the store, for another replica.
func (k *Keeper) releaseLease(l store.Lease) {
	ctx := context.Background()
	if err := k.st.Release(ctx, l); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		k.log.Warn("could not hand a lease back", zap.String("analysis_id", l.ID), zap.Error(err))
	}
}

// HandOver stops every run here without ending its analysis, writes what
// they measured, and hands their leases over (Release), so that other
// replicas claim them at once: a shutdown's. Each run's measurement in
// flight is dropped, to be taken again by the replica that resumes it. It
// returns how many were handed over; a run that does not stop, or whose
// writes the store does not take, in KeeperOptions.StopTimeout + StoreTimeout after ctx
// is done is not, and another replica takes it when its lease expires.
func (k *Keeper) HandOver(ctx context.Context) int {
	var writers []*Writer
	for _, w := range k.snapshot() {
		// The running ones: a completed one's writer waits for its
		// webhook, which the service's shutdown sees to.
		if w.handOver() {
			writers = append(writers, w)
		}
	}
	for _, w := range writers {
		<-w.ready
		w.run.Suspend(HandOverMessage)
	}
	var leases []store.Lease
	for _, w := range writers {
		select {
		case <-w.done:
		case <-ctx.Done():
			w.stop()
			// A run that does not stop, or a store that does not
			// answer, holds the shutdown this long at most.
			t := time.NewTimer(k.opts.StopTimeout + StoreTimeout)
			select {
			case <-w.done:
			case <-t.C:
				w.log.Error("analysis not handed over: it did not stop, or its writes were not taken, in time; another replica takes it when its lease expires")
			}
			t.Stop()
		}
		if w.handedOver() {
			leases = append(leases, w.currentLease())
		}
	}
	if len(leases) == 0 {
		return 0
	}
	rctx := context.Background()
	if err := k.st.Release(rctx, leases...); err != nil {
		k.log.Warn("could not hand the analyses over at once; other replicas take them when their leases expire", zap.Error(err), zap.Int("analyses", len(leases)))
		return 0
	}
	k.log.Info("analyses handed over to the other replicas", zap.Int("analyses", len(leases)))
	return len(leases)
}

// Flush waits until every run's writer has written its final state, or
// ctx is done; then the writers give up retrying, and are waited for
// StoreTimeout at most.
func (k *Keeper) Flush(ctx context.Context) {
	writers := k.snapshot()
	for _, w := range writers {
		select {
		case <-w.done:
		case <-ctx.Done():
			w.stop()
		}
	}
	last := time.NewTimer(StoreTimeout)
	defer last.Stop()
	for _, w := range writers {
		select {
		case <-w.done:
		case <-last.C:
			return
		}
	}
}

// Close stops the renewal of this replica's leases and hands over those
// it still holds (analyses whose webhook deliveries were abandoned at
// shutdown), for another replica to finish at once.
func (k *Keeper) Close() {
	k.closeOnce.Do(func() {
		close(k.stop)
		<-k.done
		ctx := context.Background()
		leases, err := k.st.Renew(ctx, k.opts.Owner)
		if err == nil && len(leases) > 0 {
			err = k.st.Release(ctx, leases...)
		}
		if err != nil {
			k.log.Warn("could not hand over the leases left at shutdown; other replicas take them when they expire", zap.Error(err))
		}
	})
}
