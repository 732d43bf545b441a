package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// preparedWrite is a write of CommitBatch encoded before its transaction:
// its measurements' bodies and the state, as they are stored.
type preparedWrite struct {
	i        int // its place in the batch
	w        *Write
	state    []byte
	bodies   [][]byte
	finished []*time.Time
	// owed is by how much its statements changed the deliveries owed,
	// changed whether any of its rows did.
	owed    int
	changed bool
}

// prepareWrite encodes w, or says why no store can write it.
func prepareWrite(i int, w *Write) (preparedWrite, error) {
	pw := preparedWrite{i: i, w: w}
	if err := w.Mutation.check(); err != nil {
		return pw, err
	}
	if s := w.Mutation.State; s != nil {
		var err error
		if pw.state, err = json.Marshal(maskState(*s, nil)); err != nil {
			return pw, err
		}
	}
	for _, m := range w.Mutation.Measurements {
		body, err := json.Marshal(m.Measurement)
		if err != nil {
			return pw, err
		}
		var finished *time.Time
		if m.Measurement.FinishedAt != nil {
			t := micro(*m.Measurement.FinishedAt)
			finished = &t
		}
		pw.bodies, pw.finished = append(pw.bodies, body), append(pw.finished, finished)
	}
	return pw, nil
}

// queue adds pw's inserts and updates to b: first the owed events, then
// the measurements, then the events done.
func (pw *preparedWrite) queue(b *pgx.Batch, now time.Time) {
	l, mu := pw.w.Lease, &pw.w.Mutation
	for _, d := range mu.Owed {
		b.Queue(`INSERT INTO canaryd_deliveries (analysis_id, webhook_id, seq, event, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, l.ID, d.WebhookID, d.Seq, []byte(d.Event), now)
	}
	for i, m := range mu.Measurements {
		b.Queue(`INSERT INTO canaryd_measurements (analysis_id, metric, idx, phase, finished_at, body)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, l.ID, m.Metric, m.Index, string(m.Measurement.Phase), pw.finished[i], pw.bodies[i])
	}
	for _, id := range mu.Delivered {
		b.Queue(`UPDATE canaryd_deliveries SET delivered_at = $3
			WHERE analysis_id = $1 AND webhook_id = $2 AND delivered_at IS NULL`, l.ID, id, now)
	}
}

// statements is how many statements queue adds.
func (pw *preparedWrite) statements() int {
	mu := &pw.w.Mutation
	return len(mu.Owed) + len(mu.Measurements) + len(mu.Delivered)
}

// counted takes the rows affected by pw's statements, in their order.
func (pw *preparedWrite) counted(i, rows int) {
	mu := &pw.w.Mutation
	pw.changed = pw.changed || rows > 0
	switch {
	case i < len(mu.Owed):
		pw.owed += rows
	case i >= len(mu.Owed)+len(mu.Measurements):
		pw.owed -= rows
	}
}

// queueAnalysis adds to b the update of pw's analysis row: its state
// (when the write has one) and the deliveries it owes; none when the write
// changed nothing and has no state.
func (pw *preparedWrite) queueAnalysis(b *pgx.Batch, now time.Time) {
	l, mu := pw.w.Lease, &pw.w.Mutation
	switch {
	case mu.State == nil && !pw.changed:
	case mu.State == nil:
		b.Queue("UPDATE canaryd_analyses SET deliveries_owed = deliveries_owed + $2, version = version + 1 WHERE id = $1", l.ID, pw.owed)
	default:
		b.Queue(`UPDATE canaryd_analyses
			SET phase = $2, completed_at = $3, state = $4, deliveries_owed = deliveries_owed + $5, version = version + 1 WHERE id = $1`,
			l.ID, string(mu.State.Phase), completedAt(mu.State, now), pw.state, pw.owed)
	}
}

// CommitBatch writes the steps of many analyses in one transaction:
// their rows are locked in the order of their ids (so that two batches
// never wait for each other in a circle), each write's lease is checked
// against its row, and the writes whose lease holds are written as Commit
// writes one. A write whose lease was lost, whose analysis is gone, or
// that no store can write fails alone, in errs; an error of the
// transaction fails them all, in err, having written none.
func (p *postgresStore) CommitBatch(ctx context.Context, ws []Write) (errs []error, err error) {
	errs = make([]error, len(ws))
	prepared := make([]preparedWrite, 0, len(ws))
	for i := range ws {
		pw, err := prepareWrite(i, &ws[i])
		if err != nil {
			errs[i] = err
			continue
		}
		prepared = append(prepared, pw)
	}
	if len(prepared) == 0 {
		return errs, nil
	}
	ids := make([]string, 0, len(prepared))
	for _, pw := range prepared {
		ids = append(ids, pw.w.Lease.ID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	now := p.now()
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		tokens, err := lockAnalyses(ctx, tx, ids)
		if err != nil {
			return err
		}
		var held []*preparedWrite
		for k := range prepared {
			pw := &prepared[k]
			token, ok := tokens[pw.w.Lease.ID]
			switch {
			case !ok:
				errs[pw.i] = ErrNotFound
			case token != pw.w.Lease.Token:
				errs[pw.i] = ErrLeaseLost
			default:
				errs[pw.i] = nil
				held = append(held, pw)
			}
		}
		return writeHeld(ctx, tx, held, now)
	})
	if err != nil {
		return nil, p.fail("commit", err)
	}
	return errs, nil
}

// lockAnalyses locks the rows of ids, in their order, and returns each
// one's lease token; an id missing from the answer has no analysis.
func lockAnalyses(ctx context.Context, tx pgx.Tx, ids []string) (map[string]int64, error) {
	rows, err := tx.Query(ctx, "SELECT id, lease_token FROM canaryd_analyses WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tokens := make(map[string]int64, len(ids))
	for rows.Next() {
		var id string
		var token int64
		if err := rows.Scan(&id, &token); err != nil {
			return nil, err
		}
		tokens[id] = token
	}
	return tokens, rows.Err()
}

// writeHeld sends the inserts and updates of the writes whose lease holds,
// in one round trip, then their analyses' rows in another.
func writeHeld(ctx context.Context, tx pgx.Tx, held []*preparedWrite, now time.Time) error {
	var b pgx.Batch
	for _, pw := range held {
		pw.queue(&b, now)
	}
	if b.Len() > 0 {
		results := tx.SendBatch(ctx, &b)
		for _, pw := range held {
			for i := range pw.statements() {
				tag, err := results.Exec()
				if err != nil {
					_ = results.Close()
					return err
				}
				pw.counted(i, int(tag.RowsAffected()))
			}
		}
		if err := results.Close(); err != nil {
			return err
		}
	}
	var ub pgx.Batch
	for _, pw := range held {
		pw.queueAnalysis(&ub, now)
	}
	if ub.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &ub).Close()
}
