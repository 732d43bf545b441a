package prometheus_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// TestRealPrometheus runs the provider against a real Prometheus holding
// the generated Istio data around now and the fixed 2024 values.
func TestRealPrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t,
		promtest.Fixture(time.Now()),
		promtest.ReadFixture(t, "../../../testdata/prometheus/known-values-2024.om"))
	p := newProvider(t, urls(srv.URL))
	now := time.Now()
	known := time.Date(2024, 1, 1, 0, 10, 0, 0, time.UTC)
	last5m := &prometheus.RangeQuery{Start: `now() - duration("5m")`, End: `now()`, Step: "1m"}

	t.Run("seed query", func(t *testing.T) {
		for _, ns := range promtest.Namespaces() {
			// The seed template's query as written, address and all but the
			// namespace.
			obs := measure(t, p, prometheus.Metric{Address: srv.URL + "/", Query: promtest.SeedQuery(ns.Name)}, now)
			got, ok := obs.Value.([]float64)
			if obs.Err != nil || !ok || len(got) != 1 || math.Abs(got[0]-ns.SuccessRate) > 1e-9 {
				t.Errorf("%s: got (%v, %q, %v), want a vector ≈ [%v]", ns.Name, obs.Value, obs.Display, obs.Err, ns.SuccessRate)
				continue
			}
			if !strings.HasPrefix(obs.Display, "[0.9") || !strings.HasSuffix(obs.Display, "]") {
				t.Errorf("%s: display %q", ns.Name, obs.Display)
			}
		}
	})

	tests := []struct {
		name        string
		m           prometheus.Metric
		at          time.Time
		wantValue   any
		wantDisplay string
	}{
		{name: "scalar", m: prometheus.Metric{Query: "scalar(vector(10))"}, at: now, wantValue: 10.0, wantDisplay: "10"},
		{name: "scalar literal", m: prometheus.Metric{Query: "0.5"}, at: now, wantValue: 0.5, wantDisplay: "0.5"},
		{name: "timeout Prometheus must parse (1m30s)", m: prometheus.Metric{Query: "1", Timeout: seconds(90)}, at: now, wantValue: 1.0, wantDisplay: "1"},
		{name: "long timeout", m: prometheus.Metric{Query: "1", Timeout: seconds(1 << 40)}, at: now, wantValue: 1.0, wantDisplay: "1"},
		{name: "scalar NaN", m: prometheus.Metric{Query: `scalar(canaryd_test_special{kind="nan"})`}, at: known, wantValue: math.NaN(), wantDisplay: "NaN"},
		{name: "scalar +Inf", m: prometheus.Metric{Query: `scalar(canaryd_test_special{kind="inf"})`}, at: known, wantValue: math.Inf(1), wantDisplay: "+Inf"},
		{name: "vector", m: prometheus.Metric{Query: `sort(canaryd_test_gauge)`}, at: known, wantValue: []float64{10, 110}, wantDisplay: "[10,110]"},
		{name: "vector in Prometheus' order", m: prometheus.Metric{Query: `sort_desc(canaryd_test_gauge)`}, at: known, wantValue: []float64{110, 10}, wantDisplay: "[110,10]"},
		{name: "empty vector", m: prometheus.Metric{Query: `canaryd_test_gauge{series="none"}`}, at: known, wantValue: []float64{}, wantDisplay: "[]"},
		{
			name: "matrix flattened series by series (backtest: now() is the measurement's instant)",
			m:    prometheus.Metric{Query: `canaryd_test_gauge`, RangeQuery: last5m},
			at:   known, wantValue: []float64{5, 6, 7, 8, 9, 10, 105, 106, 107, 108, 109, 110}, wantDisplay: "[5,6,7,8,9,10,105,106,107,108,109,110]",
		},
		{name: "empty matrix", m: prometheus.Metric{Query: `canaryd_test_gauge{series="none"}`, RangeQuery: last5m}, at: known, wantValue: []float64{}, wantDisplay: "[]"},
	}
	for _, tc := range tests {
		obs := measure(t, p, tc.m, tc.at)
		if obs.Err != nil || !sameFloats(obs.Value, tc.wantValue) || obs.Display != tc.wantDisplay {
			t.Errorf("%s: got (%#v, %q, %v), want (%#v, %q)", tc.name, obs.Value, obs.Display, obs.Err, tc.wantValue, tc.wantDisplay)
		}
	}

	t.Run("range query on the seed data now", func(t *testing.T) {
		obs := measure(t, p, prometheus.Metric{Query: promtest.SeedQuery("echo-bad"), RangeQuery: last5m}, now)
		got, _ := obs.Value.([]float64)
		if obs.Err != nil || len(got) != 6 {
			t.Fatalf("got (%v, %v), want 6 values", obs.Value, obs.Err)
		}
		for _, v := range got {
			if math.Abs(v-0.95) > 1e-9 {
				t.Errorf("value %v, want ≈ 0.95", v)
			}
		}
	})

	t.Run("syntax error", func(t *testing.T) {
		obs := measure(t, p, prometheus.Metric{Query: `sum(rate(istio_requests_total[1m])`}, now)
		want := `bad_data: invalid parameter "query": 1:35: parse error: unclosed left parenthesis`
		if got := errText(obs.Err); got != want {
			t.Errorf("err = %q, want %q", got, want)
		}
	})

	t.Run("execution error", func(t *testing.T) {
		// Prometheus refuses a range query of more than 11,000 points.
		obs := measure(t, p, prometheus.Metric{Query: "up", RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("24h")`, End: `now()`, Step: "1s"}}, now)
		want := "bad_data: exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"
		if got := errText(obs.Err); got != want {
			t.Errorf("err = %q, want %q", got, want)
		}
	})
}

// TestRealPrometheusWarnings: a Prometheus whose remote_read endpoint is
// down answers with warnings, which land in the measurement's metadata.
func TestRealPrometheusWarnings(t *testing.T) {
	t.Parallel()
	srv := promtest.StartConfig(t, promtest.Config{
		ExtraConfig: "remote_read:\n  - url: http://127.0.0.1:1/api/v1/read\n    read_recent: true\n",
	})
	p := newProvider(t, prometheus.Options{Datasources: []prometheus.Datasource{{URL: srv.URL}}})
	obs := measure(t, p, prometheus.Metric{Query: promtest.SeedQuery("echo")}, time.Now())
	// Joined as Argo joins them: each in quotes, inner quotes as they are.
	want := `"remote_read: error sending request: Post "http://127.0.0.1:1/api/v1/read": dial tcp 127.0.0.1:1: connect: connection refused"`
	if obs.Err != nil || obs.Metadata["warnings"] != want {
		t.Errorf("got metadata %v (err %v), want warnings %s", obs.Metadata, obs.Err, want)
	}
}

// TestRealPrometheusResultCap asks a real Prometheus for more values than
// the provider takes, by subqueries and a range query: each is an Error
// measurement naming the cap and its flag, the fast decoder's responses and
// those left to client_golang (a label value with a quote) alike. Under
// the cap, a long result is kept whole and its value shown cut.
func TestRealPrometheusResultCap(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, promtest.Fixture(time.Now()))
	opts := urls(srv.URL)
	opts.MaxResultValues = 1000
	p := newProvider(t, opts)
	now := time.Now()
	over := []struct {
		name string
		m    prometheus.Metric
	}{
		{"subquery", prometheus.Metric{Query: `vector(1)[30m:1s]`}},
		{"subquery of many series", prometheus.Metric{Query: `(vector(1) or label_replace(vector(2), "s", "b", "", ""))[10m:1s]`}},
		{"range query", prometheus.Metric{Query: `vector(1)`, RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("30m")`, End: `now()`, Step: "1s"}}},
		{"decoded by client_golang", prometheus.Metric{Query: `label_replace(vector(1), "q", "a\"b", "", "")[30m:1s]`}},
	}
	for _, tc := range over {
		obs := measure(t, p, tc.m, now)
		msg := errText(obs.Err)
		if obs.Value != nil || !strings.HasPrefix(msg, "the query returned ") ||
			!strings.Contains(msg, "values, more than the 1000 a measurement may have (--max-result-values)") {
			t.Errorf("%s: got (%v, %q); want an error naming the cap", tc.name, obs.Value, msg)
		}
	}

	// Under the cap: every value is there; the display is cut at
	// MaxValueBytes and says how many there were.
	obs := measure(t, p, prometheus.Metric{Query: `vector(0.123456789)[10m:1s]`}, now)
	values, _ := obs.Value.([]float64)
	if obs.Err != nil || len(values) < 600 || len(values) > 1000 {
		t.Fatalf("under the cap: %d values, %v", len(values), obs.Err)
	}
	suffix := fmt.Sprintf(",… (%d values)]", len(values))
	if len(obs.Display) > analysis.MaxValueBytes || !strings.HasSuffix(obs.Display, suffix) || !strings.HasPrefix(obs.Display, "[0.123456789,") {
		t.Errorf("under the cap: display of %d bytes ending %q; want at most %d ending %q",
			len(obs.Display), obs.Display[max(0, len(obs.Display)-30):], analysis.MaxValueBytes, suffix)
	}
}
