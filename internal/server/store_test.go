package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/store"
)

// The service on a store: two replicas (two Servers) on one PostgreSQL
// database, each answering for the analyses the other runs.

// openStore opens a postgres store on url, migrated, closed at the end.
func openStore(t *testing.T, url string, opts store.Options) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts.Migrate = true
	st, err := store.OpenPostgres(ctx, url, opts)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// slowly is a metric measured count times, interval apart.
func slowly(namespace string, count int, interval string) string {
	return fmt.Sprintf(`metrics:
- name: slowly
  interval: %s
  count: %d
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: %q
`, interval, count, promtest.SeedQuery(namespace))
}

func TestStoreEveryReplicaAnswers(t *testing.T) {
	prom := promtest.Start(t)
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{})
	// a renews its leases every 100ms: it sees a terminate request then.
	a := start(t, options{prometheus: []string{prom.URL}, store: st, leaseTTL: 300 * time.Millisecond})
	b := start(t, options{prometheus: []string{prom.URL}, store: st, maxStreams: 1})

	resp := a.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good"))
	if resp.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", resp.status, resp.body)
	}
	id := resp.analysis(t).ID

	// GET on the replica that does not run it.
	got := b.do(http.MethodGet, "/v1/analyses/"+id, "", "")
	if got.status != http.StatusOK || got.analysis(t).Phase != api.PhaseRunning {
		t.Fatalf("GET on the other replica: %d %s", got.status, got.body)
	}
	// The list of the other replica has it.
	list := b.do(http.MethodGet, "/v1/analyses?phase=Running", "", "")
	if list.status != http.StatusOK || !strings.Contains(string(list.body), id) {
		t.Fatalf("list on the other replica: %d %s", list.status, list.body)
	}

	// A stream on the other replica sees new measurements, then the end.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, stream := b.openStream(ctx, http.MethodGet, "/v1/analyses/"+id, "", "", "application/x-ndjson")
	defer stream.Body.Close()
	events := newEventReader(t, stream)
	seen := 0
	for seen < 3 {
		ev, ok := events.next()
		if !ok {
			t.Fatal("the stream on the other replica ended early")
		}
		if ev.Type == api.EventMeasurement {
			seen++
		}
	}

	// --max-streams bounds the streams of one analysis on every replica.
	if again := b.do(http.MethodGet, "/v1/analyses/"+id, "", "", "Accept", "application/x-ndjson"); again.status != http.StatusTooManyRequests ||
		again.problem(t).Type != server.ProblemTooManyStreams {
		t.Errorf("a second stream on the other replica, with --max-streams 1: %d %s, want 429", again.status, again.body)
	}

	// DELETE on the other replica: the owner terminates it, and the
	// other's stream ends with it.
	del := b.do(http.MethodDelete, "/v1/analyses/"+id, "", "")
	if del.status != http.StatusOK || del.analysis(t).Message != "Run Terminated" {
		t.Fatalf("DELETE on the other replica: %d %s, want 200, terminated", del.status, del.body)
	}
	if a.logs.FilterMessageSnippet("terminated by request to another replica").Len() != 1 {
		t.Error("the owner did not say it terminated the analysis at another replica's request")
	}
	var last api.Event
	for {
		ev, ok := events.next()
		if !ok {
			break
		}
		last = ev
	}
	if last.Type != api.EventCompleted || last.Analysis == nil || last.Analysis.Phase != api.PhaseSuccessful {
		t.Fatalf("the other replica's stream ended with %+v, want the completed event, Successful", last)
	}
	final := b.waitFinished(id)
	if final.Phase != api.PhaseSuccessful || final.MetricResults[0].Count < 3 {
		t.Errorf("GET on the other replica after the end: %s, count %d", final.Phase, final.MetricResults[0].Count)
	}
	// A finished analysis can be deleted anywhere: it is returned as it is.
	if del := b.do(http.MethodDelete, "/v1/analyses/"+id, "", ""); del.status != http.StatusOK || del.analysis(t).Phase != api.PhaseSuccessful {
		t.Errorf("DELETE of the finished analysis on the other replica: %d %s", del.status, del.body)
	}
	// Unknown everywhere: 404.
	if nf := b.do(http.MethodGet, "/v1/analyses/nosuchanalysis", "", ""); nf.status != http.StatusNotFound {
		t.Errorf("GET of no analysis: %d", nf.status)
	}
}

