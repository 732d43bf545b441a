package promtest_test

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/canaryd/canaryd/internal/proctest"
	"github.com/canaryd/canaryd/internal/promtest"
)

func query(t *testing.T, url, q string, at time.Time) (model.Value, v1.Warnings) {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, warnings, _, err := v1.NewAPI(c).Query(ctx, q, at)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	return v, warnings
}

func single(t *testing.T, v model.Value) float64 {
	t.Helper()
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		t.Fatalf("want a vector of one sample, got %v", v)
	}
	return float64(vec[0].Value)
}

// TestDefaultFixture checks the generated data end to end: now, in the past
// and in the future of the start, the seed query gives each namespace's
// success rate and the histogram its p99.
func TestDefaultFixture(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t)
	for _, ns := range promtest.Namespaces() {
		for _, offset := range []time.Duration{0, -90 * time.Minute, 90 * time.Minute} {
			at := srv.Now.Add(offset)
			got := single(t, first(query(t, srv.URL, promtest.SeedQuery(ns.Name), at)))
			if math.Abs(got-ns.SuccessRate) > 1e-9 {
				t.Errorf("%s at now%+v: success rate = %v, want %v", ns.Name, offset, got, ns.SuccessRate)
			}
		}
		p99 := `histogram_quantile(0.99, sum by (le) (rate(istio_request_duration_milliseconds_bucket{destination_workload_namespace="` + ns.Name + `"}[1m])))`
		got := single(t, first(query(t, srv.URL, p99, srv.Now)))
		if math.Abs(got-ns.P99Millis) > 1e-6 {
			t.Errorf("%s: p99 = %v, want %v", ns.Name, got, ns.P99Millis)
		}
	}
	// Beyond the fixture's range (and the 5 m lookback) there is nothing.
	v, _ := query(t, srv.URL, promtest.SeedQuery("echo"), srv.Now.Add(3*time.Hour))
	if vec, ok := v.(model.Vector); !ok || len(vec) != 0 {
		t.Errorf("3h after the start: got %v, want an empty vector", v)
	}
}

func first(v model.Value, _ v1.Warnings) model.Value { return v }

// TestRolloutPair checks the judge's canary and baseline in the default
// fixture: the canary's mean latency is about 30% above the stable one's,
// both p99s are under 500 ms, and every request succeeds.
func TestRolloutPair(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t)
	for _, w := range []struct {
		name string
		mean float64
	}{
		{promtest.StableWorkload, promtest.StableMeanMillis},
		{promtest.CanaryWorkload, promtest.StableMeanMillis * promtest.CanarySlowdown},
	} {
		// Over an hour the noise of the mean is a few percent at most.
		q := strings.ReplaceAll(promtest.MeanLatencyQuery(w.name), "[1m]", "[1h]")
		if got := single(t, first(query(t, srv.URL, q, srv.Now))); math.Abs(got/w.mean-1) > 0.05 {
			t.Errorf("%s: mean latency over an hour = %v ms, want about %v", w.name, got, w.mean)
		}
		p99 := `histogram_quantile(0.99, sum by (le) (rate(istio_request_duration_milliseconds_bucket{destination_workload="` + w.name + `"}[5m])))`
		if got := single(t, first(query(t, srv.URL, p99, srv.Now))); !(got > w.mean && got < 500) {
			t.Errorf("%s: p99 = %v ms, want between the mean and 500", w.name, got)
		}
		success := `sum(rate(istio_requests_total{destination_workload="` + w.name + `", response_code!~"5.."}[5m])) / sum(rate(istio_requests_total{destination_workload="` + w.name + `"}[5m]))`
		if got := single(t, first(query(t, srv.URL, success, srv.Now))); got != 1 {
			t.Errorf("%s: success rate = %v, want 1", w.name, got)
		}
	}
}

