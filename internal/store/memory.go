package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
)

// memoryStore is the store of `--store memory:`: one replica's analyses in
// its own memory, lost with it. It keeps secrets as they were given (they
// never leave the process), and the same leases and fencing as postgres so
// that the service runs one way on both.
type memoryStore struct {
	opts Options

	mu     sync.Mutex
	closed bool
	byID   map[string]*memRecord
	subs   subscribers
	// retained holds, when the store is not shared (memory:), the
	// analyses its process runs and those finished, for their retention
	// (RetainedIn).
	retained *Retained
}

type memRecord struct {
	a            Analysis
	measurements map[measurementKey]Measurement
	deliveries   []Delivery
	terminate    bool
}

type measurementKey struct {
	metric string
	index  int
}

// NewMemory returns an empty memory store.
func NewMemory(opts Options) Store {
	opts.defaults()
	return &memoryStore{opts: opts, byID: map[string]*memRecord{}, subs: newSubscribers(opts.MaxSubscribers)}
}

// Shared says that the memory store is not shared, this process' alone,
// unless Options.Shared says it stands in for one that is (Shared).
func (m *memoryStore) Shared() bool { return m.opts.Shared }

func (m *memoryStore) now() time.Time { return micro(m.opts.Clock.Now()) }

// cloneState copies a state through JSON, as postgres stores it, so that
// the caller's later changes do not reach the store nor the store's the
// caller.
func cloneState(s api.Analysis) (api.Analysis, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return api.Analysis{}, err
	}
	var out api.Analysis
	err = json.Unmarshal(b, &out)
	return out, err
}

func (m *memoryStore) Create(ctx context.Context, n NewAnalysis) (Lease, error) {
	if err := checkID(n.ID); err != nil {
		return Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, unavailable("create", err)
	}
	state, err := cloneState(n.State)
	if err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Lease{}, ErrClosed
	}
	if _, ok := m.byID[n.ID]; ok {
		return Lease{}, ErrExists
	}
	if len(m.byID) >= m.opts.MaxAnalyses {
		return Lease{}, ErrFull
	}
	now := m.now()
	a := Analysis{
		ID:          n.ID,
		CreatedAt:   now,
		Template:    n.Template,
		Document:    bytes.Clone(n.Document),
		Args:        slices.Clone(n.Args),
		Phase:       state.Phase,
		StartedAt:   startedAt(&state, now),
		CompletedAt: completedAt(&state, now),
		State:       state,
		Version:     1,
		Lease:       Lease{ID: n.ID, Owner: n.Owner, Token: 1, ExpiresAt: now.Add(m.opts.LeaseTTL)},
	}
	slices.SortFunc(a.Args, func(x, y Arg) int { return cmp.Compare(x.Name, y.Name) })
	for i := range a.Args {
		a.Args[i].Secret = a.Args[i].secret()
	}
	if n.Document != nil {
		sum := sha256.Sum256(n.Document)
		a.DocumentSHA256 = hex.EncodeToString(sum[:])
	}
	if n.Webhook != nil {
		a.Webhook = &Webhook{URL: n.Webhook.URL, Events: slices.Clone(n.Webhook.Events)}
	}
	m.byID[n.ID] = &memRecord{a: a, measurements: map[measurementKey]Measurement{}}
	return a.Lease, nil
}

// copyOut returns a copy of r's analysis for a caller.
func copyOut(r *memRecord) *Analysis {
	a := r.a
	a.Document = bytes.Clone(a.Document)
	a.Args = slices.Clone(a.Args)
	if a.Webhook != nil {
		w := *a.Webhook
		w.Events = slices.Clone(w.Events)
		a.Webhook = &w
	}
	a.State, _ = cloneState(a.State) // stored from JSON: it encodes
	a.TerminateRequested = r.terminate
	if a.CompletedAt != nil {
		t := *a.CompletedAt
		a.CompletedAt = &t
	}
	return &a
}

