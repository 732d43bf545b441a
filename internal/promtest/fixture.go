package promtest

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DefaultStep is the spacing of the generated samples: a common scrape
// interval.
const DefaultStep = 15 * time.Second

// DefaultSpan is how far the default fixture reaches either side of its
// moment of creation.
const DefaultSpan = 2 * time.Hour

// CanaryHash is the rollouts-pod-template-hash of every namespace's pods in
// the fixture's http_requests_total: the canary's hash that Argo Rollouts
// passes a template (podTemplateHashValue: Latest).
const CanaryHash = "6d4b9c7f8"

// IncidentNamespace is the generated namespace whose 5xx share rises from
// 0.5% to 5% for IncidentLength, IncidentOffset after the data starts.
const IncidentNamespace = "echo-incident"

// The incident's place in the generated data.
const (
	IncidentOffset = 30 * time.Minute
	IncidentLength = 30 * time.Minute
)

// The canary and its baseline of the generated data, for canaryd's judge:
// two workloads of namespace RolloutNamespace whose request durations are
// in istio_request_duration_milliseconds. Each request's duration is drawn
// from a log-normal distribution (σ = LatencySigma) by a fixed formula of
// the workload, the sample's index from the start of the data and the
// request's index, so that the data are the same on every run. The stable
// workload serves StableRequestsPerStep requests per step with a mean of
// StableMeanMillis; the canary CanaryRequestsPerStep (a canary's share of
// the traffic) with a mean CanarySlowdown times higher: 30% slower, yet far
// under any static threshold a latency template would set (the p99 of
// either stays under 500 ms). Every request of both succeeds
// (istio_requests_total, response code 200).
const (
	RolloutNamespace      = "echo-rollout"
	StableWorkload        = "echo-stable"
	CanaryWorkload        = "echo-canary"
	StableMeanMillis      = 100.0
	CanarySlowdown        = 1.3
	LatencySigma          = 0.3
	StableRequestsPerStep = 20
	CanaryRequestsPerStep = 5
)

// MeanLatencyQuery is the mean request duration of a workload, in
// milliseconds, over the last minute: what a judge metric compares.
func MeanLatencyQuery(workload string) string {
	sel := `{reporter="destination", destination_workload_namespace="` + RolloutNamespace + `", destination_workload="` + workload + `"}`
	return `sum(rate(istio_request_duration_milliseconds_sum` + sel + `[1m]))
/
sum(rate(istio_request_duration_milliseconds_count` + sel + `[1m]))
`
}

// Namespace is one namespace of the generated fixture and what the seed
// queries give for it.
type Namespace struct {
	// Name is the destination_workload_namespace label.
	Name string
	// SuccessRate is the exact share of non-5xx responses, the value of
	// SeedQuery(Name) anywhere inside the fixture's range (up to float
	// rounding).
	SuccessRate float64
	// P99Millis is histogram_quantile(0.99, …) of the request duration
	// histogram, as Prometheus interpolates it.
	P99Millis float64

	// requests per step by response code; buckets per step, not cumulative.
	codes   []codeCount
	buckets []float64
	sumMs   float64
}

type codeCount struct {
	code  string
	count int
}

// The histogram's bucket bounds in milliseconds (a subset of Istio's).
var bucketBounds = []string{"5", "10", "25", "50", "100", "250", "500", "1000", "+Inf"}

// Namespaces returns the generated namespaces:
//   - echo: healthy, 0.1% 5xx (success rate 0.999), fast;
//   - echo-good: 0.5% 5xx (0.995), fast;
//   - echo-bad: 5% 5xx (0.95), slow.
func Namespaces() []Namespace {
	fast := []float64{20, 60, 80, 30, 9, 1, 0, 0, 0}    // 200 requests: p99 in (50,100]
	slow := []float64{10, 30, 60, 40, 30, 15, 10, 4, 1} // 200 requests: p99 in (500,1000]
	scale := func(b []float64, k float64) []float64 {
		out := make([]float64, len(b))
		for i, v := range b {
			out[i] = v * k
		}
		return out
	}
	return []Namespace{
		{
			Name: "echo", SuccessRate: 0.999, P99Millis: 50 + 50*(990.0-950)/45,
			codes:   []codeCount{{"200", 995}, {"404", 4}, {"500", 1}},
			buckets: scale(fast, 5), sumMs: 1000 * 18,
		},
		{
			Name: "echo-good", SuccessRate: 0.995, P99Millis: 50 + 50*(198.0-190)/9,
			codes:   []codeCount{{"200", 190}, {"404", 9}, {"500", 1}},
			buckets: fast, sumMs: 200 * 18,
		},
		{
			Name: "echo-bad", SuccessRate: 0.95, P99Millis: 500 + 500*(198.0-195)/4,
			codes:   []codeCount{{"200", 180}, {"404", 10}, {"500", 6}, {"503", 4}},
			buckets: slow, sumMs: 200 * 95,
		},
	}
}

