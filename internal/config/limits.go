package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/internal/limits"
)

// DefaultMaxQueryTimeout is MaxQueryTimeout when none is set.
const DefaultMaxQueryTimeout = limits.MaxQueryTimeout

// limitSettings are the settings of the limits, listed after the others.
func limitSettings() []setting {
	g := groupLimits
	return []setting{
		atLeast(intSetting(g, "max-metrics", "most metrics one analysis may have; more is a 400 on metrics",
			func(c *Config) *int { return &c.MaxMetrics }), 1, ""),
		atLeast(intSetting(g, "max-condition-length", "longest successCondition or failureCondition accepted, in bytes",
			func(c *Config) *int { return &c.MaxConditionLength }), 1, ""),
		atLeast(intSetting(g, "max-streams", "streams that may follow one analysis at once; more get 429",
			func(c *Config) *int { return &c.MaxStreams }), 1, ""),
		atLeast(intSetting(g, "max-report-renders", "HTML reports (GET /v1/analyses/{id} with Accept: text/html) drawn at once; more get 429",
			func(c *Config) *int { return &c.MaxReportRenders }), 1, ""),
		atLeast(intSetting(g, "report-query-rate", "range queries a second the HTML reports may send to Prometheus, all together, in bursts of 50; beyond it a metric's series are not drawn, and its chart says so",
			func(c *Config) *int { return &c.ReportQueryRate }), 1, ""),
		atLeast(bytesSetting(g, "report-cache-bytes", "shaded bands and series kept for HTML reports drawn again (32MiB): a finished analysis' series are fetched once, a running one's at most every 5s",
			func(c *Config) *int64 { return &c.ReportCacheBytes }), 1<<20, ""),
		positive(durationSetting(g, "max-query-timeout", "cap on a metric's Prometheus timeout: a longer one is lowered to it",
			func(c *Config) *time.Duration { return &c.MaxQueryTimeout })),
		atLeast(intSetting(g, "max-backtests", "backtests running at once before new ones get 429",
			func(c *Config) *int { return &c.MaxBacktests }), 1, ""),
		positive(durationSetting(g, "max-backtest-window", "longest window, from start to end, a backtest may replay (744h is 31 days)",
			func(c *Config) *time.Duration { return &c.MaxBacktestWindow })),
		atLeast(intSetting(g, "max-backtest-starts", "most analyses one backtest series (every) may start",
			func(c *Config) *int { return &c.MaxBacktestStarts }), 1, ""),
		atLeast(intSetting(g, "max-backtest-measurements", "most measurements one backtest request may take, estimated from its schedule",
			func(c *Config) *int { return &c.MaxBacktestMeasurements }), 1, ""),
		atLeast(intSetting(g, "max-judge-looks", "most looks one POST /v1/judge may post, and most intervals of the baseline's history beside them; more is a 400 on looks (history)",
			func(c *Config) *int { return &c.MaxJudgeLooks }), 1, ""),
		atLeast(intSetting(g, "max-rounds", "rounds (/evaluate) and gates answered at once before new ones get 429",
			func(c *Config) *int { return &c.MaxRounds }), 1, ""),
		atLeast(bytesSetting(g, "max-retained-bytes", "results held in memory, running and finished analyses, in bytes (256MiB, 1GiB); finished ones are evicted oldest first, and new analyses get 429 when none can be",
			func(c *Config) *int64 { return &c.MaxRetainedBytes }), 1<<20, ""),
		positive(durationSetting(g, "min-retention", "how long a finished analysis is kept at least, whatever --max-retained-bytes and --max-finished say; at most --retention",
			func(c *Config) *time.Duration { return &c.MinRetention })),
		atLeast(intSetting(g, "max-result-values", "most values a query's result may have (a vector's samples, a matrix's points); a measurement with more is an Error",
			func(c *Config) *int { return &c.MaxResultValues }), 1, ""),
		atLeast(intSetting(g, "max-query-length", "longest query accepted, in bytes, with its arguments substituted; longer is a 400 on the query",
			func(c *Config) *int { return &c.MaxQueryLength }), 1, ""),
		boolSetting(g, "verbatim-args", "substitute the arguments of argoproj.io/v1alpha1 documents as they are, as Argo Rollouts does, rather than escape them in strings and refuse what would change a query's or condition's structure; only where every caller may write any query",
			func(c *Config) *bool { return &c.VerbatimArgs }),
	}
}

// parseBytes reads a size such as 268435456, 256MiB or 1GB.
func parseBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	unit := int64(1)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, unit = strings.TrimSpace(rest), u.size
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > (1<<62)/unit {
		return 0, fmt.Errorf("invalid size %q (want bytes, or a number with KiB, MiB, GiB: 256MiB)", v)
	}
	return n * unit, nil
}

// validateLimits returns the problems of the limits as a whole (each
// one's bound is its setting's): the minimum retention at most the
// retention.
func validateLimits(l limits.Limits, retention time.Duration) []string {
	var problems []string
	if l.MinRetention > retention && retention > 0 {
		problems = append(problems, fmt.Sprintf("--min-retention: must be at most --retention (%s), got %s", retention, l.MinRetention))
	}
	return problems
}
