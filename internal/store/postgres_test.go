package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/store"
)

func conn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Migrations: up from an empty database, and up from the previous schema
// with rows in it, which stay intact and readable.
func TestMigrations(t *testing.T) {
	t.Run("from empty", func(t *testing.T) {
		db := pgtest.Shared(t).Database(t)
		from, to, err := store.Migrate(ctx(t), db.URL)
		if err != nil || from != 0 || to != store.SchemaVersion || store.SchemaVersion < 2 {
			t.Fatalf("Migrate: %d → %d, %v (schema version %d)", from, to, err, store.SchemaVersion)
		}
		from, to, err = store.Migrate(ctx(t), db.URL)
		if err != nil || from != to || to != store.SchemaVersion {
			t.Fatalf("Migrate again: %d → %d, %v", from, to, err)
		}
		openPostgres(t, db.URL, store.Options{})
	})

	t.Run("from the previous schema", func(t *testing.T) {
		db := pgtest.Shared(t).Database(t)
		if _, to, err := store.MigrateTo(ctx(t), db.URL, store.SchemaVersion-1); err != nil || to != store.SchemaVersion-1 {
			t.Fatalf("MigrateTo previous: %d, %v", to, err)
		}
		if _, err := store.OpenPostgres(ctx(t), db.URL, store.Options{}); !errors.Is(err, store.ErrSchema) {
			t.Fatalf("Open on the previous schema: %v, want ErrSchema", err)
		}
		// Rows as the previous version wrote them.
		c := conn(t, db.URL)
		state, _ := json.Marshal(running("old-1", t0, "success-rate"))
		if _, err := c.Exec(ctx(t), `INSERT INTO canaryd_analyses
			(id, created_at, template, args, phase, started_at, state, owner, lease_token, lease_expires_at)
			VALUES ('old-1', $1, 'error-rate', '{"namespace":"shop"}', 'Running', $1, $2, 'replica-a', 4, $1)`, t0, state); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx(t), `INSERT INTO canaryd_measurements (analysis_id, metric, idx, phase, body)
			VALUES ('old-1', 'success-rate', 0, 'Successful', '{"phase":"Successful","value":"0.99"}')`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx(t), `INSERT INTO canaryd_deliveries (analysis_id, webhook_id, seq, event, created_at)
			VALUES ('old-1', 'old-1.1', 1, '{"type":"measurement"}', $1)`, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx(t), `UPDATE canaryd_analyses SET deliveries_owed = 1 WHERE id = 'old-1'`); err != nil {
			t.Fatal(err)
		}
		from, to, err := store.Migrate(ctx(t), db.URL)
		if err != nil || from != store.SchemaVersion-1 || to != store.SchemaVersion {
			t.Fatalf("Migrate: %d → %d, %v", from, to, err)
		}
		var n int
		if err := c.QueryRow(ctx(t), "SELECT count(*) FROM pg_indexes WHERE indexname = 'canaryd_analyses_args'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("the history's index is missing: %d, %v", n, err)
		}
		clk := clock.NewFake(t0.Add(time.Minute))
		s := openPostgres(t, db.URL, store.Options{Clock: clk, LeaseTTL: ttl})
		a := get(t, s, "old-1")
		if a.Template != "error-rate" || a.Phase != api.PhaseRunning || a.Lease.Owner != "replica-a" || a.Lease.Token != 4 ||
			len(a.Args) != 1 || a.Args[0].Value != "shop" || a.State.MetricResults[0].Name != "success-rate" || a.DeliveriesOwed != 1 {
			t.Fatalf("the old row read back as %+v", a)
		}
		if ms, err := s.Measurements(ctx(t), "old-1", store.MeasurementRange{}); err != nil || len(ms) != 1 || ms[0].Measurement.Value != "0.99" {
			t.Fatalf("old measurements: %+v, %v", ms, err)
		}
		if owed, err := s.Owed(ctx(t), "old-1"); err != nil || len(owed) != 1 || owed[0].WebhookID != "old-1.1" {
			t.Fatalf("old deliveries: %+v, %v", owed, err)
		}
		p, err := s.List(ctx(t), store.Filter{Args: map[string]string{"namespace": "shop"}, Template: "error-rate"})
		if err != nil || len(p.Analyses) != 1 {
			t.Fatalf("the old row is not found by the new filters: %+v, %v", p, err)
		}
		// Its lease (expired) is claimed, and the new owner writes.
		got, err := s.Claim(ctx(t), "replica-b", 10)
		if err != nil || len(got) != 1 || got[0].Token != 5 {
			t.Fatalf("Claim of the old row: %+v, %v", got, err)
		}
		if err := s.SaveState(ctx(t), got[0], a.State); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("replicas migrating together", func(t *testing.T) {
		db := pgtest.Shared(t).Database(t)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, to, err := store.Migrate(ctx(t), db.URL)
				if err == nil && to != store.SchemaVersion {
					err = errors.New("not at the schema version")
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		openPostgres(t, db.URL, store.Options{})
	})
}

// Secrets never reach the database in clear: without a key an analysis
// that has one is refused, naming the field; with one they are sealed, and
// no column of any table holds them, in clear, hex or base64.
func TestSecrets(t *testing.T) {
	const (
		token    = "tok-5f2e9a7c41"
		hookTok  = "hook-88c1d0e2b7"
		password = "pw-3b91f0c6d2"
	)
	doc := []byte("apiVersion: canaryd.io/v1alpha1\nkind: AnalysisTemplate\nspec:\n  metrics:\n  - provider:\n      prometheus:\n        authentication:\n          basicAuth: {username: u, password: " + password + "}\n")
	secretful := func(id string) store.NewAnalysis {
		return store.NewAnalysis{
			ID:          id,
			Document:    doc,
			Credentials: true,
			Args: []store.Arg{
				{Name: "api-token", Value: token},
				{Name: "from-secret", Value: token + "-ref", Secret: true},
				{Name: "namespace", Value: "shop"},
			},
			Webhook: &store.Webhook{URL: "https://user:" + hookTok + "@hooks.example.com/ci?token=" + hookTok, Events: []string{"completed"}},
			Owner:   "replica-a",
			State:   withArgs(running(id, t0, "m"), map[string]string{"api-token": token, "from-secret": token + "-ref", "namespace": "shop"}),
		}
	}

	t.Run("without a key", func(t *testing.T) {
		db := pgtest.Shared(t).Database(t)
		s := openPostgres(t, db.URL, store.Options{Migrate: true})
		for field, change := range map[string]func(*store.NewAnalysis){
			"args.api-token": func(n *store.NewAnalysis) {},
			"args.from-secret": func(n *store.NewAnalysis) {
				n.Args = n.Args[1:]
			},
			"webhook.url": func(n *store.NewAnalysis) { n.Args = n.Args[2:] },
			"spec": func(n *store.NewAnalysis) {
				n.Args, n.Webhook.URL = n.Args[2:], "https://hooks.example.com/ci"
			},
		} {
			n := secretful("a-" + strings.ReplaceAll(field, ".", "-"))
			change(&n)
			var se *store.SecretError
			if _, err := s.Create(ctx(t), n); !errors.As(err, &se) || se.Field != field {
				t.Errorf("%s: Create: %v, want a SecretError naming it", field, err)
			} else if !strings.Contains(err.Error(), "--store-secret-key-file") {
				t.Errorf("%s: the error does not say what to do: %v", field, err)
			}
		}
		// Nothing with a secret: stored in clear.
		create(t, s, store.NewAnalysis{ID: "plain", Document: []byte("kind: AnalysisTemplate"), Args: []store.Arg{{Name: "namespace", Value: "shop"}}})
		if a := get(t, s, "plain"); string(a.Document) != "kind: AnalysisTemplate" || a.SealError != nil {
			t.Fatalf("plain analysis: %+v", a)
		}
		noSecret(t, db.URL, token, hookTok, password)
	})

	t.Run("with a key", func(t *testing.T) {
		db := pgtest.Shared(t).Database(t)
		key := bytes.Repeat([]byte{7}, store.KeySize)
		s := openPostgres(t, db.URL, store.Options{Migrate: true, SecretKey: key})
		l := create(t, s, secretful("sealed"))
		// The engine masks secret arguments in the state it shows; one
		// left in clear by mistake is masked anyway.
		st := running("sealed", t0, "m")
		st.Args = map[string]string{"api-token": token, "namespace": "shop"}
		if err := s.SaveState(ctx(t), l, st); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMeasurement(ctx(t), l, store.Measurement{Metric: "m", Measurement: api.Measurement{Phase: api.PhaseSuccessful}}, &st); err != nil {
			t.Fatal(err)
		}
		noSecret(t, db.URL, token, hookTok, password, string(doc))

		a := get(t, s, "sealed")
		if a.SealError != nil || string(a.Document) != string(doc) {
			t.Fatalf("opened: %v, document %q", a.SealError, a.Document)
		}
		want := map[string]string{"api-token": token, "from-secret": token + "-ref", "namespace": "shop"}
		for _, arg := range a.Args {
			if want[arg.Name] != arg.Value {
				t.Errorf("arg %s = %q, want %q", arg.Name, arg.Value, want[arg.Name])
			}
		}
		if a.Webhook == nil || !strings.Contains(a.Webhook.URL, "token="+hookTok) {
			t.Errorf("webhook %+v: the URL to deliver to is lost", a.Webhook)
		}
		p, err := s.List(ctx(t), store.Filter{})
		if err != nil || len(p.Analyses) != 1 {
			t.Fatal(p, err)
		}
		for _, arg := range p.Analyses[0].Args {
			if arg.Secret == (arg.Value != "") {
				t.Errorf("List: arg %+v", arg)
			}
		}
		if w := p.Analyses[0].Webhook; w == nil || strings.Contains(w.URL, hookTok) {
			t.Errorf("List: webhook %+v", w)
		}
		if p, err := s.List(ctx(t), store.Filter{Args: map[string]string{"api-token": token}}); err != nil || len(p.Analyses) != 0 {
			t.Errorf("a secret argument's value is searchable: %+v, %v", p, err)
		}
		if p, err := s.List(ctx(t), store.Filter{Args: map[string]string{"from-secret": "*****"}}); err != nil || len(p.Analyses) != 0 {
			t.Errorf("the mask matches: %+v, %v", p, err)
		}

		// Another key, or none: shown, not opened.
		for name, k := range map[string][]byte{"another key": bytes.Repeat([]byte{8}, store.KeySize), "no key": nil} {
			other := openPostgres(t, db.URL, store.Options{SecretKey: k})
			a := get(t, other, "sealed")
			if a.SealError == nil || a.Document != nil {
				t.Errorf("%s: opened (%v)", name, a.SealError)
			}
			for _, arg := range a.Args {
				if arg.Secret && arg.Value != "" {
					t.Errorf("%s: arg %+v", name, arg)
				}
			}
		}
	})
}

func withArgs(a api.Analysis, args map[string]string) api.Analysis {
	a.Args = args
	return a
}

// noSecret fails when any row of any table, as text, holds one of the
// secrets, in clear, hexadecimal or base64.
func noSecret(t *testing.T, url string, secrets ...string) {
	t.Helper()
	c := conn(t, url)
	rows, err := c.Query(ctx(t), "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 4 {
		t.Fatalf("tables %v, %v", tables, err)
	}
	var dump strings.Builder
	for _, table := range tables {
		rows, err := c.Query(ctx(t), "SELECT t::text FROM "+pgx.Identifier{table}.Sanitize()+" t")
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			dump.WriteString(s + "\n")
		}
	}
	if !strings.Contains(dump.String(), "canaryd_analyses") && dump.Len() < 100 {
		t.Fatalf("the dump is empty: %q", dump.String())
	}
	for _, s := range secrets {
		for _, form := range []string{s, hex.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(dump.String(), form) {
				t.Errorf("the database holds a secret (%.12s…) in clear", form)
			}
		}
	}
}

// A store that is down fails with ErrUnavailable within the context, never
// hangs; its subscribers are told they may have missed writes; when it is
// back, reads, writes and notifications resume.
func TestStoreDown(t *testing.T) {
	cluster := pgtest.Start(t)
	db := cluster.Database(t)
	s := openPostgres(t, db.URL, store.Options{Migrate: true, LeaseTTL: time.Hour})
	l := create(t, s, store.NewAnalysis{ID: "a1"})
	notes, cancel, err := s.Subscribe(ctx(t), "a1")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	cluster.Stop()
	short, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if _, err := s.Get(short, "a1"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get with the store down: %v, want ErrUnavailable", err)
	}
	if err := s.SaveState(short, l, running("a1", t0, "m")); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("SaveState with the store down: %v, want ErrUnavailable", err)
	}
	if _, err := s.Claim(short, "b", 1); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Claim with the store down: %v", err)
	}
	if err := s.Ping(short); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ping with the store down: %v", err)
	}
	select {
	case n := <-notes:
		if n.Version != 0 {
			t.Fatalf("notification %+v, want version 0 (fetch, some may be missed)", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the subscriber was not told the connection was lost")
	}
	if _, _, err := s.Subscribe(short, "a2"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Subscribe with the store down: %v, want ErrUnavailable", err)
	}

	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	if a := get(t, s, "a1"); a.ID != "a1" {
		t.Fatalf("after the restart: %+v", a)
	}
	// Writes until one is heard: the listener reconnects with a backoff.
	deadline := time.After(30 * time.Second)
	for {
		if err := s.SaveState(ctx(t), l, running("a1", t0, "m")); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-notes:
			if n.Version > 0 {
				return
			}
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notification after the restart")
		}
	}
}

