package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// The store benchmark's scale, as the figures in docs/performance.md are
// given: analyses, their interval and count, the replicas' lease, and when
// the replica is killed.
const (
	benchStoreAnalyses = 1000
	benchStoreInterval = time.Second
	benchStoreCount    = 10
	benchStoreLease    = 10 * time.Second
	benchStoreKillAt   = 4 * time.Second
	// benchStoreAnalysesEnv overrides benchStoreAnalyses, for a quick run.
	benchStoreAnalysesEnv = "CANARYD_BENCH_STORE_ANALYSES"
)

// chaosPGCounters are PostgreSQL's counters of the benchmark's database.
type chaosPGCounters struct {
	commits, inserted, updated, deleted int64
	wal                                 int64 // bytes of WAL written, cluster-wide
}

func chaosPGStats(ctx context.Context, url string) (chaosPGCounters, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return chaosPGCounters{}, err
	}
	defer conn.Close(ctx)
	// The counters are flushed by each backend about once a second, and
	// at once by pg_stat_force_next_flush (PostgreSQL 15) in this one.
	var s chaosPGCounters
	err = conn.QueryRow(ctx, `SELECT xact_commit, tup_inserted, tup_updated, tup_deleted,
		pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.commits, &s.inserted, &s.updated, &s.deleted, &s.wal)
	return s, err
}

// chaosRowSizes returns the mean size of a row of the analyses and of the
// measurements, in bytes, as PostgreSQL stores them (compressed, TOAST
// included).
func chaosRowSizes(ctx context.Context, url string) (analysis, measurement float64, err error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT (SELECT coalesce(avg(pg_column_size(a.*)), 0) FROM canaryd_analyses a)::float8,
		(SELECT coalesce(avg(pg_column_size(m.*)), 0) FROM canaryd_measurements m)::float8`).Scan(&analysis, &measurement)
	return analysis, measurement, err
}

// BenchmarkStoreReplicas runs 1,000 concurrent analyses (interval 1 s,
// count 10; a third each Successful, Failed and Inconclusive by their
// data) on three `canaryd serve` replicas on one PostgreSQL and a real
// Prometheus, started round-robin, and SIGKILLs one replica 4 s in; the
// other two adopt its analyses once their leases (10 s) expire. It reports
// the share of analyses that end in their control's phase, the extra time
// to a verdict of the adopted analyses beside the undisturbed ones (the
// target: at most one interval plus the lease), and PostgreSQL's commits,
// rows written and WAL bytes per measurement.
func BenchmarkStoreReplicas(b *testing.B) {
	n := benchStoreAnalyses
	if v := os.Getenv(benchStoreAnalysesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 3 {
			b.Fatalf("%s=%q: want a number of analyses, at least 3", benchStoreAnalysesEnv, v)
		}
	}
	for range b.N {
		benchStoreReplicas(b, n)
	}
}

