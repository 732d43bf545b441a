package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// storeSpec measures the namespace's success rate count times, 300 ms
// apart; echo-bad fails it after its fourth failure.
func storeSpec(namespace string, count int) string {
	return fmt.Sprintf(`metrics:
- name: success-rate
  interval: 300ms
  count: %d
  failureLimit: 3
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: %q
`, count, promtest.SeedQuery(namespace))
}

// waitAnalysis polls GET /v1/analyses/{id} until ok holds of the analysis
// it answers, for at most within; it returns the last analysis read, and
// whether ok held.
func waitAnalysis(t *testing.T, base, id string, within time.Duration, ok func(api.Analysis) bool) (api.Analysis, bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, a := getAnalysis(t, base, id)
		if ok(a) {
			return a, true
		}
		if time.Now().After(deadline) {
			return a, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getAnalysis reads GET /v1/analyses/{id}.
func getAnalysis(t *testing.T, base, id string) (int, api.Analysis) {
	t.Helper()
	resp, err := http.Get(base + "/v1/analyses/" + id)
	if err != nil {
		t.Fatalf("GET %s: %v", id, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var a api.Analysis
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatalf("GET %s: %v: %s", id, err, data)
		}
	}
	return resp.StatusCode, a
}

// TestServeStoreHandOver runs two `canaryd serve` replicas on one
// PostgreSQL and SIGTERMs the one that started the analyses while they
// run: it hands them over and exits at once, and the other finishes each
// with the phase and counts of an undisturbed control run (a replica
// with --store memory:). Every analysis is readable from the other
// replica throughout.
func TestServeStoreHandOver(t *testing.T) {
	prom := promtest.Start(t)
	db := pgtest.Start(t).Database(t)
	const count = 8
	namespaces := []string{"echo-good", "echo-bad", "echo-good", "echo-bad"}

	// The control, undisturbed.
	_, control, _, _ := startServe(t, "--prometheus-url", prom.URL)
	want := map[string]api.Analysis{}
	for _, ns := range []string{"echo-good", "echo-bad"} {
		status, a := postAnalysis(t, control, "?wait=true", storeSpec(ns, count))
		if status != http.StatusOK || !a.Phase.Completed() {
			t.Fatalf("control %s: %d %s", ns, status, a.Phase)
		}
		want[ns] = a
	}

	args := []string{"--prometheus-url", prom.URL, "--store", db.URL, "--store-lease", "3s", "--shutdown-grace", "10s"}
	// Each replica has a name of its own, as each pod has its host name:
	// ids name the replica that started them, and every replica still
	// reads every analysis from the store.
	first, base1, logs1, exited1 := startServe(t, append(args, "--replica-name", "canaryd-a")...)
	_, base2, logs2, _ := startServe(t, append(args, "--replica-name", "canaryd-b")...)

	ids := make([]string, len(namespaces))
	for i, ns := range namespaces {
		status, a := postAnalysis(t, base1, "", storeSpec(ns, count))
		if status != http.StatusAccepted {
			t.Fatalf("start %s: %d", ns, status)
		}
		ids[i] = a.ID
	}
	// Each has measured on the first replica, as the second reads it.
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			status, a := getAnalysis(t, base2, id)
			if status == http.StatusOK && len(a.MetricResults) > 0 && a.MetricResults[0].Count+a.MetricResults[0].Error > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("analysis %s never measured as the other replica reads it (%d):\n%s", id, status, logs1.text())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	signalled := time.Now()
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited1:
		if code != 0 {
			t.Errorf("the first replica exited %d:\n%s", code, logs1.text())
		}
		if took := time.Since(signalled); took > 8*time.Second {
			t.Errorf("the first replica took %s to exit: it should hand over at once, not wait out its grace", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the first replica did not exit:\n%s", logs1.text())
	}
	if !strings.Contains(logs1.text(), "handed over") {
		t.Errorf("the first replica did not say it handed its analyses over:\n%s", logs1.text())
	}

	for i, id := range ids {
		var a api.Analysis
		deadline := time.Now().Add(30 * time.Second)
		for {
			var status int
			status, a = getAnalysis(t, base2, id)
			if status != http.StatusOK {
				t.Fatalf("GET %s on the second replica: %d", id, status)
			}
			if a.Phase.Completed() && a.CompletedAt != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("analysis %s still %s on the second replica:\n%s", id, a.Phase, logs2.text())
			}
			time.Sleep(50 * time.Millisecond)
		}
		w := want[namespaces[i]]
		got, exp := a.MetricResults[0], w.MetricResults[0]
		if a.Phase != w.Phase || got.Count != exp.Count || got.Successful != exp.Successful || got.Failed != exp.Failed {
			t.Errorf("%s (%s): %s, count %d (%d successful, %d failed); the control: %s, count %d (%d, %d)", id, namespaces[i],
				a.Phase, got.Count, got.Successful, got.Failed, w.Phase, exp.Count, exp.Successful, exp.Failed)
		}
		if strings.Contains(a.Message, "stopped") {
			t.Errorf("%s ended because a replica stopped: %q", id, a.Message)
		}
	}
	if !strings.Contains(logs2.text(), "analysis resumed") {
		t.Errorf("the second replica did not say it resumed the analyses:\n%s", logs2.text())
	}

	// The store's series are on /metrics with a store, and only then.
	withStore := metricsText(t, base2)
	for _, series := range []string{`canaryd_store_operations_total{op="claim",outcome="ok"}`, `canaryd_store_operations_total{op="renew",outcome="ok"}`,
		`canaryd_store_operation_duration_seconds_count{op="commit_batch"}`, "canaryd_store_batch_writes_count", "canaryd_store_claims_total", "canaryd_store_lease_losses_total 0",
		"canaryd_store_measurements_pending"} {
		if !strings.Contains(withStore, series) {
			t.Errorf("/metrics of a replica with a store has no %s", series)
		}
	}
	if strings.Contains(metricsText(t, control), "canaryd_store_") {
		t.Errorf("/metrics of a replica on memory: shows store series")
	}
}

// metricsText reads base's /metrics.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(data)
}
