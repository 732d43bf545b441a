package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/redact"
)

// notifyChannel is the channel of LISTEN/NOTIFY (migrations/001).
const notifyChannel = "canaryd_analyses"

// postgresStore is the store of `--store postgres://…`: analyses in a
// PostgreSQL database shared by every replica.
type postgresStore struct {
	opts   Options
	pool   *pgxpool.Pool
	sealer *sealer
	lis    *listener
}

// OpenPostgres connects to the PostgreSQL database rawURL names (a pool:
// pgxpool's parameters, such as pool_max_conns, may be added to the URL)
// and checks that its schema is this canaryd's, migrating it first when
// opts.Migrate is set. Its errors never quote the URL.
func OpenPostgres(ctx context.Context, rawURL string, opts Options) (Store, error) {
	opts.defaults()
	s, err := newSealer(opts.SecretKey)
	if err != nil {
		return nil, err
	}
	if _, err := connConfig(rawURL); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, errors.New("store: the postgres URL does not parse")
	}
	if opts.Migrate {
		if _, _, err := Migrate(ctx, rawURL); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, unavailable("connect", err)
	}
	p := &postgresStore{opts: opts, pool: pool, sealer: s,
		lis: &listener{cfg: cfg.ConnConfig, subs: newSubscribers(opts.MaxSubscribers), ready: make(chan struct{})}}
	var version int32
	err = pool.QueryRow(ctx, "SELECT version FROM "+VersionTable).Scan(&version)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01", errors.Is(err, pgx.ErrNoRows):
		version = 0
	case err != nil:
		pool.Close()
		return nil, p.fail("checking the schema", err)
	}
	if version < SchemaVersion {
		pool.Close()
		return nil, fmt.Errorf("%w (the database is at version %d, this canaryd needs %d)", ErrSchema, version, SchemaVersion)
	}
	return p, nil
}

