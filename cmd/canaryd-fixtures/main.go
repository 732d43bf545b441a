// Command canaryd-fixtures writes the demo's Prometheus data as OpenMetrics
// text, for `promtool tsdb create-blocks-from openmetrics`. The data are
// the fixture of canaryd's own tests (internal/promtest.WriteFixture), Istio request
// counters and latency histograms for three namespaces (echo, echo-good
// with 0.5% 5xx, echo-bad with 5% 5xx), one whose 5xx share rises for half
// an hour (echo-incident), and a canary 30% slower than its stable version
// (echo-rollout), from two hours before now to two hours after (-span),
// so that an analysis started now has data.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/canaryd/canaryd/internal/promtest"
)

func main() {
	span := flag.Duration("span", promtest.DefaultSpan, "how far before and after now the data reaches")
	step := flag.Duration("step", promtest.DefaultStep, "the gap between samples")
	flag.Parse()
	now := time.Now()
	start := now.Add(-*span).Truncate(*step)
	end := now.Add(*span).Truncate(*step)
	if err := promtest.WriteFixture(os.Stdout, start, end, *step); err != nil {
		fmt.Fprintln(os.Stderr, "canaryd-fixtures:", err)
		os.Exit(1)
	}
}
