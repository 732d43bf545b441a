package store

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promreg"
)

// DefaultOperationTimeout bounds one call to a store wrapped by Metered
// when MeteredOptions.Timeout is 0.
const DefaultOperationTimeout = 5 * time.Second

// Outcomes of a store's operation, as Outcome classifies its error and
// canaryd_store_operations_total counts them.
const (
	// OutcomeOK: the operation did what was asked.
	OutcomeOK = "ok"
	// OutcomeNotFound: no analysis (or delivery) had the id.
	OutcomeNotFound = "not_found"
	// OutcomeLeaseLost: another replica holds the analysis now; the
	// writer stops, and trying again cannot help.
	OutcomeLeaseLost = "lease_lost"
	// OutcomeUnavailable: the store did not answer in time, or could not
	// be reached; the same call may succeed later (Retryable).
	OutcomeUnavailable = "unavailable"
	// OutcomeRefused: the store refused what it was given (a filter, an
	// id already stored, a secret it cannot keep, the memory store full);
	// the same call fails again.
	OutcomeRefused = "refused"
	// OutcomeError: anything else.
	OutcomeError = "error"
)

// Outcome classifies err, an error of a Store's method: OutcomeOK for nil.
func Outcome(err error) string {
	var fe *FilterError
	var se *SecretError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrNotFound):
		return OutcomeNotFound
	case errors.Is(err, ErrLeaseLost):
		return OutcomeLeaseLost
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return OutcomeUnavailable
	case errors.Is(err, ErrExists), errors.Is(err, ErrFull), errors.Is(err, ErrTooManySubscribers),
		errors.As(err, &fe), errors.As(err, &se):
		return OutcomeRefused
	}
	return OutcomeError
}

// Retryable says whether the call that failed with err may succeed if it
// is made again later: the store did not answer. A lost lease, a refusal
// or a missing analysis are final.
func Retryable(err error) bool { return Outcome(err) == OutcomeUnavailable }

// MeteredOptions configure Metered.
type MeteredOptions struct {
	// Registerer receives the store's metrics; none are kept when nil.
	Registerer prometheus.Registerer
	// Timeout bounds each call that has no earlier deadline of its own;
	// DefaultOperationTimeout when 0. Subscribe's subscription is not
	// bounded, only its start.
	Timeout time.Duration
}

// metered is a Store that bounds and counts every call of the store it
// wraps.
type metered struct {
	st       Store
	timeout  time.Duration
	ops      *prometheus.CounterVec
	duration *prometheus.HistogramVec
	claimed  prometheus.Counter
	batches  prometheus.Histogram
}

// Metered wraps st once for a service: every call is bounded by a timeout
// unless its context ends sooner, and counted by operation and outcome
// (canaryd_store_operations_total{op,outcome}, Outcome), with its duration
// (canaryd_store_operation_duration_seconds{op}) and, for Claim, the
// analyses claimed (canaryd_store_claims_total). It fails only if the
// metrics cannot be registered.
func Metered(st Store, o MeteredOptions) (Store, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultOperationTimeout
	}
	f, registered := promreg.With(o.Registerer)
	m := &metered{
		st:      st,
		timeout: o.Timeout,
		ops: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_store_operations_total",
			Help: "Calls to the store (--store), by operation and outcome: ok, not_found, lease_lost, unavailable (the store did not answer; tried again later), refused or error.",
		}, []string{"op", "outcome"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "canaryd_store_operation_duration_seconds",
			Help:    "How long calls to the store (--store) took, by operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		claimed: f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_store_claims_total",
			Help: "Analyses this replica claimed from the store: their replica had stopped or died, and their lease expired.",
		}),
		batches: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "canaryd_store_batch_writes",
			Help:    "Writes (one analysis' step each) per transaction of group commit (op commit_batch).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}),
	}
	if err := registered(); err != nil {
		return nil, err
	}
	return m, nil
}

// call runs fn, bounded by the timeout, and counts it as op.
func (m *metered) call(ctx context.Context, op string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	start := time.Now()
	err := fn(ctx)
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	m.ops.WithLabelValues(op, Outcome(err)).Inc()
	return err
}

func (m *metered) Create(ctx context.Context, a NewAnalysis) (l Lease, err error) {
	err = m.call(ctx, "create", func(ctx context.Context) error { l, err = m.st.Create(ctx, a); return err })
	return l, err
}

func (m *metered) Get(ctx context.Context, id string) (a *Analysis, err error) {
	err = m.call(ctx, "get", func(ctx context.Context) error { a, err = m.st.Get(ctx, id); return err })
	return a, err
}

