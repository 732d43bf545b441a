package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/store"
)

// The scale of BenchmarkStoreScale, as docs/performance.md gives its
// figures, and the environment variables that change it for a quick run.
const (
	scaleAnalyses    = 10_000
	scaleInterval    = 10 * time.Second
	scaleWindow      = time.Minute
	scaleReplicas    = 3
	scaleClients     = 16
	scaleAnalysesEnv = "CANARYD_BENCH_STORE_SCALE_ANALYSES"
	scaleWindowEnv   = "CANARYD_BENCH_STORE_SCALE_SECONDS"
)

// scaleSpec is the document every analysis posts: one query a
// measurement, its namespace the analysis' own (so that the stand-in
// knows whose query arrived), always Successful, and more measurements
// than the benchmark waits for.
const scaleSpec = `args:
  - name: namespace
metrics:
  - name: up
    interval: %s
    count: 1000
    successCondition: result[0] >= 0
    provider:
      prometheus:
        query: sum(up{namespace="{{args.namespace}}"})
`

// arrivals is a Prometheus stand-in that answers every query at once, with
// one sample, and records when each analysis' queries arrived.
type arrivals struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	_ = r.ParseForm()
	q := r.Form.Get("query")
	if _, rest, ok := strings.Cut(q, `namespace="`); ok {
		ns, _, _ := strings.Cut(rest, `"`)
		a.mu.Lock()
		a.at[ns] = append(a.at[ns], now)
		a.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"1"]}]}}`, now.Unix())
}

// lateness is how late each measurement after an analysis' first
// started, as its query's arrival shows it, beside its schedule (the
// previous query's arrival, the stand-in answering at once, plus the
// interval), for the queries that arrived in [from, to); and how many
// arrived there.
func (a *arrivals) lateness(from, to time.Time, interval time.Duration) (late []time.Duration, queries int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ts := range a.at {
		for k, t := range ts {
			if t.Before(from) || !t.Before(to) {
				continue
			}
			queries++
			if k > 0 {
				late = append(late, max(0, t.Sub(ts[k-1])-interval))
			}
		}
	}
	slices.Sort(late)
	return late, queries
}

// scaleCounters are what BenchmarkStoreScale reads at the start and end
// of its window.
type scaleCounters struct {
	pg                   chaosPGCounters
	pgCPU                time.Duration
	replicaCPU           []time.Duration
	batches              []float64 // each replica's transactions of group commit
	batchWrites          float64   // the writes in them, every replica's
	at                   time.Time
	commitsAlone, failed float64
}

func readScaleCounters(b *testing.B, dbURL, pgDir string, replicas []*chaosReplica) scaleCounters {
	b.Helper()
	c := scaleCounters{at: time.Now()}
	var err error
	if c.pg, err = chaosPGStats(context.Background(), dbURL); err != nil {
		b.Fatal(err)
	}
	c.pgCPU = postgresCPU(b, pgDir)
	for _, r := range replicas {
		r.mu.Lock()
		pid := r.cmd.Process.Pid
		r.mu.Unlock()
		c.replicaCPU = append(c.replicaCPU, processCPUTime(pid, false))
		m := scrape(b, r.base)
		c.batches = append(c.batches, m[`canaryd_store_operations_total{op="commit_batch",outcome="ok"}`])
		c.failed += m[`canaryd_store_operations_total{op="commit_batch",outcome="unavailable"}`] + m[`canaryd_store_operations_total{op="commit_batch",outcome="error"}`]
		c.batchWrites += m["canaryd_store_batch_writes_sum"]
		c.commitsAlone += m[`canaryd_store_operations_total{op="commit",outcome="ok"}`]
	}
	return c
}

// scrape reads base's /metrics: each series' value by its name and labels
// as written.
func scrape(b *testing.B, base string) map[string]float64 {
	b.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// processCPUTime is the CPU time a process has used (user and system),
// from /proc, with, when children is set, that of its children that have
// exited; 0 when it cannot be read.
func processCPUTime(pid int, children bool) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses:
	// utime, stime, cutime and cstime are the 12th to the 15th (clock
	// ticks, 100 a second).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 15 {
		return 0
	}
	last := 12
	if children {
		last = 14
	}
	var ticks int64
	for _, f := range fields[11 : last+1] {
		n, _ := strconv.ParseInt(f, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// postgresCPU is the CPU time of the cluster in pgDir: its postmaster's,
// its running backends' and those of its backends that have exited (a
// connection closed by a pool).
func postgresCPU(b *testing.B, pgDir string) time.Duration {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(pgDir, "data", "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	if err != nil {
		b.Fatal(err)
	}
	total := processCPUTime(pm, true)
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pm) {
			total += processCPUTime(pid, false)
		}
	}
	return total
}

// BenchmarkStoreScale runs CANARYD_BENCH_STORE_SCALE_ANALYSES (10,000)
// analyses at 10 s intervals on three `canaryd serve` replicas with
// --store postgres://… on one throwaway PostgreSQL, against a Prometheus
// stand-in in the benchmark's process that answers at once. Once every
// analysis is created and has measured again, it watches a window of
// CANARYD_BENCH_STORE_SCALE_SECONDS (60) and reports measurements a
// second, the replicas' transactions of group commit a second (in all,
// and the most any replica made per store.DefaultCommitInterval: the
// target is at most one), writes per transaction, PostgreSQL's commits
// and rows written a second, PostgreSQL's CPU and the replicas', and
// measurement lateness p50 / p99 (the target: 50 ms) from the queries'
// arrivals at the stand-in beside their schedule.
func BenchmarkStoreScale(b *testing.B) {
	n, window := scaleAnalyses, scaleWindow
	if v := os.Getenv(scaleAnalysesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of analyses", scaleAnalysesEnv, v)
		}
	}
	if v := os.Getenv(scaleWindowEnv); v != "" {
		s, err := strconv.Atoi(v)
		if err != nil || s < 1 {
			b.Fatalf("%s=%q: want a number of seconds", scaleWindowEnv, v)
		}
		window = time.Duration(s) * time.Second
	}
	for range b.N {
		benchStoreScale(b, n, window)
	}
}

func benchStoreScale(b *testing.B, n int, window time.Duration) {
	b.StopTimer()
	cluster := pgtest.Start(b)
	db := cluster.Database(b)
	stand := &arrivals{at: make(map[string][]time.Time, n)}
	prom := httptest.NewServer(stand)
	b.Cleanup(prom.Close)
	keyFile := filepath.Join(b.TempDir(), "store.key")
	if err := os.WriteFile(keyFile, []byte("5b1c0e4d8a7f6e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a190817\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	// The default lease: each replica renews its leases every 10 s.
	args := append(chaosStoreFlags(db.URL, keyFile, store.DefaultLeaseTTL), "--prometheus-url", prom.URL, "--max-analyses", strconv.Itoa(2*n))
	replicas := make([]*chaosReplica, scaleReplicas)
	for i := range replicas {
		replicas[i] = newChaosReplica(b, fmt.Sprintf("replica-%d", i), args)
	}

	// Created round-robin from 16 clients, as fast as the replicas take
	// them.
	b.StartTimer()
	began := time.Now()
	doc := fmt.Sprintf(scaleSpec, scaleInterval)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: scaleClients}}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var failed sync.Once
	for range scaleClients {
		wg.Add(1)
		// Ends when jobs is closed and drained.
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := replicas[i%len(replicas)]
				q := url.Values{"arg.namespace": {fmt.Sprintf("a-%05d", i)}}
				resp, err := client.Post(r.base+"/v1/analyses?"+q.Encode(), "application/yaml", strings.NewReader(doc))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Do(func() { b.Errorf("starting analysis %d on %s: %v", i, r.name, err) })
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	createdIn := time.Since(began)
	if b.Failed() {
		b.FailNow()
	}

	// Every analysis has measured again once an interval has passed
	// since the last was created.
	time.Sleep(scaleInterval + time.Second)
	before := readScaleCounters(b, db.URL, cluster.Dir, replicas)
	time.Sleep(window)
	time.Sleep(1500 * time.Millisecond) // PostgreSQL's statistics' flush
	after := readScaleCounters(b, db.URL, cluster.Dir, replicas)
	b.StopTimer()
	secs := window.Seconds()
	// The counters' window is the one read, the statistics' flush in it.
	span := after.at.Sub(before.at).Seconds()

	late, queries := stand.lateness(before.at, before.at.Add(window), scaleInterval)
	at := func(p float64) time.Duration {
		if len(late) == 0 {
			return 0
		}
		return late[min(len(late)-1, int(p*float64(len(late))))]
	}
	var batches, mostPerReplica float64
	for i := range replicas {
		d := after.batches[i] - before.batches[i]
		batches += d
		mostPerReplica = max(mostPerReplica, d/span)
	}
	writes := after.batchWrites - before.batchWrites
	perTick := mostPerReplica * store.DefaultCommitInterval.Seconds()
	var replicaCPU time.Duration
	for i := range replicas {
		replicaCPU += after.replicaCPU[i] - before.replicaCPU[i]
	}
	pgCommits := float64(after.pg.commits - before.pg.commits)
	rows := float64((after.pg.inserted - before.pg.inserted) + (after.pg.updated - before.pg.updated) + (after.pg.deleted - before.pg.deleted))
	pgCPU := (after.pgCPU - before.pgCPU).Seconds() / span * 100

	b.ReportMetric(float64(queries)/secs, "measurements/s")
	b.ReportMetric(batches/span, "store-tx/s")
	b.ReportMetric(perTick, "tx/replica/tick")
	b.ReportMetric(writes/max(1, batches), "writes/tx")
	b.ReportMetric(pgCommits/span, "pg-commits/s")
	b.ReportMetric(rows/span, "rows/s")
	b.ReportMetric(pgCPU, "pg-cpu-%")
	b.ReportMetric(float64(at(0.5).Microseconds())/1000, "lateness-p50-ms")
	b.ReportMetric(float64(at(0.99).Microseconds())/1000, "lateness-p99-ms")
	fmt.Printf("%d analyses (interval %s) created in %s on %d replicas; a window of %s\n", n, scaleInterval, createdIn.Round(time.Millisecond), len(replicas), window)
	fmt.Printf("measurements: %d (%.0f/s); lateness p50 %s, p99 %s, max %s (target p99 ≤ 50ms)\n",
		queries, float64(queries)/secs, at(0.5).Round(10*time.Microsecond), at(0.99).Round(10*time.Microsecond), at(1).Round(10*time.Microsecond))
	fmt.Printf("group commit: %.0f transactions (%.1f/s), %.1f writes each; the busiest replica %.1f/s, %.2f per %s tick (target ≤ 1); failed %.0f, commits alone %.0f\n",
		batches, batches/span, writes/max(1, batches), mostPerReplica, perTick, store.DefaultCommitInterval, after.failed-before.failed, after.commitsAlone-before.commitsAlone)
	fmt.Printf("PostgreSQL: %.1f commits/s (every transaction: group commits, renewals, claims, reads), %.0f rows written/s (%.0f inserted, %.0f updated, %.0f deleted), %.0f bytes of WAL/s, CPU %.0f%% of one core\n",
		pgCommits/span, rows/span, float64(after.pg.inserted-before.pg.inserted)/span, float64(after.pg.updated-before.pg.updated)/span,
		float64(after.pg.deleted-before.pg.deleted)/span, float64(after.pg.wal-before.pg.wal)/span, pgCPU)
	fmt.Printf("the replicas' CPU: %.0f%% of one core, all three\n", replicaCPU.Seconds()/span*100)
}
