package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// The chaos test's scale: analyses per wave (three waves, one per
// disturbance), their interval and counts (the spec of an analysis cycles
// through the kinds and counts). Every analysis lasts a few intervals, so
// that each wave is running when its disturbance comes.
const (
	chaosWave     = 100
	chaosInterval = 400 * time.Millisecond
	chaosMinCount = 5
	chaosMaxCount = 10
	// chaosLease is the replicas' lease: how long a SIGKILLed replica's
	// analyses wait before another claims them.
	chaosLease = 3 * time.Second
	// chaosGrace is the replicas' --shutdown-grace.
	chaosGrace = 5 * time.Second
	// chaosRefuse is the share of events whose first delivery the
	// receiver refuses (503), to be retried.
	chaosRefuse = 0.1
)

// chaosSeedEnv repeats a run: the seed picks the replica killed, the
// moments of the disturbances and the deliveries refused.
const chaosSeedEnv = "CANARYD_CHAOS_SEED"

// chaosSpecs cycles through every kind and count.
func chaosSpecs(n int, interval time.Duration) []chaosSpec {
	specs := make([]chaosSpec, n)
	counts := chaosMaxCount - chaosMinCount + 1
	for i := range specs {
		// Three of a kind in a row, so that the kinds do not follow the
		// round-robin of the replicas.
		k := int(chaosKinds)
		specs[i] = chaosSpec{kind: chaosKind((i / k) % k), count: chaosMinCount + (i/(k*k))%counts, interval: interval}
	}
	return specs
}