// TestStoreLeaseLost: a replica whose lease another has claimed stops
// the analysis at once and writes nothing more (the store's fencing
// refuses its writes, and it does not try again).
func TestStoreLeaseLost(t *testing.T) {
	prom := promtest.Start(t)
	clk := clock.NewFake(time.Now())
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{Clock: clk, LeaseTTL: time.Minute})
	a := start(t, options{prometheus: []string{prom.URL}, store: st, leaseTTL: time.Minute})

	id := a.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")).analysis(t).ID
	waitFor(t, "two measurements stored", func() bool {
		s, err := st.Get(context.Background(), id)
		return err == nil && len(s.State.MetricResults) > 0 && s.State.MetricResults[0].Count >= 2
	})
	// The lease expires (the replica seems dead) and another claims it.
	clk.Advance(2 * time.Minute)
	// A claim skips a row locked by a write under way: claim again.
	var claimed []store.Lease
	var err error
	for range 50 {
		if claimed, err = st.Claim(context.Background(), "intruder", 10); err != nil || len(claimed) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || len(claimed) != 1 || claimed[0].ID != id {
		s, gerr := st.Get(context.Background(), id)
		if gerr == nil {
			t.Fatalf("Claim: %v %v; the analysis: %s, completed %v, lease %+v, now %v", claimed, err, s.Phase, s.CompletedAt, s.Lease, clk.Now())
		}
		t.Fatalf("Claim: %v %v", claimed, err)
	}
	waitFor(t, "the replica to stop the analysis", func() bool {
		return a.logs.FilterMessageSnippet("lost the analysis' lease").Len() > 0
	})
	stored, _ := st.Get(context.Background(), id)
	time.Sleep(300 * time.Millisecond) // six intervals of the metric
	again, _ := st.Get(context.Background(), id)
	if again.Version != stored.Version || again.Phase != api.PhaseRunning {
		t.Errorf("the stale replica wrote on: version %d then %d, phase %s", stored.Version, again.Version, again.Phase)
	}
	// Its GET is the store's now: the analysis is the claimant's.
	if got := a.do(http.MethodGet, "/v1/analyses/"+id, "", "").analysis(t); got.Phase != api.PhaseRunning {
		t.Errorf("GET on the replica that lost it: %s, want Running as stored", got.Phase)
	}
}

// TestStoreOutage: while the store does not answer, /readyz is not ready
// and what needs the store is a 503 with Retry-After; the analysis running
// goes on, and its results reach the store once it is back. Its webhook's
// completed event waits for the store too, however long it is down: sent
// before it is recorded, it could be made again, with another body, by a
// replica that takes the analysis over.
func TestStoreOutage(t *testing.T) {
	prom := promtest.Start(t)
	pg := pgtest.Start(t)
	rc := newReceiver(t, nil)
	st := openStore(t, pg.Database(t).URL, store.Options{})
	a := start(t, options{prometheus: []string{prom.URL}, store: st, webhookAllow: []string{rc.prefix()}})
	b := start(t, options{prometheus: []string{prom.URL}, store: st})

	query := "?webhook=" + url.QueryEscape(rc.prefix()+"/x")
	id := a.do(http.MethodPost, "/v1/analyses"+query, yamlType, slowly("echo-good", 6, "300ms")).analysis(t).ID
	pg.Stop()

	ready := b.do(http.MethodGet, "/readyz", "", "")
	if ready.status != http.StatusServiceUnavailable || ready.header.Get("Retry-After") == "" {
		t.Errorf("/readyz with the store down: %d (Retry-After %q)", ready.status, ready.header.Get("Retry-After"))
	}
	for _, req := range [][3]string{
		{http.MethodGet, "/v1/analyses", ""},
		{http.MethodGet, "/v1/analyses/" + id, ""},
		{http.MethodDelete, "/v1/analyses/" + id, ""},
		{http.MethodPost, "/v1/analyses", forever("echo-good")},
	} {
		resp := b.do(req[0], req[1], yamlType, req[2])
		if resp.status != http.StatusServiceUnavailable || resp.header.Get("Retry-After") == "" ||
			resp.problem(t).Type != server.ProblemStoreUnavailable {
			t.Errorf("%s %s with the store down: %d (Retry-After %q) %s", req[0], req[1], resp.status, resp.header.Get("Retry-After"), resp.body)
		}
	}
	// The owner goes on: it holds the analysis in memory.
	if final := a.waitFinished(id); final.Phase != api.PhaseSuccessful || final.MetricResults[0].Count != 6 {
		t.Fatalf("the owner's analysis during the outage: %s, count %d", final.Phase, final.MetricResults[0].Count)
	}
	// Longer than one call to the store may take: the event still waits.
	time.Sleep(server.StoreTimeout + time.Second)
	if n := len(rc.deliveries()); n != 0 {
		t.Errorf("%d webhook deliveries while the store was down, want none before the event is recorded", n)
	}

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the completed event delivered once the store is back", func() bool { return len(rc.deliveries()) > 0 })
	if d := rc.deliveries()[0]; d.header.Get("webhook-id") != id+".1" || d.event(t).Type != api.EventCompleted {
		t.Errorf("delivered %s as %s, want the completed event as %s.1", d.body, d.header.Get("webhook-id"), id)
	}
	waitFor(t, "/readyz ready again", func() bool { return b.do(http.MethodGet, "/readyz", "", "").status == http.StatusOK })
	// What the owner measured meanwhile reaches the store.
	waitFor(t, "the results written after the outage", func() bool {
		got := b.do(http.MethodGet, "/v1/analyses/"+id, "", "")
		return got.status == http.StatusOK && got.analysis(t).Phase == api.PhaseSuccessful
	})
	ms, err := st.Measurements(context.Background(), id, store.MeasurementRange{})
	if err != nil || len(ms) != 6 {
		t.Errorf("measurements stored: %d (%v), want 6", len(ms), err)
	}
}