// Open refuses what is not a store URL without quoting it, and a postgres
// URL that does not answer with ErrUnavailable.
func TestOpenErrors(t *testing.T) {
	for _, raw := range []string{"mysql://root:pw-9f8e7d@db/x", "memory", "", "postgres://u:pw-9f8e7d@[::1"} {
		_, err := store.Open(ctx(t), raw, store.Options{})
		if raw == "memory" {
			if err != nil {
				t.Errorf("memory: %v", err)
			}
			continue
		}
		if err == nil || strings.Contains(err.Error(), "pw-9f8e7d") {
			t.Errorf("Open(%q): %v", raw, err)
		}
	}
	if kind, err := store.ParseURL("postgresql://h/d"); err != nil || kind != store.KindPostgres {
		t.Errorf("postgresql://: %s, %v", kind, err)
	}
	short, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := store.Open(short, "postgres://u:pw-9f8e7d@127.0.0.1:1/d?sslmode=disable", store.Options{}); !errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), "pw-9f8e7d") {
		t.Errorf("a postgres that does not answer: %v", err)
	}
	if _, err := store.OpenPostgres(short, "postgres://127.0.0.1:1/d", store.Options{SecretKey: []byte("short")}); err == nil {
		t.Error("a 5-byte key was taken")
	}
}

