package harness

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Namespace is a namespace of the fixture: Istio's istio_requests_total,
// as reported by the destination proxies, with a known share of 5xx.
type Namespace struct {
	// Name is the destination_workload_namespace label.
	Name string
	// SuccessRate is the share of non-5xx responses: what the success-rate
	// templates' query gives for Name anywhere in the fixture's range.
	SuccessRate float64
	// perStep is the number of requests per sample step, by response code.
	perStep map[string]int
}

// The fixture's namespaces. echo-good passes a 99% success-rate threshold
// and echo-bad fails it: the numbers match canaryd's own test fixture.
var (
	EchoGood = Namespace{Name: "echo-good", SuccessRate: 0.995,
		perStep: map[string]int{"200": 190, "404": 9, "500": 1}}
	EchoBad = Namespace{Name: "echo-bad", SuccessRate: 0.95,
		perStep: map[string]int{"200": 180, "404": 10, "500": 6, "503": 4}}
)

// fixtureStep is the spacing of samples: a usual scrape interval.
const fixtureStep = 15 * time.Second

// fixtureSpan is how far the data reaches either side of now: far beyond
// any test's length, so that a query "now" always has a minute of rate.
const fixtureSpan = time.Hour

// fixture returns OpenMetrics text, the input of promtool's backfill:
// counters growing at a constant rate per response code, one sample every
// fixtureStep from now-fixtureSpan to now+fixtureSpan. Prometheus serves
// backfilled samples in its future without complaint.
func fixture(now time.Time) string {
	start := now.Add(-fixtureSpan).Truncate(fixtureStep)
	steps := int(2 * fixtureSpan / fixtureStep)
	var b strings.Builder
	b.WriteString("# HELP istio_requests Requests seen by the Istio proxies (canaryd recipe fixture).\n")
	b.WriteString("# TYPE istio_requests counter\n")
	for _, ns := range []Namespace{EchoGood, EchoBad} {
		for _, code := range sortedCodes(ns.perStep) {
			labels := fmt.Sprintf(`reporter="destination",destination_workload="echo",destination_workload_namespace=%q,response_code=%q`, ns.Name, code)
			for i := 0; i <= steps; i++ {
				ts := start.Add(time.Duration(i) * fixtureStep).Unix()
				fmt.Fprintf(&b, "istio_requests_total{%s} %d %s\n", labels, i*ns.perStep[code], strconv.FormatInt(ts, 10))
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// sortedCodes returns the response codes in order: promtool wants each
// series' samples together, and a stable file is easier to read.
func sortedCodes(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