func (m *memoryStore) Get(ctx context.Context, id string) (*Analysis, error) {
	if err := ctx.Err(); err != nil {
		return nil, unavailable("get", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	r, ok := m.byID[id]
	if !ok {
		return nil, ErrNotFound
	}
	return copyOut(r), nil
}

func (m *memoryStore) List(ctx context.Context, f Filter) (Page, error) {
	limit, selects, err := f.Selector()
	if err != nil {
		return Page{}, err
	}
	if err := ctx.Err(); err != nil {
		return Page{}, unavailable("list", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Page{}, ErrClosed
	}
	var match []*memRecord
	for _, r := range m.byID {
		if selects(&r.a) {
			match = append(match, r)
		}
	}
	slices.SortFunc(match, func(x, y *memRecord) int {
		if c := y.a.StartedAt.Compare(x.a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(x.a.ID, y.a.ID)
	})
	var p Page
	for i, r := range match {
		if i == limit {
			p.Next = CursorAfter(&p.Analyses[limit-1])
			break
		}
		a := copyOut(r)
		a.Document = nil
		for j := range a.Args {
			if a.Args[j].Secret {
				a.Args[j].Value = ""
			}
		}
		p.Analyses = append(p.Analyses, *a)
	}
	return p, nil
}

// after says whether a comes after the cursor in the list's order.
func after(a *Analysis, c *cursor) bool {
	if s := a.StartedAt.Compare(c.StartedAt); s != 0 {
		return s < 0
	}
	return a.ID > c.ID
}

// matches applies f's selections to a.
func (f *Filter) matches(a *Analysis) bool {
	if len(f.Phases) > 0 && !slices.Contains(f.Phases, a.Phase) {
		return false
	}
	if f.Template != "" && a.Template != f.Template {
		return false
	}
	if f.Series != "" && a.State.Series != f.Series {
		return false
	}
	if !f.StartedAfter.IsZero() && !a.StartedAt.After(f.StartedAfter) {
		return false
	}
	if !f.StartedBefore.IsZero() && !a.StartedAt.Before(f.StartedBefore) {
		return false
	}
	for name, value := range f.Args {
		i := slices.IndexFunc(a.Args, func(x Arg) bool { return x.Name == name })
		if i < 0 || a.Args[i].Secret || a.Args[i].Value != value {
			return false
		}
	}
	return true
}

// fenced returns the record of l, if l still holds it.
func (m *memoryStore) fenced(op string, ctx context.Context, l Lease) (*memRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, unavailable(op, err)
	}
	if m.closed {
		return nil, ErrClosed
	}
	r, ok := m.byID[l.ID]
	if !ok {
		return nil, ErrNotFound
	}
	if r.a.Lease.Token != l.Token {
		return nil, ErrLeaseLost
	}
	return r, nil
}

// setState applies a state to r; the caller bumps the version.
func (m *memoryStore) setState(r *memRecord, s api.Analysis) error {
	state, err := cloneState(s)
	if err != nil {
		return err
	}
	now := m.now()
	r.a.State = state
	r.a.Phase = state.Phase
	r.a.CompletedAt = completedAt(&state, now)
	return nil
}

func (m *memoryStore) SaveState(ctx context.Context, l Lease, s api.Analysis) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.fenced("save state", ctx, l)
	if err != nil {
		return err
	}
	if err := m.setState(r, s); err != nil {
		return err
	}
	m.written(r)
	return nil
}

// written bumps r's version and tells its subscribers. Called with m.mu.
func (m *memoryStore) written(r *memRecord) {
	r.a.Version++
	m.subs.notify(r.a.ID, r.a.Version)
}

func (m *memoryStore) AppendMeasurement(ctx context.Context, l Lease, ms Measurement, s *api.Analysis) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.fenced("append measurement", ctx, l)
	if err != nil {
		return false, err
	}
	key := measurementKey{ms.Metric, ms.Index}
	if _, dup := r.measurements[key]; dup {
		return false, nil
	}
	if s != nil {
		if err := m.setState(r, *s); err != nil {
			return false, err
		}
	}
	copied, err := cloneMeasurement(ms)
	if err != nil {
		return false, err
	}
	r.measurements[key] = copied
	m.written(r)
	return true, nil
}

func (m *memoryStore) Commit(ctx context.Context, l Lease, mu Mutation) error {
	if err := mu.check(); err != nil {
		return err
	}
	// Everything is copied before anything is written: the commit
	// writes all of it or nothing.
	var state api.Analysis
	if mu.State != nil {
		var err error
		if state, err = cloneState(*mu.State); err != nil {
			return err
		}
	}
	measurements := make([]Measurement, len(mu.Measurements))
	for i, ms := range mu.Measurements {
		var err error
		if measurements[i], err = cloneMeasurement(ms); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.fenced("commit", ctx, l)
	if err != nil || mu.empty() {
		return err
	}
	now := m.now()
	for _, d := range mu.Owed {
		if !slices.ContainsFunc(r.deliveries, func(x Delivery) bool { return x.WebhookID == d.WebhookID }) {
			d.Event = bytes.Clone(d.Event)
			d.CreatedAt, d.DeliveredAt = now, nil
			r.deliveries = append(r.deliveries, d)
			r.a.DeliveriesOwed++
		}
	}
	for _, ms := range measurements {
		key := measurementKey{ms.Metric, ms.Index}
		if _, dup := r.measurements[key]; !dup {
			r.measurements[key] = ms
		}
	}
	if mu.State != nil {
		r.a.State, r.a.Phase, r.a.CompletedAt = state, state.Phase, completedAt(&state, now)
	}
	for _, id := range mu.Delivered {
		i := slices.IndexFunc(r.deliveries, func(x Delivery) bool { return x.WebhookID == id })
		if i >= 0 && r.deliveries[i].DeliveredAt == nil {
			r.deliveries[i].DeliveredAt = &now
			r.a.DeliveriesOwed--
		}
	}
	m.written(r)
	return nil
}

func cloneMeasurement(ms Measurement) (Measurement, error) {
	b, err := json.Marshal(ms.Measurement)
	if err != nil {
		return Measurement{}, err
	}
	var out api.Measurement
	err = json.Unmarshal(b, &out)
	ms.Measurement = out
	return ms, err
}

func (m *memoryStore) Measurements(ctx context.Context, id string, rg MeasurementRange) ([]Measurement, error) {
	limit, err := rg.limit()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable("measurements", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byID[id]
	if !ok {
		return nil, ErrNotFound
	}
	out := slices.Collect(maps.Values(r.measurements))
	out = slices.DeleteFunc(out, func(x Measurement) bool {
		return (rg.Metric != "" && x.Metric != rg.Metric) || x.Index < rg.From
	})
	slices.SortFunc(out, func(x, y Measurement) int {
		return cmp.Or(cmp.Compare(x.Metric, y.Metric), cmp.Compare(x.Index, y.Index))
	})
	out = out[:min(limit, len(out))]
	for i := range out {
		out[i], _ = cloneMeasurement(out[i])
	}
	return out, nil
}

// claimable says whether r has work left for a lease holder.
func (r *memRecord) claimable() bool { return r.a.CompletedAt == nil || r.a.DeliveriesOwed > 0 }

func (m *memoryStore) Claim(ctx context.Context, owner string, n int) ([]Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, unavailable("claim", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	now := m.now()
	var due []*memRecord
	for _, r := range m.byID {
		if r.claimable() && !r.a.Lease.ExpiresAt.After(now) {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, func(x, y *memRecord) int {
		return cmp.Or(x.a.Lease.ExpiresAt.Compare(y.a.Lease.ExpiresAt), cmp.Compare(x.a.ID, y.a.ID))
	})
	var out []Lease
	for _, r := range due[:max(0, min(n, MaxListLimit, len(due)))] {
		r.a.Lease = Lease{ID: r.a.ID, Owner: owner, Token: r.a.Lease.Token + 1, ExpiresAt: now.Add(m.opts.LeaseTTL)}
		l := r.a.Lease
		l.Terminate = r.terminate
		out = append(out, l)
	}
	return out, nil
}

func (m *memoryStore) Renew(ctx context.Context, owner string) ([]Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, unavailable("renew", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	until := m.now().Add(m.opts.LeaseTTL)
	var out []Lease
	for _, r := range m.byID {
		if r.a.Lease.Owner == owner && r.claimable() {
			r.a.Lease.ExpiresAt = until
			l := r.a.Lease
			l.Terminate = r.terminate
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(x, y Lease) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

func (m *memoryStore) RequestTerminate(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return unavailable("request terminate", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	r, ok := m.byID[id]
	if !ok {
		return ErrNotFound
	}
	if r.a.CompletedAt == nil && !r.terminate {
		r.terminate = true
		m.written(r)
	}
	return nil
}

func (m *memoryStore) Release(ctx context.Context, leases ...Lease) error {
	if err := ctx.Err(); err != nil {
		return unavailable("release", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	now := m.now()
	for _, l := range leases {
		if r, ok := m.byID[l.ID]; ok && r.a.Lease.Token == l.Token {
			r.a.Lease.Owner, r.a.Lease.ExpiresAt = "", now
		}
	}
	return nil
}

func (m *memoryStore) Enqueue(ctx context.Context, l Lease, d Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.fenced("enqueue", ctx, l)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(r.deliveries, func(x Delivery) bool { return x.WebhookID == d.WebhookID }) {
		return nil
	}
	d.Event = bytes.Clone(d.Event)
	d.CreatedAt, d.DeliveredAt = m.now(), nil
	r.deliveries = append(r.deliveries, d)
	r.a.DeliveriesOwed++
	m.written(r)
	return nil
}

func (m *memoryStore) Owed(ctx context.Context, id string) ([]Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, unavailable("owed", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byID[id]
	if !ok {
		return nil, ErrNotFound
	}
	var out []Delivery
	for _, d := range r.deliveries {
		if d.DeliveredAt == nil {
			d.Event = bytes.Clone(d.Event)
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(x, y Delivery) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

func (m *memoryStore) MarkDelivered(ctx context.Context, l Lease, webhookID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.fenced("mark delivered", ctx, l)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(r.deliveries, func(x Delivery) bool { return x.WebhookID == webhookID })
	if i < 0 {
		return ErrNotFound
	}
	if r.deliveries[i].DeliveredAt != nil {
		return nil
	}
	now := m.now()
	r.deliveries[i].DeliveredAt = &now
	r.a.DeliveriesOwed--
	m.written(r)
	return nil
}

func (m *memoryStore) DeleteCompleted(ctx context.Context, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, unavailable("delete", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, r := range m.byID {
		if n == DeleteBatch {
			break
		}
		if r.a.CompletedAt != nil && r.a.CompletedAt.Before(before) {
			delete(m.byID, id)
			n++
		}
	}
	return n, nil
}

func (m *memoryStore) Subscribe(ctx context.Context, id string) (<-chan Notification, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, unavailable("subscribe", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, ErrClosed
	}
	s, err := m.subs.add(id)
	if err != nil {
		return nil, nil, err
	}
	return s.ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.subs.remove(id, s)
	}, nil
}

func (m *memoryStore) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return unavailable("ping", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

func (m *memoryStore) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	m.subs.closeAll()
}