// TestStoreHandOverAtShutdown: a replica that shuts down hands its
// analyses over at once; another resumes each where it stood, and it ends
// as undisturbed, each measurement stored once.
func TestStoreHandOverAtShutdown(t *testing.T) {
	prom := promtest.Start(t)
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{})
	a := start(t, options{prometheus: []string{prom.URL}, store: st})
	// b claims every 100ms.
	b := start(t, options{prometheus: []string{prom.URL}, store: st, leaseTTL: 300 * time.Millisecond})

	id := a.do(http.MethodPost, "/v1/analyses", yamlType, slowly("echo-good", 6, "200ms")).analysis(t).ID
	// One waits on another analysis there: it is told the analysis goes on.
	waiter := make(chan response, 1)
	go func() {
		resp, err := a.send(http.MethodPost, "/v1/analyses?wait=true", yamlType, slowly("echo-good", 6, "200ms"))
		if err != nil {
			t.Error(err)
		}
		waiter <- resp
	}()
	waitFor(t, "two measurements stored", func() bool {
		s, err := st.Get(context.Background(), id)
		return err == nil && s.State.MetricResults[0].Count >= 2
	})
	// On a busy machine the waiter's request may come later than the
	// first analysis' two measurements: it must be running on a before a
	// drains, or it would be refused as shutting down, with no Location.
	waitFor(t, "the waiter's analysis running", func() bool { return len(a.analyses.List()) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if aborted := a.analyses.Drain(ctx); aborted != 0 {
		t.Errorf("Drain aborted %d analyses; with a store it hands them over", aborted)
	}
	if resp := <-waiter; resp.status != http.StatusServiceUnavailable || resp.problem(t).Type != server.ProblemShuttingDown ||
		resp.header.Get("Location") == "" {
		t.Errorf("the waiter on the replica that stopped: %d %s (Location %q), want 503 shutting-down with the Location", resp.status, resp.body, resp.header.Get("Location"))
	}
	if a.logs.FilterMessageSnippet("handed over").Len() == 0 {
		t.Error("the replica did not say it handed its analyses over")
	}
	final := b.waitFinished(id)
	if final.Phase != api.PhaseSuccessful || final.MetricResults[0].Count != 6 {
		t.Fatalf("resumed on the other replica: %s (%s), count %d; want Successful, 6", final.Phase, final.Message, final.MetricResults[0].Count)
	}
	if n := b.logs.FilterMessageSnippet("analysis resumed").Len(); n != 2 {
		t.Errorf("the other replica says it resumed %d analyses, want both", n)
	}
	waitStored(t, st, id)
	ms, err := st.Measurements(context.Background(), id, store.MeasurementRange{})
	if err != nil || len(ms) != 6 {
		t.Fatalf("measurements stored: %d (%v), want 6", len(ms), err)
	}
	for i, m := range ms {
		if m.Index != i {
			t.Errorf("measurement %d has index %d", i, m.Index)
		}
	}
}

// TestStoreAdoptsExpired: the analysis of a replica that died (its lease
// expired, nothing handed over) is claimed by another and resumed from the
// stored state: its measurement taken counts, its next is taken.
func TestStoreAdoptsExpired(t *testing.T) {
	prom := promtest.Start(t)
	clk := clock.NewFake(time.Now())
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{Clock: clk, LeaseTTL: time.Minute})
	b := start(t, options{prometheus: []string{prom.URL}, store: st, leaseTTL: 300 * time.Millisecond})

	// What the dead replica left: one measurement of three, and one in
	// flight.
	started := time.Now().Add(-time.Second)
	finished := started.Add(10 * time.Millisecond)
	taken := api.Measurement{Phase: api.PhaseSuccessful, Value: "[0.995]", StartedAt: &started, FinishedAt: &finished}
	state := api.Analysis{ID: "dead-replica.one", Phase: api.PhaseRunning, StartedAt: &started, MetricResults: []api.MetricResult{{
		Name: "slowly", Phase: api.PhaseRunning, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
		Measurements: []api.Measurement{taken, {Phase: api.PhaseRunning, StartedAt: &finished}},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := st.Create(ctx, store.NewAnalysis{ID: state.ID, Document: []byte(slowly("echo-good", 3, "100ms")), State: state, Owner: "dead-replica"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMeasurement(ctx, l, store.Measurement{Metric: "slowly", Index: 0, Measurement: taken}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // several claims: the lease holds
	if got, _ := st.Get(ctx, state.ID); got.Lease.Owner != "dead-replica" {
		t.Fatalf("claimed while its lease held, by %s", got.Lease.Owner)
	}

	clk.Advance(2 * time.Minute)
	final := b.waitFinished(state.ID)
	if final.Phase != api.PhaseSuccessful || final.MetricResults[0].Count != 3 {
		t.Fatalf("adopted: %s (%s), count %d; want Successful, 3", final.Phase, final.Message, final.MetricResults[0].Count)
	}
	if !final.StartedAt.Equal(started) {
		t.Errorf("startedAt %v, want the stored %v", final.StartedAt, started)
	}
	waitStored(t, st, state.ID)
	ms, err := st.Measurements(ctx, state.ID, store.MeasurementRange{})
	if err != nil || len(ms) != 3 || !ms[0].Measurement.FinishedAt.Equal(finished) {
		for _, m := range ms {
			t.Logf("stored: %s %d %s %v", m.Metric, m.Index, m.Measurement.Phase, m.Measurement.FinishedAt)
		}
		t.Errorf("measurements stored: %d (%v), want 3, the first the dead replica's", len(ms), err)
	}
}

// TestStoreWebhookHandOver: an analysis handed over mid-run goes on
// sending its webhook from the replica that resumed it: every event
// reaches the receiver, numbered on from where the first replica left
// off, each with one webhook-id whoever sent it, and the store owes
// nothing at the end.
func TestStoreWebhookHandOver(t *testing.T) {
	prom := promtest.Start(t)
	rc := newReceiver(t, nil)
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{})
	a := start(t, options{prometheus: []string{prom.URL}, store: st, webhookAllow: []string{rc.prefix()}})
	b := start(t, options{prometheus: []string{prom.URL}, store: st, webhookAllow: []string{rc.prefix()}, leaseTTL: 300 * time.Millisecond})

	query := "?webhook=" + url.QueryEscape(rc.prefix()+"/x") + "&webhook.events=measurement,completed"
	id := a.do(http.MethodPost, "/v1/analyses"+query, yamlType, slowly("echo-good", 6, "200ms")).analysis(t).ID
	rc.wait(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.analyses.Drain(ctx)
	a.analyses.WaitWebhooks(ctx)

	if final := b.waitFinished(id); final.Phase != api.PhaseSuccessful || final.MetricResults[0].Count != 6 {
		t.Fatalf("resumed: %s, count %d", final.Phase, final.MetricResults[0].Count)
	}
	var completed []string
	waitFor(t, "the completed event", func() bool {
		completed = nil
		for _, d := range rc.deliveries() {
			if d.event(t).Type == api.EventCompleted {
				completed = append(completed, d.header.Get("webhook-id"))
			}
		}
		return len(completed) > 0
	})
	bodies := map[string]string{}
	for _, d := range rc.deliveries() {
		wid := d.header.Get("webhook-id")
		if prev, ok := bodies[wid]; ok && prev != string(d.body) {
			t.Errorf("webhook-id %s carried two events:\n%s\n%s", wid, prev, d.body)
		}
		bodies[wid] = string(d.body)
	}
	// Six measurements and the completed event: ids 1 to 7.
	for n := 1; n <= 7; n++ {
		if _, ok := bodies[fmt.Sprintf("%s.%d", id, n)]; !ok {
			t.Errorf("no event %s.%d was delivered (got %d ids)", id, n, len(bodies))
		}
	}
	if len(bodies) != 7 || len(completed) < 1 || completed[0] != id+".7" {
		t.Errorf("%d distinct events, completed as %v; want 7, the completed one %s.7", len(bodies), completed, id)
	}
	waitFor(t, "nothing owed", func() bool {
		s, err := st.Get(context.Background(), id)
		return err == nil && s.DeliveriesOwed == 0
	})
}

// waitStored waits until the store has the analysis' end: what led to it
// is written before it.
func waitStored(t *testing.T, st store.Store, id string) {
	t.Helper()
	waitFor(t, "the end stored", func() bool {
		a, err := st.Get(context.Background(), id)
		return err == nil && a.CompletedAt != nil
	})
}

// TestStoreAdoptsOwedDeliveries: the webhook events a dead replica owed
// are delivered by the replica that claims its analyses, with their
// webhook-ids: a completed analysis' owed event, and the completed event
// of one whose replica died between recording that event and saving the
// end, which the claimant saves from it rather than running it again.
func TestStoreAdoptsOwedDeliveries(t *testing.T) {
	prom := promtest.Start(t)
	rc := newReceiver(t, nil)
	clk := clock.NewFake(time.Now())
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{Clock: clk, LeaseTTL: time.Minute})
	b := start(t, options{prometheus: []string{prom.URL}, store: st, webhookAllow: []string{rc.prefix()}, leaseTTL: 300 * time.Millisecond})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	started := time.Now().Add(-time.Minute)
	ended := started.Add(30 * time.Second)
	hook := &store.Webhook{URL: rc.prefix() + "/x", Events: []string{"completed"}}
	enqueued := map[string]string{}
	for _, id := range []string{"dead.done", "dead.ending"} {
		final := api.Analysis{ID: id, Phase: api.PhaseSuccessful, StartedAt: &started, CompletedAt: &ended,
			MetricResults: []api.MetricResult{{Name: "slowly", Phase: api.PhaseSuccessful, Count: 1, Successful: 1, Measurements: []api.Measurement{}}}}
		state := final
		if id == "dead.ending" {
			// Its end was not saved: the store shows it running.
			state.Phase, state.CompletedAt = api.PhaseRunning, nil
			state.MetricResults = []api.MetricResult{{Name: "slowly", Phase: api.PhaseRunning, Measurements: []api.Measurement{}}}
		}
		l, err := st.Create(ctx, store.NewAnalysis{ID: id, Document: []byte(slowly("echo-good", 1, "100ms")), State: state, Webhook: hook, Owner: "dead-replica"})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := api.Marshal(api.Event{Type: api.EventCompleted, AnalysisID: id, Analysis: &final})
		if err := st.Enqueue(ctx, l, store.Delivery{WebhookID: id + ".1", Seq: 1, Event: body}); err != nil {
			t.Fatal(err)
		}
		enqueued[id+".1"] = string(body)
	}
	clk.Advance(2 * time.Minute)

	waitFor(t, "both owed events delivered", func() bool { return len(rc.deliveries()) >= 2 })
	got := map[string]bool{}
	for _, d := range rc.deliveries() {
		wid := d.header.Get("webhook-id")
		got[wid] = true
		if ev := d.event(t); ev.Type != api.EventCompleted || ev.Analysis == nil || ev.Analysis.Phase != api.PhaseSuccessful {
			t.Errorf("delivered %s", d.body)
		}
		// Sent as the dead replica made it, byte for byte: a receiver
		// that had it from there gets the same body and signature.
		if string(d.body) != enqueued[wid] {
			t.Errorf("%s delivered as\n%s\nnot as it was made:\n%s", wid, d.body, enqueued[wid])
		}
	}
	if !got["dead.done.1"] || !got["dead.ending.1"] || len(got) != 2 {
		t.Errorf("delivered %v, want dead.done.1 and dead.ending.1", got)
	}
	for _, id := range []string{"dead.done", "dead.ending"} {
		waitFor(t, id+" owing nothing", func() bool {
			a, err := st.Get(ctx, id)
			return err == nil && a.DeliveriesOwed == 0
		})
		a, _ := st.Get(ctx, id)
		if a.Phase != api.PhaseSuccessful || a.CompletedAt == nil || a.State.MetricResults[0].Count != 1 {
			t.Errorf("%s: %s, count %d; want its end, Successful, measured once", id, a.Phase, a.State.MetricResults[0].Count)
		}
	}
	if n := b.logs.FilterMessageSnippet("analysis resumed").Len(); n != 0 {
		t.Errorf("%d analyses resumed; both had ended", n)
	}
}