// SeedQuery is the success-rate query of canaryd's seed AnalysisTemplate,
// unchanged but for the namespace.
func SeedQuery(namespace string) string {
	return `sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="` + namespace + `", response_code!~"5.."}[1m]))
/
sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="` + namespace + `"}[1m]))
`
}

// WriteFixture writes the generated data as OpenMetrics text: one sample
// every step from start to end (inclusive), counters starting at 0 at
// start. Series come family by family, each series' samples in time order,
// which is what promtool's backfill needs.
func WriteFixture(w io.Writer, start, end time.Time, step time.Duration) error {
	if step <= 0 {
		return errors.New("promtest: step must be positive")
	}
	if end.Before(start) {
		return errors.New("promtest: end is before start")
	}
	bw := bufio.NewWriter(w)
	var times []string
	for t := start; !t.After(end); t = t.Add(step) {
		times = append(times, strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64))
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	series := func(name, labels string, perStep float64) {
		for i, ts := range times {
			fmt.Fprintf(bw, "%s{%s} %s %s\n", name, labels, num(perStep*float64(i)), ts)
		}
	}
	common := func(reporter, ns string) string {
		return fmt.Sprintf(`reporter=%q,source_workload="loadgen",source_workload_namespace="loadgen",destination_workload="echo",destination_workload_namespace=%q,destination_service="echo.%s.svc.cluster.local",request_protocol="http"`,
			reporter, ns, ns)
	}

	fmt.Fprintln(bw, "# TYPE istio_requests counter")
	fmt.Fprintln(bw, "# HELP istio_requests Requests seen by the Istio proxies (canaryd test fixture).")
	for _, ns := range Namespaces() {
		for _, reporter := range []string{"destination", "source"} {
			for _, c := range ns.codes {
				series("istio_requests_total", common(reporter, ns.Name)+`,response_code="`+c.code+`"`, float64(c.count))
			}
		}
	}
	// echo-incident: 0.5% 5xx, but 5% for the half hour that starts 30
	// minutes into the data (with the default span: from 90 to 60 minutes
	// before now), for backtests to find.
	incidentFrom, incidentTo := start.Add(IncidentOffset), start.Add(IncidentOffset+IncidentLength)
	for _, code := range []string{"200", "500"} {
		total := 0.0
		for i, ts := range times {
			at := start.Add(time.Duration(i) * step)
			fives := 1.0
			if !at.Before(incidentFrom) && at.Before(incidentTo) {
				fives = 10
			}
			if i > 0 {
				if code == "200" {
					total += 200 - fives
				} else {
					total += fives
				}
			}
			fmt.Fprintf(bw, "istio_requests_total{%s,response_code=%q} %s %s\n", common("destination", IncidentNamespace), code, num(total), ts)
		}
	}
	// The rollout pair: every request succeeds.
	for _, w := range []struct {
		name     string
		requests int
	}{{StableWorkload, StableRequestsPerStep}, {CanaryWorkload, CanaryRequestsPerStep}} {
		series("istio_requests_total", rolloutLabels(w.name)+`,response_code="200"`, float64(w.requests))
	}
	// The application's own counter, scraped per pod with the pod's
	// rollouts-pod-template-hash label, as deploy/examples/templates'
	// canary-success-rate reads it: every namespace's pods are the canary's
	// of CanaryHash, with the namespace's response codes.
	fmt.Fprintln(bw, "# TYPE http_requests counter")
	fmt.Fprintln(bw, "# HELP http_requests Requests served by the application, per pod (canaryd test fixture).")
	for _, ns := range Namespaces() {
		for _, c := range ns.codes {
			series("http_requests_total", fmt.Sprintf(`namespace=%q,pod="echo-%s-0",rollouts_pod_template_hash=%q,code=%q`, ns.Name, CanaryHash, CanaryHash, c.code), float64(c.count))
		}
	}
	fmt.Fprintln(bw, "# TYPE istio_request_duration_milliseconds histogram")
	fmt.Fprintln(bw, "# HELP istio_request_duration_milliseconds Request durations (canaryd test fixture).")
	for _, ns := range Namespaces() {
		labels := common("destination", ns.Name)
		cumulative := 0.0
		for i, le := range bucketBounds {
			cumulative += ns.buckets[i]
			series("istio_request_duration_milliseconds_bucket", labels+`,le="`+le+`"`, cumulative)
		}
		series("istio_request_duration_milliseconds_sum", labels, ns.sumMs)
		series("istio_request_duration_milliseconds_count", labels, cumulative)
	}
	for _, w := range []struct {
		name     string
		mean     float64
		requests int
	}{
		{StableWorkload, StableMeanMillis, StableRequestsPerStep},
		{CanaryWorkload, StableMeanMillis * CanarySlowdown, CanaryRequestsPerStep},
	} {
		writeLatencies(bw, times, w.name, w.mean, w.requests)
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

// writeLatencies writes the request duration histogram of one workload of
// RolloutNamespace: requests per step, each lasting mean·exp(σz − σ²/2)
// milliseconds (a log-normal of that mean) with z a standard normal drawn
// from the workload, the step and the request (see normalAt).
func writeLatencies(w io.Writer, times []string, workload string, mean float64, requests int) {
	labels := rolloutLabels(workload)
	bounds := make([]float64, len(bucketBounds))
	for i, b := range bucketBounds {
		bounds[i], _ = strconv.ParseFloat(b, 64) // "+Inf" parses as +Inf
	}
	// Cumulative counters at each sample, starting at 0.
	buckets := make([][]float64, len(times))
	sums := make([]float64, len(times))
	running := make([]float64, len(bounds))
	var sum float64
	seed := fnv64(workload)
	for i := range times {
		if i > 0 {
			for k := range requests {
				z := normalAt(seed, uint64(i), uint64(k))
				ms := math.Round(mean*math.Exp(LatencySigma*z-LatencySigma*LatencySigma/2)*1000) / 1000
				sum += ms
				for b, le := range bounds {
					if ms <= le {
						running[b]++
					}
				}
			}
		}
		buckets[i] = append([]float64(nil), running...)
		sums[i] = math.Round(sum*1000) / 1000
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	for b, le := range bucketBounds {
		for i, ts := range times {
			fmt.Fprintf(w, "istio_request_duration_milliseconds_bucket{%s,le=%q} %s %s\n", labels, le, num(buckets[i][b]), ts)
		}
	}
	for i, ts := range times {
		fmt.Fprintf(w, "istio_request_duration_milliseconds_sum{%s} %s %s\n", labels, num(sums[i]), ts)
	}
	last := len(bounds) - 1
	for i, ts := range times {
		fmt.Fprintf(w, "istio_request_duration_milliseconds_count{%s} %s %s\n", labels, num(buckets[i][last]), ts)
	}
}

// rolloutLabels are the Istio labels of a workload of RolloutNamespace.
func rolloutLabels(workload string) string {
	return fmt.Sprintf(`reporter="destination",source_workload="loadgen",source_workload_namespace="loadgen",destination_workload=%q,destination_workload_namespace=%q,destination_service="%s.%s.svc.cluster.local",destination_service_name=%q,destination_service_namespace=%q,request_protocol="http"`,
		workload, RolloutNamespace, workload, RolloutNamespace, workload, RolloutNamespace)
}

// normalAt is a standard normal number that depends only on its
// arguments (Box-Muller on two uniforms from SplitMix64).
func normalAt(seed, step, k uint64) float64 {
	x := splitmix64(seed ^ splitmix64(step<<32|k))
	u1 := (float64(x>>11) + 0.5) / (1 << 53)
	u2 := (float64(splitmix64(x)>>11) + 0.5) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// splitmix64 is SplitMix64's output function (Steele, Lea and Flood 2014).
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, s)
	return h.Sum64()
}

// Fixture is the default data as a string: WriteFixture from now-2h to
// now+2h, every 15 s, aligned on multiples of the step.
func Fixture(now time.Time) string {
	var b strings.Builder
	start := now.Add(-DefaultSpan).Truncate(DefaultStep)
	end := now.Add(DefaultSpan).Truncate(DefaultStep)
	if err := WriteFixture(&b, start, end, DefaultStep); err != nil {
		panic(err) // cannot happen: the arguments are valid
	}
	return b.String()
}

// ReadFixture reads an OpenMetrics fixture file (testdata/prometheus/*.om),
// failing the test if it cannot.
func ReadFixture(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("promtest: reading fixture: %v", err)
	}
	return string(b)
}