func benchStoreReplicas(b *testing.B, n int) {
	b.StopTimer()
	cluster := pgtest.Start(b)
	db := cluster.Database(b)
	prom := promtest.Start(b)
	keyFile := filepath.Join(b.TempDir(), "store.key")
	if err := os.WriteFile(keyFile, []byte("5b1c0e4d8a7f6e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a190817\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	common := []string{"--prometheus-url", prom.URL, "--max-analyses", strconv.Itoa(2 * n)}
	specs := make([]chaosSpec, n)
	for i := range specs {
		// Three of a kind in a row, so that the kinds do not follow the
		// round-robin of the replicas.
		specs[i] = chaosSpec{kind: chaosKind((i / int(chaosKinds)) % int(chaosKinds)), count: benchStoreCount, interval: benchStoreInterval}
	}
	control := chaosControl(b, append([]string{"--store", "memory:"}, common...), specs[:int(chaosKinds*chaosKinds)])

	args := append(chaosStoreFlags(db.URL, keyFile, benchStoreLease), common...)
	replicas := make([]*chaosReplica, 3)
	for i := range replicas {
		replicas[i] = newChaosReplica(b, fmt.Sprintf("replica-%d", i), args)
	}
	ctx := context.Background()
	before, err := chaosPGStats(ctx, db.URL)
	if err != nil {
		b.Fatal(err)
	}

	// Started round-robin from 16 clients, as fast as the replicas take
	// them; replica-0 is killed benchStoreKillAt after the first start.
	b.StartTimer()
	began := time.Now()
	victim := replicas[0]
	killed := make(chan time.Time, 1)
	// Ends once the victim is dead.
	go func() {
		time.Sleep(benchStoreKillAt)
		victim.down()
		victim.signal(b, syscall.SIGKILL)
		killed <- time.Now()
	}()
	client := &http.Client{Timeout: time.Minute}
	type started struct {
		id      string
		spec    chaosSpec
		replica int
	}
	var (
		mu  sync.Mutex
		all []started
		wg  sync.WaitGroup
	)
	jobs := make(chan int)
	for range 16 {
		wg.Add(1)
		// Ends when jobs is closed and drained.
		go func() {
			defer wg.Done()
			for i := range jobs {
				for k := i; ; k++ {
					r := replicas[k%len(replicas)]
					a, ok, err := r.post(client, specs[i], "")
					if !ok {
						continue
					}
					if err != nil {
						b.Errorf("starting an analysis on %s: %v", r.name, err)
						break
					}
					mu.Lock()
					all = append(all, started{a.ID, specs[i], k % len(replicas)})
					mu.Unlock()
					break
				}
			}
		}()
	}
	for i := range specs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	postedIn := time.Since(began)
	killedAt := <-killed
	victim.wait(b, 10*time.Second)

	// Every analysis' verdict, read from the survivors.
	type result struct {
		started
		a       api.Analysis
		adopted bool
	}
	results := make([]result, 0, len(all))
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; i < len(all); {
		s := all[i]
		r := replicas[1+i%2]
		status, a, detail, err := chaosGet(client, r.base, s.id)
		if err == nil && status == http.StatusOK && a.Phase.Completed() {
			results = append(results, result{started: s, a: a, adopted: s.replica == 0})
			i++
			continue
		}
		if err != nil || status != http.StatusOK || time.Now().After(deadline) {
			b.Fatalf("%s has not completed: %d %s %v %s\n%s", s.id, status, a.Phase, err, detail, chaosLogs(replicas[1:]))
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	time.Sleep(1500 * time.Millisecond) // the statistics' flush
	after, err := chaosPGStats(ctx, db.URL)
	if err != nil {
		b.Fatal(err)
	}

	// The undisturbed time to a verdict of each kind: the median of those
	// started on the survivors; an adopted analysis' extra time is its
	// own beside that.
	durations := map[chaosKind][]time.Duration{}
	matched, measurements := 0, 0
	for _, r := range results {
		if chaosOutcomeOf(r.a) == control[r.spec.key()] {
			matched++
		}
		for _, m := range r.a.MetricResults {
			measurements += int(m.Count)
		}
		if !r.adopted && r.a.StartedAt != nil && r.a.CompletedAt != nil {
			durations[r.spec.kind] = append(durations[r.spec.kind], r.a.CompletedAt.Sub(*r.a.StartedAt))
		}
	}
	medians := map[chaosKind]time.Duration{}
	for k, d := range durations {
		slices.Sort(d)
		medians[k] = d[len(d)/2]
	}
	// An adopted analysis' extra time, and its pause: from the kill to
	// its first measurement started after it.
	var extra, pause []time.Duration
	for _, r := range results {
		if !r.adopted || r.a.StartedAt == nil || r.a.CompletedAt == nil || !r.a.CompletedAt.After(killedAt) {
			continue
		}
		extra = append(extra, max(0, r.a.CompletedAt.Sub(*r.a.StartedAt)-medians[r.spec.kind]))
		first := time.Time{}
		for _, m := range r.a.MetricResults {
			for _, ms := range m.Measurements {
				if ms.StartedAt != nil && ms.StartedAt.After(killedAt) && (first.IsZero() || ms.StartedAt.Before(first)) {
					first = *ms.StartedAt
				}
			}
		}
		if !first.IsZero() {
			pause = append(pause, first.Sub(killedAt))
		}
	}
	slices.Sort(extra)
	slices.Sort(pause)
	at := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	pct := func(p float64) time.Duration { return at(extra, p) }
	per := func(v int64) float64 { return float64(v) / float64(max(1, measurements)) }
	share := float64(matched) / float64(len(results))
	b.ReportMetric(share*100, "%control")
	b.ReportMetric(pct(0.5).Seconds(), "extra-p50-s")
	b.ReportMetric(pct(0.99).Seconds(), "extra-p99-s")
	b.ReportMetric(pct(1).Seconds(), "extra-max-s")
	b.ReportMetric(per(after.commits-before.commits), "commits/measurement")
	b.ReportMetric(per((after.inserted-before.inserted)+(after.updated-before.updated)+(after.deleted-before.deleted)), "rows/measurement")
	b.ReportMetric(per(after.wal-before.wal), "WAL-B/measurement")
	fmt.Printf("%d analyses (interval %s, count %d) started in %s on 3 replicas, replica-0 SIGKILLed %s in; lease %s\n",
		len(results), benchStoreInterval, benchStoreCount, postedIn.Round(time.Millisecond), killedAt.Sub(began).Round(time.Millisecond), benchStoreLease)
	fmt.Printf("in the control's phase: %d of %d (%.1f%%); measurements: %d\n", matched, len(results), share*100, measurements)
	fmt.Printf("undisturbed time to a verdict (median): Successful %s, Failed %s, Inconclusive %s\n",
		medians[kindGood].Round(time.Millisecond), medians[kindBad].Round(time.Millisecond), medians[kindUnsure].Round(time.Millisecond))
	fmt.Printf("adopted analyses: %d; extra time to a verdict p50 %s, p99 %s, max %s (target ≤ interval + lease = %s)\n",
		len(extra), pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond), benchStoreInterval+benchStoreLease)
	fmt.Printf("adopted analyses' pause, from the kill to their next measurement: p50 %s, max %s\n",
		at(pause, 0.5).Round(time.Millisecond), at(pause, 1).Round(time.Millisecond))
	if rowA, rowM, err := chaosRowSizes(ctx, db.URL); err != nil {
		b.Error(err)
	} else {
		fmt.Printf("mean row: an analysis %.0f bytes, a measurement %.0f bytes\n", rowA, rowM)
	}
	fmt.Printf("PostgreSQL per measurement: %.2f commits, %.2f rows inserted, %.2f updated, %.2f deleted, %.0f bytes of WAL\n",
		per(after.commits-before.commits), per(after.inserted-before.inserted), per(after.updated-before.updated),
		per(after.deleted-before.deleted), per(after.wal-before.wal))
}
