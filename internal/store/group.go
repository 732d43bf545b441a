package store

import (
	"context"
	"sync"
	"time"
)

// Bounds of group commit (Grouped).
const (
	// DefaultCommitInterval is how long a batch of writes gathers, from
	// its first write, before it is committed, when
	// GroupOptions.Interval is 0. A replica commits at most one batch per
	// interval, and a write waits for it at most this long, plus the
	// batch before it, plus its own transaction.
	DefaultCommitInterval = 10 * time.Millisecond
	// DefaultMaxBatchRows bounds the rows one batch writes (each write
	// counts its owed events, measurements and events done, plus its
	// analysis' row), when GroupOptions.MaxRows is 0: a full batch is
	// committed at once. A write larger than the bound is a batch of its
	// own.
	DefaultMaxBatchRows = 2000
)

// Write is one analysis' step in a batch (BatchCommitter): the mutation
// Commit would write under the lease.
type Write struct {
	Lease    Lease
	Mutation Mutation
}

// rows is how many rows w writes, at most.
func (w *Write) rows() int {
	return 1 + len(w.Mutation.Owed) + len(w.Mutation.Measurements) + len(w.Mutation.Delivered)
}

// BatchCommitter is a Store that commits the steps of many analyses at
// once. The postgres store writes them in one transaction; the memory
// store and Metered implement it too.
type BatchCommitter interface {
	// CommitBatch writes each of ws as Commit would, each under its own
	// lease. A write that its lease, its analysis or its content keeps
	// out fails alone (errs[i]: ErrLeaseLost, ErrNotFound, a refusal)
	// and changes nothing; err fails every write, and then none was
	// written (or, when the store's answer was lost, all may have been:
	// a write made again writes nothing twice).
	CommitBatch(ctx context.Context, ws []Write) (errs []error, err error)
}

// commitEach is CommitBatch for a store that commits one write at a
// time: each in its own transaction.
func commitEach(ctx context.Context, st Store, ws []Write) []error {
	errs := make([]error, len(ws))
	for i := range ws {
		errs[i] = st.Commit(ctx, ws[i].Lease, ws[i].Mutation)
	}
	return errs
}

// CommitBatch commits each write in turn: the memory store has no
// transaction to share.
func (m *memoryStore) CommitBatch(ctx context.Context, ws []Write) ([]error, error) {
	return commitEach(ctx, m, ws), nil
}

// GroupOptions configure Grouped.
type GroupOptions struct {
	// Interval is how long a batch gathers; DefaultCommitInterval when 0.
	Interval time.Duration
	// MaxRows bounds a batch's rows; DefaultMaxBatchRows when 0.
	MaxRows int
	// Timeout bounds a batch's commit; DefaultOperationTimeout when 0.
	Timeout time.Duration
}

// grouped is a Store whose commits are gathered into batches (group
// commit); everything else is the wrapped store's.
type grouped struct {
	Store
	bc      BatchCommitter
	opts    GroupOptions
	commits sync.Mutex // held while a batch commits, and by Renew and Release
	mu      sync.Mutex
	cur     *group // the batch gathering writes; nil when none
}

// Shared is the wrapped store's (Shared).
func (g *grouped) Shared() bool { return Shared(g.Store) }

// group is one batch: its writes, and once it is committed, what each
// write's outcome was.
type group struct {
	writes []Write
	rows   int
	full   chan struct{} // closed when no write joins it any more
	done   chan struct{} // closed when errs is set
	errs   []error
}

// Grouped wraps st, a BatchCommitter, so that the commits of many
// analyses made within a short interval share one transaction (group
// commit): the first write of a batch waits o.Interval (or until the
// batch holds o.MaxRows rows, or the batch before it is committed, if
// that is later), then commits every write that joined it, in one call
// of CommitBatch. Each Commit returns its own write's outcome, once the
// batch's transaction has ended: nil only when it committed. A write whose
// lease was lost fails alone; an error of the whole transaction fails
// each write, for its writer to try again; and when the transaction was
// refused (not a store that did not answer, which fails each write), each
// write is committed again on its own, so that one write no store can take
// never holds the others back.
//
// One batch is committed at a time; Renew and Release wait for the batch
// being committed and hold the next, so that the rows of this replica's
// analyses are never locked by two of its transactions in two orders.
// Close closes st. A store that is no BatchCommitter is returned as it is.
func Grouped(st Store, o GroupOptions) Store {
	bc, ok := st.(BatchCommitter)
	if !ok {
		return st
	}
	if o.Interval <= 0 {
		o.Interval = DefaultCommitInterval
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxBatchRows
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultOperationTimeout
	}
	return &grouped{Store: st, bc: bc, opts: o}
}

// Commit hands the write to the batch gathering and waits for the
// batch's outcome, or for ctx (the write's fate is then unknown, as after
// a store that did not answer: it may still be committed).
func (g *grouped) Commit(ctx context.Context, l Lease, mu Mutation) error {
	if err := mu.check(); err != nil {
		return err
	}
	b, i, lead := g.join(Write{Lease: l, Mutation: mu})
	if lead {
		g.lead(b)
	}
	select {
	case <-b.done:
		return b.errs[i]
	case <-ctx.Done():
		return unavailable("commit", ctx.Err())
	}
}

// join adds w to the batch gathering, or starts one (its leader: the
// caller commits it); i is w's place in it.
func (g *grouped) join(w Write) (b *group, i int, lead bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rows := w.rows()
	if g.cur != nil && g.cur.rows+rows > g.opts.MaxRows {
		// w does not fit: it starts the next batch.
		g.sealLocked()
	}
	if g.cur == nil {
		g.cur = &group{full: make(chan struct{}), done: make(chan struct{})}
		lead = true
	}
	b = g.cur
	b.writes = append(b.writes, w)
	b.rows += rows
	if b.rows >= g.opts.MaxRows {
		g.sealLocked()
	}
	return b, len(b.writes) - 1, lead
}

// sealLocked closes the batch gathering to more writes: it is committed
// as soon as the batch before it is.
func (g *grouped) sealLocked() {
	close(g.cur.full)
	g.cur = nil
}

// lead commits b, whose first write the caller made: after the interval,
// or once b is full, and once the batch before it is committed.
func (g *grouped) lead(b *group) {
	t := time.NewTimer(g.opts.Interval)
	select {
	case <-t.C:
	case <-b.full:
		t.Stop()
	}
	g.commits.Lock()
	defer g.commits.Unlock()
	g.mu.Lock()
	if g.cur == b {
		g.cur = nil
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.Timeout)
	defer cancel()
	errs, err := g.bc.CommitBatch(ctx, b.writes)
	switch {
	case err == nil:
	case Retryable(err) || len(b.writes) == 1:
		errs = make([]error, len(b.writes))
		for i := range errs {
			errs[i] = err
		}
	default:
		// Refused as a whole: each write on its own, so that the one
		// refused fails alone.
		errs = commitEach(ctx, g.Store, b.writes)
	}
	b.errs = errs
	close(b.done)
}

// Renew waits for the batch being committed, and holds the next.
func (g *grouped) Renew(ctx context.Context, owner string) ([]Lease, error) {
	g.commits.Lock()
	defer g.commits.Unlock()
	return g.Store.Renew(ctx, owner)
}

// Release waits for the batch being committed, and holds the next.
func (g *grouped) Release(ctx context.Context, leases ...Lease) error {
	g.commits.Lock()
	defer g.commits.Unlock()
	return g.Store.Release(ctx, leases...)
}