// fail wraps err: the store's own errors as they are, PostgreSQL's
// refusals as errors of op, everything else (no connection, no answer in
// time) as ErrUnavailable.
func (p *postgresStore) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range []error{ErrNotFound, ErrExists, ErrLeaseLost, ErrUnavailable, ErrClosed} {
		if errors.Is(err, own) {
			return err
		}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !serverGone(pgErr) {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return unavailable(op, err)
}

// serverGone says whether PostgreSQL's error means that it cannot serve
// now rather than that it refused the statement: a connection exception
// (class 08), insufficient resources (53: too many connections, disk
// full), an operator's intervention (57P: shutdown, restart, starting up).
func serverGone(e *pgconn.PgError) bool {
	return strings.HasPrefix(e.Code, "08") || strings.HasPrefix(e.Code, "53") || strings.HasPrefix(e.Code, "57P")
}

func (p *postgresStore) now() time.Time { return micro(p.opts.Clock.Now()) }

func (p *postgresStore) Create(ctx context.Context, n NewAnalysis) (Lease, error) {
	if err := checkID(n.ID); err != nil {
		return Lease{}, err
	}
	document, webhookURL, sealed, err := p.sealer.split(&n)
	if err != nil {
		return Lease{}, err
	}
	args, err := json.Marshal(maskedArgs(n.Args))
	if err != nil {
		return Lease{}, err
	}
	state, err := json.Marshal(maskState(n.State, n.Args))
	if err != nil {
		return Lease{}, err
	}
	sum := ""
	if n.Document != nil {
		s := sha256.Sum256(n.Document)
		sum = hex.EncodeToString(s[:])
	}
	events := []string{}
	if n.Webhook != nil {
		events = append(events, n.Webhook.Events...)
	}
	now := p.now()
	l := Lease{ID: n.ID, Owner: n.Owner, Token: 1, ExpiresAt: now.Add(p.opts.LeaseTTL)}
	tag, err := p.pool.Exec(ctx, `INSERT INTO canaryd_analyses
		(id, created_at, template, document, document_sha256, args, webhook_url, webhook_events, sealed,
		 phase, started_at, completed_at, state, owner, lease_token, lease_expires_at, series)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (id) DO NOTHING`,
		n.ID, now, n.Template, document, sum, args, webhookURL, events, sealed,
		string(n.State.Phase), startedAt(&n.State, now), completedAt(&n.State, now), state, n.Owner, l.Token, l.ExpiresAt, n.State.Series)
	if err != nil {
		return Lease{}, p.fail("create", err)
	}
	if tag.RowsAffected() == 0 {
		return Lease{}, ErrExists
	}
	return l, nil
}

// columns are what Get reads; List leaves out the last two.
const columns = `id, created_at, template, document_sha256, args, webhook_url, webhook_events,
	phase, started_at, completed_at, state, version, owner, lease_token, lease_expires_at, deliveries_owed, terminate_requested`

// scan reads a row of columns (and, with full, document and sealed).
func (p *postgresStore) scan(row pgx.Row, full bool) (*Analysis, error) {
	var (
		a                  Analysis
		args, state        []byte
		webhookURL, phase  string
		events             []string
		document, sealed   []byte
		deliveries         int32
		leaseOwner         string
		leaseToken         int64
		leaseExpires       time.Time
		completed, created *time.Time
	)
	dest := []any{&a.ID, &created, &a.Template, &a.DocumentSHA256, &args, &webhookURL, &events,
		&phase, &a.StartedAt, &completed, &state, &a.Version, &leaseOwner, &leaseToken, &leaseExpires, &deliveries, &a.TerminateRequested}
	if full {
		dest = append(dest, &document, &sealed)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if created != nil {
		a.CreatedAt = created.UTC()
	}
	a.StartedAt = a.StartedAt.UTC()
	if completed != nil {
		t := completed.UTC()
		a.CompletedAt = &t
	}
	a.Phase = api.Phase(phase)
	a.Lease = Lease{ID: a.ID, Owner: leaseOwner, Token: leaseToken, ExpiresAt: leaseExpires.UTC()}
	a.DeliveriesOwed = int(deliveries)
	var m map[string]string
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, fmt.Errorf("store: analysis %s: args: %w", a.ID, err)
	}
	for name, v := range m {
		arg := Arg{Name: name, Value: v, Secret: v == redact.Mask || secretName(name)}
		if arg.Secret {
			arg.Value = ""
		}
		a.Args = append(a.Args, arg)
	}
	slices.SortFunc(a.Args, func(x, y Arg) int { return cmp.Compare(x.Name, y.Name) })
	if webhookURL != "" {
		a.Webhook = &Webhook{URL: webhookURL, Events: events}
	}
	if err := json.Unmarshal(state, &a.State); err != nil {
		return nil, fmt.Errorf("store: analysis %s: state: %w", a.ID, err)
	}
	if full {
		a.Document = document
		p.sealer.fill(&a, sealed)
	}
	return &a, nil
}

// maskState returns s with the values of secret arguments in its Args
// masked, should its writer have left any: those named like secrets, and
// those args marks secret. s is not changed.
func maskState(s api.Analysis, args []Arg) api.Analysis {
	var masked map[string]string
	for name, v := range s.Args {
		secret := secretName(name)
		for _, a := range args {
			secret = secret || (a.Name == name && a.secret())
		}
		if secret && v != redact.Mask {
			if masked == nil {
				masked = maps.Clone(s.Args)
			}
			masked[name] = redact.Mask
		}
	}
	if masked != nil {
		s.Args = masked
	}
	return s
}

// secretName says whether an argument's name makes it secret.
func secretName(name string) bool { return Arg{Name: name}.secret() }

func (p *postgresStore) Get(ctx context.Context, id string) (*Analysis, error) {
	a, err := p.scan(p.pool.QueryRow(ctx, "SELECT "+columns+", document, sealed FROM canaryd_analyses WHERE id = $1", id), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, p.fail("get", err)
	}
	return a, nil
}

func (p *postgresStore) List(ctx context.Context, f Filter) (Page, error) {
	limit, cur, err := f.check()
	if err != nil {
		return Page{}, err
	}
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.Phases) > 0 {
		phases := make([]string, len(f.Phases))
		for i, ph := range f.Phases {
			phases[i] = string(ph)
		}
		where = append(where, "phase = ANY("+arg(phases)+")")
	}
	if f.Template != "" {
		where = append(where, "template = "+arg(f.Template))
	}
	if f.Series != "" {
		where = append(where, "series = "+arg(f.Series))
	}
	if len(f.Args) > 0 {
		for name, v := range f.Args {
			if v == redact.Mask || secretName(name) {
				return Page{}, nil // a secret value never matches
			}
		}
		b, err := json.Marshal(f.Args)
		if err != nil {
			return Page{}, err
		}
		where = append(where, "args @> "+arg(b)+"::jsonb")
	}
	if !f.StartedAfter.IsZero() {
		where = append(where, "started_at > "+arg(f.StartedAfter))
	}
	if !f.StartedBefore.IsZero() {
		where = append(where, "started_at < "+arg(f.StartedBefore))
	}
	if cur != nil {
		t, id := arg(cur.StartedAt), arg(cur.ID)
		where = append(where, "(started_at < "+t+" OR (started_at = "+t+" AND id > "+id+"))")
	}
	q := "SELECT " + columns + " FROM canaryd_analyses"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY started_at DESC, id LIMIT " + arg(limit+1)
	rows, err := p.pool.Query(ctx, q, args...)
	if err != nil {
		return Page{}, p.fail("list", err)
	}
	defer rows.Close()
	var page Page
	for rows.Next() {
		a, err := p.scan(rows, false)
		if err != nil {
			return Page{}, p.fail("list", err)
		}
		if len(page.Analyses) == limit {
			page.Next = encodeCursor(&page.Analyses[limit-1])
			break
		}
		page.Analyses = append(page.Analyses, *a)
	}
	if err := rows.Err(); err != nil {
		return Page{}, p.fail("list", err)
	}
	return page, nil
}