func (m *metered) List(ctx context.Context, f Filter) (p Page, err error) {
	err = m.call(ctx, "list", func(ctx context.Context) error { p, err = m.st.List(ctx, f); return err })
	return p, err
}

func (m *metered) SaveState(ctx context.Context, l Lease, state api.Analysis) error {
	return m.call(ctx, "save_state", func(ctx context.Context) error { return m.st.SaveState(ctx, l, state) })
}

func (m *metered) AppendMeasurement(ctx context.Context, l Lease, ms Measurement, state *api.Analysis) (added bool, err error) {
	err = m.call(ctx, "append_measurement", func(ctx context.Context) error {
		added, err = m.st.AppendMeasurement(ctx, l, ms, state)
		return err
	})
	return added, err
}

func (m *metered) Commit(ctx context.Context, l Lease, mu Mutation) error {
	return m.call(ctx, "commit", func(ctx context.Context) error { return m.st.Commit(ctx, l, mu) })
}

// CommitBatch is counted once per batch, as op commit_batch, with its
// writes (canaryd_store_batch_writes); a store that is no BatchCommitter
// commits each write in turn.
func (m *metered) CommitBatch(ctx context.Context, ws []Write) (errs []error, err error) {
	bc, ok := m.st.(BatchCommitter)
	if !ok {
		return commitEach(ctx, m, ws), nil
	}
	m.batches.Observe(float64(len(ws)))
	err = m.call(ctx, "commit_batch", func(ctx context.Context) error { errs, err = bc.CommitBatch(ctx, ws); return err })
	return errs, err
}

func (m *metered) Measurements(ctx context.Context, id string, r MeasurementRange) (ms []Measurement, err error) {
	err = m.call(ctx, "measurements", func(ctx context.Context) error { ms, err = m.st.Measurements(ctx, id, r); return err })
	return ms, err
}

func (m *metered) Claim(ctx context.Context, owner string, n int) (ls []Lease, err error) {
	err = m.call(ctx, "claim", func(ctx context.Context) error { ls, err = m.st.Claim(ctx, owner, n); return err })
	m.claimed.Add(float64(len(ls)))
	return ls, err
}

func (m *metered) Renew(ctx context.Context, owner string) (ls []Lease, err error) {
	err = m.call(ctx, "renew", func(ctx context.Context) error { ls, err = m.st.Renew(ctx, owner); return err })
	return ls, err
}

func (m *metered) Release(ctx context.Context, leases ...Lease) error {
	return m.call(ctx, "release", func(ctx context.Context) error { return m.st.Release(ctx, leases...) })
}

func (m *metered) RequestTerminate(ctx context.Context, id string) error {
	return m.call(ctx, "request_terminate", func(ctx context.Context) error { return m.st.RequestTerminate(ctx, id) })
}

func (m *metered) Enqueue(ctx context.Context, l Lease, d Delivery) error {
	return m.call(ctx, "enqueue", func(ctx context.Context) error { return m.st.Enqueue(ctx, l, d) })
}

func (m *metered) Owed(ctx context.Context, id string) (ds []Delivery, err error) {
	err = m.call(ctx, "owed", func(ctx context.Context) error { ds, err = m.st.Owed(ctx, id); return err })
	return ds, err
}

func (m *metered) MarkDelivered(ctx context.Context, l Lease, webhookID string) error {
	return m.call(ctx, "mark_delivered", func(ctx context.Context) error { return m.st.MarkDelivered(ctx, l, webhookID) })
}

func (m *metered) DeleteCompleted(ctx context.Context, before time.Time) (n int, err error) {
	err = m.call(ctx, "delete_completed", func(ctx context.Context) error { n, err = m.st.DeleteCompleted(ctx, before); return err })
	return n, err
}

// Subscribe is counted, and its start bounded; the subscription lasts
// until ctx ends or it is cancelled, as the wrapped store's does.
func (m *metered) Subscribe(ctx context.Context, id string) (notes <-chan Notification, cancel func(), err error) {
	start := time.Now()
	notes, cancel, err = m.st.Subscribe(ctx, id)
	m.duration.WithLabelValues("subscribe").Observe(time.Since(start).Seconds())
	m.ops.WithLabelValues("subscribe", Outcome(err)).Inc()
	return notes, cancel, err
}

func (m *metered) Ping(ctx context.Context) error {
	return m.call(ctx, "ping", func(ctx context.Context) error { return m.st.Ping(ctx) })
}

func (m *metered) Close() { m.st.Close() }

// Shared is the wrapped store's (Shared).
func (m *metered) Shared() bool { return Shared(m.st) }