// Replicas are separate stores on one database: what one writes, another's
// subscribers hear of; claiming from several at once, no analysis is
// claimed twice.
func TestReplicas(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	clk := clock.NewFake(t0)
	replicas := make([]store.Store, 4)
	for i := range replicas {
		replicas[i] = openPostgres(t, db.URL, store.Options{Clock: clk, LeaseTTL: ttl, Migrate: i == 0})
	}
	const analyses = 300
	for i := range analyses {
		create(t, replicas[i%len(replicas)], store.NewAnalysis{ID: fmt.Sprintf("an-%03d", i), Owner: "dead"})
	}

	notes, cancel, err := replicas[1].Subscribe(ctx(t), "an-000")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	clk.Advance(ttl)
	var cs []claimer
	for r, s := range replicas {
		for g := range 4 {
			cs = append(cs, claimer{s: s, owner: fmt.Sprintf("replica-%d", r), n: 5 + g})
		}
	}
	owners := claimAll(t, cs)
	if len(owners) != analyses {
		t.Fatalf("%d claimed, want %d", len(owners), analyses)
	}

	// The owner of an-000 writes on its replica; replica 1 hears of it.
	l := owners["an-000"]
	var owner store.Store
	for i, s := range replicas {
		if l.Owner == fmt.Sprintf("replica-%d", i) {
			owner = s
		}
	}
	if err := owner.SaveState(ctx(t), l, running("an-000", t0, "m")); err != nil {
		t.Fatal(err)
	}
	want := get(t, replicas[2], "an-000").Version
	deadline := time.After(20 * time.Second)
	for {
		select {
		case n := <-notes:
			if n.ID != "an-000" {
				t.Fatalf("notification %+v", n)
			}
			if n.Version == want {
				return
			}
		case <-deadline:
			t.Fatalf("replica 1 did not hear of version %d", want)
		}
	}
}