// lost says why a fenced write of id changed nothing: ErrNotFound or
// ErrLeaseLost.
func (p *postgresStore) lost(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) error {
	var one int
	err := q.QueryRow(ctx, "SELECT 1 FROM canaryd_analyses WHERE id = $1", id).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	}
	return ErrLeaseLost
}

func (p *postgresStore) SaveState(ctx context.Context, l Lease, s api.Analysis) error {
	state, err := json.Marshal(maskState(s, nil))
	if err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `UPDATE canaryd_analyses
		SET phase = $3, completed_at = $4, state = $5, version = version + 1
		WHERE id = $1 AND lease_token = $2`,
		l.ID, l.Token, string(s.Phase), completedAt(&s, p.now()), state)
	if err != nil {
		return p.fail("save state", err)
	}
	if tag.RowsAffected() == 0 {
		return p.fail("save state", p.lost(ctx, p.pool, l.ID))
	}
	return nil
}

// fenced runs fn in a transaction that holds the analysis' row, if l still
// holds the analysis; else it fails with ErrNotFound or ErrLeaseLost.
func (p *postgresStore) fenced(ctx context.Context, op string, l Lease, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var token int64
		err := tx.QueryRow(ctx, "SELECT lease_token FROM canaryd_analyses WHERE id = $1 FOR UPDATE", l.ID).Scan(&token)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		case token != l.Token:
			return ErrLeaseLost
		}
		return fn(tx)
	})
	return p.fail(op, err)
}