// TestFixturesTogether backfills a fixed-time file next to the generated
// data: overlapping blocks and a two-year gap (retention) must both work.
func TestFixturesTogether(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t,
		promtest.Fixture(time.Now()),
		promtest.ReadFixture(t, "../../testdata/prometheus/known-values-2024.om"))
	at := time.Date(2024, 1, 1, 0, 7, 0, 0, time.UTC)
	got := single(t, first(query(t, srv.URL, `canaryd_test_gauge{series="b"}`, at)))
	if got != 107 {
		t.Errorf("known value at 00:07: got %v, want 107", got)
	}
	got = single(t, first(query(t, srv.URL, promtest.SeedQuery("echo-bad"), srv.Now)))
	if math.Abs(got-0.95) > 1e-9 {
		t.Errorf("echo-bad now: got %v, want 0.95", got)
	}
}

// TestWarnings shows how a real Prometheus is made to return warnings: a
// remote_read endpoint that refuses connections.
func TestWarnings(t *testing.T) {
	t.Parallel()
	srv := promtest.StartConfig(t, promtest.Config{
		ExtraConfig: "remote_read:\n  - url: http://127.0.0.1:1/api/v1/read\n    read_recent: true\n",
	})
	_, warnings := query(t, srv.URL, `sum(istio_requests_total)`, srv.Now)
	if len(warnings) == 0 || !strings.Contains(warnings[0], "remote_read") {
		t.Errorf("warnings = %q, want a remote_read warning", warnings)
	}
}

// TestStopped checks that the cleanup stops Prometheus.
func TestStopped(t *testing.T) {
	t.Parallel()
	var url string
	t.Run("run", func(t *testing.T) {
		url = promtest.Start(t, promtest.ReadFixture(t, "../../testdata/prometheus/known-values-2024.om")).URL
	})
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(url + "/-/ready")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("prometheus at %s still answers after its test ended", url)
	}
}

// TestStop checks that Stop ends Prometheus before the test does, and that
// the cleanup's stop after it is harmless.
func TestStop(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, promtest.ReadFixture(t, "../../testdata/prometheus/known-values-2024.om"))
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(srv.URL + "/-/ready")
	if err != nil {
		t.Fatalf("before Stop: %v", err)
	}
	resp.Body.Close()
	srv.Stop()
	srv.Stop()
	if resp, err := client.Get(srv.URL + "/-/ready"); err == nil {
		resp.Body.Close()
		t.Fatalf("prometheus at %s still answers after Stop", srv.URL)
	}
}

func TestWriteFixture(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := promtest.WriteFixture(&b, start, start.Add(30*time.Second), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"# TYPE istio_requests counter\n",
		`istio_requests_total{reporter="destination",source_workload="loadgen",source_workload_namespace="loadgen",destination_workload="echo",destination_workload_namespace="echo-good",destination_service="echo.echo-good.svc.cluster.local",request_protocol="http",response_code="500"} 2 1704067230` + "\n",
		`le="+Inf"} 400 1704067230`,
		"# EOF\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("fixture lacks %q", want)
		}
	}
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Errorf("fixture does not end with # EOF")
	}
	for _, tc := range []struct {
		name       string
		start, end time.Time
		step       time.Duration
	}{
		{"zero step", start, start, 0},
		{"end before start", start, start.Add(-time.Second), time.Second},
	} {
		if err := promtest.WriteFixture(&b, tc.start, tc.end, tc.step); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestMissingBinaries checks that a machine without Prometheus fails the
// test with the install command, and does not skip it.
func TestMissingBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	msg := proctest.FailureOf(t, func(tb testing.TB) { promtest.Start(tb) })
	want := "promtest: prometheus not found on PATH"
	if !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "install it with: apt-get install -y prometheus") {
		t.Errorf("Start without prometheus failed with %q, want %q … install it with: apt-get install -y prometheus", msg, want)
	}
	if t.Skipped() {
		t.Error("Start skipped the test")
	}
}