// TestChaos runs three `canaryd serve` replicas on one PostgreSQL, a real
// Prometheus and a webhook receiver, starts three waves of analyses with
// webhooks round-robin across the replicas, and disturbs them: during the
// first wave one replica is SIGKILLed at a random moment and started again;
// during the second all three are restarted one by one with SIGTERM (a
// rolling upgrade); during the third PostgreSQL is restarted. Every
// analysis must end in the phase an undisturbed control run reaches; every
// completed event must reach the receiver, every copy of one event with
// one webhook-id; and a sample of the analyses is read (GET) and streamed
// (NDJSON) from every replica throughout, where any answer but 200 fails
// the test, except a 503 problem with Retry-After while PostgreSQL is
// down.
func TestChaos(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(chaosSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", chaosSeedEnv, v, err)
		}
	}
	t.Logf("seed %d (%s=%d repeats the run)", seed, chaosSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	cluster := pgtest.Start(t)
	db := cluster.Database(t)
	prom := promtest.Start(t)
	hooks := newChaosHooks(t, seed, chaosRefuse)
	hookPrefix := hooks.srv.URL + "/hooks/"
	keyFile := filepath.Join(t.TempDir(), "store.key")
	if err := os.WriteFile(keyFile, []byte("5b1c0e4d8a7f6e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a190817\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--prometheus-url", prom.URL, "--webhook-allow", hookPrefix, "--max-analyses", "1000",
		"--webhook-max-elapsed", "5m", "--shutdown-grace", chaosGrace.String()}

	// The control: each distinct spec once, undisturbed, on one replica
	// that keeps its analyses in memory.
	control := chaosControl(t, append([]string{"--store", "memory:"}, common...), chaosSpecs(3*chaosWave, chaosInterval))

	args := append(chaosStoreFlags(db.URL, keyFile, chaosLease), common...)
	var replicas []*chaosReplica
	for i := range 3 {
		replicas = append(replicas, newChaosReplica(t, fmt.Sprintf("replica-%d", i), args))
	}
	var storeDown atomic.Bool
	var storeGen atomic.Int64
	reader := newChaosReader(t, replicas, &storeDown, &storeGen)
	defer reader.close()

	var (
		mu       sync.Mutex
		analyses []chaosAnalysis
		next     int // round-robin
	)
	client := &http.Client{Timeout: 30 * time.Second}
	specs := chaosSpecs(3*chaosWave, chaosInterval)
	// wave starts analyses specs[from:to] round-robin across the replicas
	// that are up, from goroutines of its own; a sample is read from
	// every replica throughout. The returned channel is closed when all
	// have started.
	wave := func(name string, from, to int) <-chan struct{} {
		done := make(chan struct{})
		jobs := make(chan chaosSpec)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			// Ends when jobs is closed and drained.
			go func() {
				defer wg.Done()
				for spec := range jobs {
					for attempt := 0; ; attempt++ {
						mu.Lock()
						r := replicas[next%len(replicas)]
						idx := next % len(replicas)
						next++
						mu.Unlock()
						a, ok, err := r.post(client, spec, hookPrefix+name)
						if !ok {
							continue // down: the next replica
						}
						if err != nil {
							t.Errorf("starting an analysis on %s: %v", r.name, err)
							break
						}
						mu.Lock()
						analyses = append(analyses, chaosAnalysis{id: a.ID, spec: spec, replica: idx, posted: time.Now()})
						sample := len(analyses)%10 == 0
						mu.Unlock()
						if sample {
							reader.add(a.ID)
						}
						break
					}
				}
			}()
		}
		// Ends when every spec of the wave is handed out and started.
		go func() {
			for _, s := range specs[from:to] {
				jobs <- s
			}
			close(jobs)
			wg.Wait()
			close(done)
		}()
		return done
	}
	jitter := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	began := time.Now()
	since := func() string {
		return time.Since(began).Round(time.Millisecond).String() + time.Now().UTC().Format(" (15:04:05.000)")
	}

	// 1. One replica SIGKILLed at a random moment while the first wave
	//    starts and runs, and started again.
	started := wave("kill", 0, chaosWave)
	victim := replicas[rng.IntN(len(replicas))]
	time.Sleep(jitter(200*time.Millisecond, 2500*time.Millisecond))
	victim.down()
	victim.signal(t, syscall.SIGKILL)
	victim.wait(t, 10*time.Second)
	t.Logf("%s: %s SIGKILLed", since(), victim.name)
	time.Sleep(jitter(100*time.Millisecond, time.Second))
	victim.start(t)
	t.Logf("%s: %s started again", since(), victim.name)
	<-started

	// 2. A rolling upgrade during the second wave: each replica in turn
	//    SIGTERMed, waited for, started again.
	started = wave("rolling", chaosWave, 2*chaosWave)
	time.Sleep(jitter(200*time.Millisecond, time.Second))
	for _, r := range replicas {
		r.down()
		r.signal(t, syscall.SIGTERM)
		if code := r.wait(t, chaosGrace+20*time.Second); code != 0 {
			t.Errorf("%s exited with %d after SIGTERM, want 0:\n%s", r.name, code, tail(r.log(), 4000))
		}
		t.Logf("%s: %s stopped (SIGTERM)", since(), r.name)
		r.start(t)
		t.Logf("%s: %s started again", since(), r.name)
		time.Sleep(jitter(100*time.Millisecond, 500*time.Millisecond))
	}
	<-started

	// 3. PostgreSQL restarted during the third wave, once it has started.
	<-wave("postgres", 2*chaosWave, 3*chaosWave)
	time.Sleep(jitter(200*time.Millisecond, time.Second))
	storeGen.Add(1)
	storeDown.Store(true)
	cluster.Stop()
	t.Logf("%s: PostgreSQL stopped", since())
	time.Sleep(jitter(time.Second, 3*time.Second))
	if err := cluster.Start(); err != nil {
		t.Fatalf("starting PostgreSQL again: %v", err)
	}
	t.Logf("%s: PostgreSQL started again", since())
	// The outage ends, for the readers, when every replica is ready.
	for _, r := range replicas {
		chaosWaitReady(t, r, 60*time.Second)
	}
	time.Sleep(time.Second)
	storeDown.Store(false)
	storeGen.Add(1)
	t.Logf("%s: every replica ready again", since())

	// Every analysis ends, in its control's phase, readable from every
	// replica.
	mu.Lock()
	all := append([]chaosAnalysis(nil), analyses...)
	mu.Unlock()
	if len(all) != 3*chaosWave {
		t.Fatalf("%d analyses started, want %d", len(all), 3*chaosWave)
	}
	// readers reports what the readers found wrong.
	readers := func() {
		reader.mu.Lock()
		defer reader.mu.Unlock()
		for _, f := range reader.failures {
			t.Error(f)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; i < len(all); {
		a := all[i]
		r := replicas[i%len(replicas)]
		status, got, detail, err := chaosGet(client, r.base, a.id)
		if err == nil && status == http.StatusOK && got.Phase.Completed() {
			i++
			continue
		}
		if err != nil || status != http.StatusOK || time.Now().After(deadline) {
			reader.close()
			readers()
			t.Fatalf("%s (%s, started on %s) has not completed: from %s %d %s %v %s; seed %d; replicas' logs:\n%s",
				a.id, a.spec.key(), replicas[a.replica].name, r.name, status, got.Phase, err, detail, seed, chaosLogs(replicas))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s: every analysis completed", since())
	// The streams of the sample see the completed event, the last opened
	// again a moment ago.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		reader.mu.Lock()
		done := len(reader.streams) == len(reader.ids)*len(replicas)
		reader.mu.Unlock()
		if done {
			break
		}
	}
	reader.close()

	for _, a := range all {
		want := control[a.spec.key()]
		for _, r := range replicas {
			status, got, detail, err := chaosGet(client, r.base, a.id)
			if err != nil || status != http.StatusOK {
				t.Errorf("GET %s from %s: %d %v %s", a.id, r.name, status, err, detail)
				continue
			}
			if o := chaosOutcomeOf(got); o != want {
				t.Errorf("%s (%s, started on %s): %s %q from %s, want %s as in the control", a.id, a.spec.key(), replicas[a.replica].name, o, got.Message, r.name, want)
			}
		}
	}

	// Every completed event delivered, every copy with one webhook-id.
	deadline = time.Now().Add(time.Minute)
	redelivered, refused := 0, 0
	for _, a := range all {
		var accepted []chaosDelivery
		var ids []string
		for {
			accepted, ids = hooks.completed(a.id)
			if len(accepted) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(accepted) == 0 {
			t.Errorf("%s (%s): no completed event delivered (%d attempts refused)", a.id, a.spec.key(), len(ids))
			continue
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Errorf("%s: the copies of its completed event carry webhook-ids %q, want one", a.id, ids)
				break
			}
		}
		for _, d := range accepted {
			if d.event.Analysis == nil {
				t.Errorf("%s: a completed event delivered without the analysis", a.id)
			} else if o := chaosOutcomeOf(*d.event.Analysis); o != control[a.spec.key()] {
				t.Errorf("%s: a completed event delivered with %s, want %s", a.id, o, control[a.spec.key()])
			}
		}
		redelivered += len(accepted) - 1
		refused += len(ids) - len(accepted)
	}
	hooks.mu.Lock()
	for _, p := range hooks.problems {
		t.Error(p)
	}
	hooks.mu.Unlock()

	// The readers: no failure, and each sampled stream ended with the
	// control's phase on every replica.
	readers()
	reader.mu.Lock()
	sampled, streamed := len(reader.ids), len(reader.streams)
	for _, a := range all {
		for _, r := range replicas {
			if phase, ok := reader.streams[r.name+" "+a.id]; ok && phase != control[a.spec.key()].phase {
				t.Errorf("the stream of %s from %s ended %s, want %s", a.id, r.name, phase, control[a.spec.key()].phase)
			}
		}
	}
	if streamed != sampled*len(replicas) {
		t.Errorf("%d streams ended with the completed event, want %d (%d analyses sampled, on each of %d replicas)", streamed, sampled*len(replicas), sampled, len(replicas))
		for _, id := range reader.ids {
			for _, r := range replicas {
				if _, ok := reader.streams[r.name+" "+id]; !ok {
					t.Errorf("the stream of %s from %s did not end with the completed event; last: %s", id, r.name, reader.last[r.name+" "+id])
				}
			}
		}
	}
	t.Logf("readers: %d GETs, %d answered 503 during the outage; %d analyses streamed from every replica, %d streams opened again after their replica or the store went away",
		reader.gets, reader.outages, sampled, reader.reopened)
	reader.mu.Unlock()
	t.Logf("webhooks: %d first deliveries refused and retried, %d completed events delivered more than once (de-duplicated by webhook-id)", refused, redelivered)

	// Stopped, nothing left running.
	for _, r := range replicas {
		r.down()
		r.signal(t, syscall.SIGTERM)
	}
	for _, r := range replicas {
		if code := r.wait(t, chaosGrace+20*time.Second); code != 0 {
			t.Errorf("%s exited with %d at the end, want 0:\n%s", r.name, code, tail(r.log(), 4000))
		}
		if !r.exitedNow() {
			t.Errorf("%s still runs", r.name)
		}
	}
	if t.Failed() {
		t.Logf("seed %d; replicas' logs:\n%s", seed, chaosLogs(replicas))
	}
}

// chaosWaitReady waits until the replica's /readyz answers 200.
func chaosWaitReady(t testing.TB, r *chaosReplica, within time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	for {
		resp, err := client.Get(r.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %s: %v\n%s", r.name, within, err, tail(r.log(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// chaosAnalysis is one analysis the test started.
type chaosAnalysis struct {
	id      string
	spec    chaosSpec
	replica int // the replica it was started on
	posted  time.Time
}

// exitedNow says whether the process has exited.
func (r *chaosReplica) exitedNow() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd == nil || r.cmd.ProcessState != nil
}