func (p *postgresStore) AppendMeasurement(ctx context.Context, l Lease, m Measurement, s *api.Analysis) (added bool, err error) {
	body, err := json.Marshal(m.Measurement)
	if err != nil {
		return false, err
	}
	var state []byte
	if s != nil {
		if state, err = json.Marshal(maskState(*s, nil)); err != nil {
			return false, err
		}
	}
	var finished *time.Time
	if m.Measurement.FinishedAt != nil {
		t := micro(*m.Measurement.FinishedAt)
		finished = &t
	}
	err = p.fenced(ctx, "append measurement", l, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO canaryd_measurements (analysis_id, metric, idx, phase, finished_at, body)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			l.ID, m.Metric, m.Index, string(m.Measurement.Phase), finished, body)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		added = true
		if s == nil {
			_, err = tx.Exec(ctx, "UPDATE canaryd_analyses SET version = version + 1 WHERE id = $1", l.ID)
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE canaryd_analyses
			SET phase = $2, completed_at = $3, state = $4, version = version + 1 WHERE id = $1`,
			l.ID, string(s.Phase), completedAt(s, p.now()), state)
		return err
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

func (p *postgresStore) Commit(ctx context.Context, l Lease, mu Mutation) error {
	errs, err := p.CommitBatch(ctx, []Write{{Lease: l, Mutation: mu}})
	if err != nil {
		return err
	}
	return errs[0]
}

// exists fails with ErrNotFound when no analysis has the id.
func (p *postgresStore) exists(ctx context.Context, op, id string) error {
	err := p.lost(ctx, p.pool, id)
	if errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return p.fail(op, err)
}

func (p *postgresStore) Measurements(ctx context.Context, id string, rg MeasurementRange) ([]Measurement, error) {
	limit, err := rg.limit()
	if err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, `SELECT metric, idx, body FROM canaryd_measurements
		WHERE analysis_id = $1 AND ($2 = '' OR metric = $2) AND idx >= $3
		ORDER BY metric, idx LIMIT $4`, id, rg.Metric, rg.From, limit)
	if err != nil {
		return nil, p.fail("measurements", err)
	}
	var out []Measurement
	for rows.Next() {
		var m Measurement
		var body []byte
		if err := rows.Scan(&m.Metric, &m.Index, &body); err != nil {
			rows.Close()
			return nil, p.fail("measurements", err)
		}
		if err := json.Unmarshal(body, &m.Measurement); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: analysis %s: measurement: %w", id, err)
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, p.fail("measurements", err)
	}
	if len(out) == 0 {
		return nil, p.exists(ctx, "measurements", id)
	}
	return out, nil
}

func (p *postgresStore) leases(rows pgx.Rows, err error, op, owner string) ([]Lease, error) {
	if err != nil {
		return nil, p.fail(op, err)
	}
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		l := Lease{Owner: owner}
		if err := rows.Scan(&l.ID, &l.Token, &l.ExpiresAt, &l.Terminate); err != nil {
			return nil, p.fail(op, err)
		}
		l.ExpiresAt = l.ExpiresAt.UTC()
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, p.fail(op, err)
	}
	slices.SortFunc(out, func(x, y Lease) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

func (p *postgresStore) Claim(ctx context.Context, owner string, n int) ([]Lease, error) {
	if n <= 0 {
		return nil, nil
	}
	n = min(n, MaxListLimit)
	now := p.now()
	rows, err := p.pool.Query(ctx, `WITH due AS (
			SELECT id FROM canaryd_analyses
			WHERE (completed_at IS NULL OR deliveries_owed > 0) AND lease_expires_at <= $1
			ORDER BY lease_expires_at, id
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		UPDATE canaryd_analyses a
		SET owner = $3, lease_token = a.lease_token + 1, lease_expires_at = $4
		FROM due WHERE a.id = due.id
		RETURNING a.id, a.lease_token, a.lease_expires_at, a.terminate_requested`,
		now, n, owner, now.Add(p.opts.LeaseTTL))
	return p.leases(rows, err, "claim", owner)
}

func (p *postgresStore) Renew(ctx context.Context, owner string) ([]Lease, error) {
	rows, err := p.pool.Query(ctx, `UPDATE canaryd_analyses SET lease_expires_at = $2
		WHERE owner = $1 AND (completed_at IS NULL OR deliveries_owed > 0)
		RETURNING id, lease_token, lease_expires_at, terminate_requested`,
		owner, p.now().Add(p.opts.LeaseTTL))
	return p.leases(rows, err, "renew", owner)
}

func (p *postgresStore) RequestTerminate(ctx context.Context, id string) error {
	tag, err := p.pool.Exec(ctx, `UPDATE canaryd_analyses SET terminate_requested = true, version = version + 1
		WHERE id = $1 AND completed_at IS NULL AND NOT terminate_requested`, id)
	if err != nil {
		return p.fail("request terminate", err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var exists bool
	if err := p.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM canaryd_analyses WHERE id = $1)", id).Scan(&exists); err != nil {
		return p.fail("request terminate", err)
	}
	if !exists {
		return ErrNotFound
	}
	return nil
}

func (p *postgresStore) Release(ctx context.Context, leases ...Lease) error {
	if len(leases) == 0 {
		return nil
	}
	ids := make([]string, len(leases))
	tokens := make([]int64, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.ID, l.Token
	}
	_, err := p.pool.Exec(ctx, `UPDATE canaryd_analyses a SET owner = '', lease_expires_at = $1
		FROM unnest($2::text[], $3::bigint[]) AS r(id, token)
		WHERE a.id = r.id AND a.lease_token = r.token`,
		p.now(), ids, tokens)
	return p.fail("release", err)
}

func (p *postgresStore) Enqueue(ctx context.Context, l Lease, d Delivery) error {
	if !json.Valid(d.Event) {
		return errors.New("store: a delivery's event must be JSON")
	}
	return p.fenced(ctx, "enqueue", l, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO canaryd_deliveries (analysis_id, webhook_id, seq, event, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			l.ID, d.WebhookID, d.Seq, []byte(d.Event), p.now())
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE canaryd_analyses SET deliveries_owed = deliveries_owed + 1, version = version + 1 WHERE id = $1", l.ID)
		return err
	})
}

func (p *postgresStore) Owed(ctx context.Context, id string) ([]Delivery, error) {
	rows, err := p.pool.Query(ctx, `SELECT webhook_id, seq, event, created_at FROM canaryd_deliveries
		WHERE analysis_id = $1 AND delivered_at IS NULL ORDER BY seq`, id)
	if err != nil {
		return nil, p.fail("owed", err)
	}
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var event []byte
		if err := rows.Scan(&d.WebhookID, &d.Seq, &event, &d.CreatedAt); err != nil {
			rows.Close()
			return nil, p.fail("owed", err)
		}
		d.Event, d.CreatedAt = event, d.CreatedAt.UTC()
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, p.fail("owed", err)
	}
	if len(out) == 0 {
		return nil, p.exists(ctx, "owed", id)
	}
	return out, nil
}

func (p *postgresStore) MarkDelivered(ctx context.Context, l Lease, webhookID string) error {
	return p.fenced(ctx, "mark delivered", l, func(tx pgx.Tx) error {
		var delivered *time.Time
		err := tx.QueryRow(ctx, "SELECT delivered_at FROM canaryd_deliveries WHERE analysis_id = $1 AND webhook_id = $2",
			l.ID, webhookID).Scan(&delivered)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ErrNotFound
		case err != nil || delivered != nil:
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE canaryd_deliveries SET delivered_at = $3 WHERE analysis_id = $1 AND webhook_id = $2",
			l.ID, webhookID, p.now()); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE canaryd_analyses SET deliveries_owed = deliveries_owed - 1, version = version + 1 WHERE id = $1", l.ID)
		return err
	})
}

func (p *postgresStore) DeleteCompleted(ctx context.Context, before time.Time) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM canaryd_analyses WHERE id IN (
		SELECT id FROM canaryd_analyses WHERE completed_at < $1 LIMIT $2)`, before, DeleteBatch)
	if err != nil {
		return 0, p.fail("delete", err)
	}
	return int(tag.RowsAffected()), nil
}

func (p *postgresStore) Ping(ctx context.Context) error {
	return p.fail("ping", p.pool.Ping(ctx))
}

func (p *postgresStore) Subscribe(ctx context.Context, id string) (<-chan Notification, func(), error) {
	return p.lis.subscribe(ctx, id)
}

func (p *postgresStore) Close() {
	p.lis.close()
	p.pool.Close()
}

// listener holds the one connection that LISTENs for a store's
// notifications and hands each to the subscriptions of its analysis. It
// connects at the first Subscribe, and again whenever the connection is
// lost, telling every subscription (Version 0) that it may have missed
// some.
type listener struct {
	cfg *pgx.ConnConfig

	mu      sync.Mutex
	subs    subscribers
	ready   chan struct{} // closed while listening
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (l *listener) subscribe(ctx context.Context, id string) (<-chan Notification, func(), error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, nil, ErrClosed
	}
	s, err := l.subs.add(id)
	if err != nil {
		l.mu.Unlock()
		return nil, nil, err
	}
	if !l.started {
		l.started = true
		var runCtx context.Context
		runCtx, l.cancel = context.WithCancel(context.Background())
		l.done = make(chan struct{})
		// Ends when the store is closed (close cancels runCtx).
		go l.run(runCtx)
	}
	ready := l.ready
	l.mu.Unlock()
	cancel := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.subs.remove(id, s)
	}
	// Notifications sent before the connection listens would be missed:
	// wait until it does.
	select {
	case <-ready:
		return s.ch, cancel, nil
	case <-ctx.Done():
		cancel()
		return nil, nil, unavailable("subscribe", ctx.Err())
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	listened := false
	for {
		conn, err := pgx.ConnectConfig(ctx, l.cfg.Copy())
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err == nil {
				backoff = 100 * time.Millisecond
				l.mu.Lock()
				close(l.ready)
				// Writes made while no connection listened (a
				// restart of PostgreSQL, say) sent notifications no
				// one heard: every subscription fetches again.
				if listened {
					l.subs.missed()
				}
				listened = true
				l.mu.Unlock()
				for {
					n, err := conn.WaitForNotification(ctx)
					if err != nil {
						break
					}
					l.dispatch(n.Payload)
				}
				l.mu.Lock()
				l.ready = make(chan struct{})
				l.subs.missed()
				l.mu.Unlock()
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// dispatch hands a notification's payload, "ID VERSION", to the
// subscriptions of ID.
func (l *listener) dispatch(payload string) {
	id, v, ok := strings.Cut(payload, " ")
	if !ok {
		return
	}
	version, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs.notify(id, version)
}

func (l *listener) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	cancel, done := l.cancel, l.done
	l.subs.closeAll()
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
