package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/internal/limits"
)

// Limits bound what one caller can make the service do: how big an
// analysis may be, how many watch one, how long a query may take, and how
// much history a backtest may replay. Each has a flag, and each refusal
// names the field and the flag.
type Limits struct {
	// MaxMetrics is the most metrics one analysis may have.
	MaxMetrics int
	// MaxConditionLength is the longest successCondition or
	// failureCondition accepted, in bytes.
	MaxConditionLength int
	// MaxStreams is how many streams may follow one analysis at once.
	MaxStreams int
	// MaxQueryTimeout caps a metric's Prometheus timeout: a longer one is
	// lowered to it, as Prometheus lowers a query's timeout to its own
	// --query.timeout.
	MaxQueryTimeout time.Duration
	// MaxBacktests is how many backtests may run at once.
	MaxBacktests int
	// MaxBacktestWindow is the longest stretch of history, from start to
	// end, a backtest may replay.
	MaxBacktestWindow time.Duration
	// MaxBacktestStarts is the most analyses one backtest series may start
	// (window ÷ every).
	MaxBacktestStarts int
	// MaxBacktestMeasurements bounds the measurements one backtest request
	// may take, as estimated from its schedule before it runs.
	MaxBacktestMeasurements int
	// MaxRounds is how many rounds (the evaluate endpoints) and gates may
	// be answered at once.
	MaxRounds int
	// MaxRetainedBytes bounds the results held in memory (running and
	// finished analyses, estimated from what they recorded); finished
	// ones are evicted oldest first to stay under it.
	MaxRetainedBytes int64
	// MinRetention is how long a finished analysis is kept at least,
	// whatever MaxRetainedBytes and --max-finished say: a new analysis is
	// refused rather than evict a younger one.
	MinRetention time.Duration
	// MaxResultValues is the most values a query's result may have (a
	// vector's samples, a matrix's points); a measurement with more is an
	// Error naming it, found while the response is decoded.
	MaxResultValues int
	// MaxQueryLength is the longest query accepted, in bytes, with its
	// arguments substituted.
	MaxQueryLength int
	// VerbatimArgs substitutes the arguments of Argo documents as they
	// are, as Argo Rollouts does, rather than escaping or checking them;
	// for a canaryd whose callers are all trusted with every query's
	// structure.
	VerbatimArgs bool
}

// DefaultMaxQueryTimeout is MaxQueryTimeout when none is set.
const DefaultMaxQueryTimeout = limits.MaxQueryTimeout

// DefaultLimits returns the limits used when none is set.
func DefaultLimits() Limits {
	return Limits{
		MaxMetrics:              limits.MaxMetrics,
		MaxConditionLength:      limits.MaxConditionLength,
		MaxStreams:              limits.MaxStreams,
		MaxQueryTimeout:         DefaultMaxQueryTimeout,
		MaxBacktests:            limits.MaxBacktests,
		MaxBacktestWindow:       limits.MaxBacktestWindow,
		MaxBacktestStarts:       limits.MaxBacktestStarts,
		MaxBacktestMeasurements: limits.MaxBacktestMeasurements,
		MaxRounds:               limits.MaxRounds,
		MaxRetainedBytes:        limits.MaxRetainedBytes,
		MinRetention:            limits.MinRetention,
		MaxResultValues:         limits.MaxResultValues,
		MaxQueryLength:          limits.MaxQueryLength,
	}
}

// limitSettings are the flags of the limits, listed after the others.
func limitSettings() []setting {
	return []setting{
		intSetting("max-metrics", fmt.Sprintf("most metrics one analysis may have; more is a 400 on metrics (default %d)", limits.MaxMetrics),
			func(c *Config) *int { return &c.MaxMetrics }),
		intSetting("max-condition-length", fmt.Sprintf("longest successCondition or failureCondition accepted, in bytes (default %d)", limits.MaxConditionLength),
			func(c *Config) *int { return &c.MaxConditionLength }),
		intSetting("max-streams", fmt.Sprintf("streams that may follow one analysis at once; more get 429 (default %d)", limits.MaxStreams),
			func(c *Config) *int { return &c.MaxStreams }),
		durationSetting("max-query-timeout", "cap on a metric's Prometheus timeout: a longer one is lowered to it (default 1m)",
			func(c *Config) *time.Duration { return &c.MaxQueryTimeout }),
		intSetting("max-backtests", fmt.Sprintf("backtests running at once before new ones get 429 (default %d)", limits.MaxBacktests),
			func(c *Config) *int { return &c.MaxBacktests }),
		durationSetting("max-backtest-window", "longest window, from start to end, a backtest may replay (default 744h, 31 days)",
			func(c *Config) *time.Duration { return &c.MaxBacktestWindow }),
		intSetting("max-backtest-starts", fmt.Sprintf("most analyses one backtest series (every) may start (default %d)", limits.MaxBacktestStarts),
			func(c *Config) *int { return &c.MaxBacktestStarts }),
		intSetting("max-backtest-measurements", fmt.Sprintf("most measurements one backtest request may take, estimated from its schedule (default %d)", limits.MaxBacktestMeasurements),
			func(c *Config) *int { return &c.MaxBacktestMeasurements }),
		intSetting("max-rounds", fmt.Sprintf("rounds (/evaluate) and gates answered at once before new ones get 429 (default %d)", limits.MaxRounds),
			func(c *Config) *int { return &c.MaxRounds }),
		bytesSetting("max-retained-bytes", "results held in memory, running and finished analyses, in bytes (256MiB, 1GiB); finished ones are evicted oldest first, and new analyses get 429 when none can be (default 256MiB)",
			func(c *Config) *int64 { return &c.MaxRetainedBytes }),
		durationSetting("min-retention", "how long a finished analysis is kept at least, whatever --max-retained-bytes and --max-finished say; at most --retention (default 1m)",
			func(c *Config) *time.Duration { return &c.MinRetention }),
		intSetting("max-result-values", fmt.Sprintf("most values a query's result may have (a vector's samples, a matrix's points); a measurement with more is an Error (default %d)", limits.MaxResultValues),
			func(c *Config) *int { return &c.MaxResultValues }),
		intSetting("max-query-length", fmt.Sprintf("longest query accepted, in bytes, with its arguments substituted; longer is a 400 on the query (default %d)", limits.MaxQueryLength),
			func(c *Config) *int { return &c.MaxQueryLength }),
		boolSetting("verbatim-args", "substitute the arguments of argoproj.io/v1alpha1 documents as they are, as Argo Rollouts does, rather than escape them in strings and refuse what would change a query's or condition's structure; only where every caller may write any query (default false)",
			func(c *Config) *bool { return &c.VerbatimArgs }),
	}
}

// boolSetting reads true or false (1, 0, t, f, …, as strconv.ParseBool);
// its flag alone means true.
func boolSetting(name, usage string, field func(*Config) *bool) setting {
	return setting{name: name, usage: usage, boolean: true, set: func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid boolean %q (want true or false)", v)
		}
		*field(c) = b
		return nil
	}}
}

// bytesSetting reads a size in bytes: a number, optionally followed by
// KiB, MiB or GiB (or KB, MB, GB in powers of ten).
func bytesSetting(name, usage string, field func(*Config) *int64) setting {
	return setting{name: name, usage: usage, set: func(c *Config, v string) error {
		n, err := parseBytes(v)
		if err != nil {
			return err
		}
		*field(c) = n
		return nil
	}}
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

// validate returns the limits' problems: every one must be positive, since
// none may be switched off, and the minimum retention at most retention.
func (l Limits) validate(retention time.Duration) []string {
	var problems []string
	for flag, n := range map[string]int{
		"max-metrics": l.MaxMetrics, "max-condition-length": l.MaxConditionLength, "max-streams": l.MaxStreams,
		"max-backtests": l.MaxBacktests, "max-backtest-starts": l.MaxBacktestStarts, "max-backtest-measurements": l.MaxBacktestMeasurements,
		"max-rounds": l.MaxRounds, "max-result-values": l.MaxResultValues, "max-query-length": l.MaxQueryLength,
	} {
		if n < 1 {
			problems = append(problems, fmt.Sprintf("--%s: must be at least 1, got %d", flag, n))
		}
	}
	for flag, d := range map[string]time.Duration{"max-query-timeout": l.MaxQueryTimeout, "max-backtest-window": l.MaxBacktestWindow, "min-retention": l.MinRetention} {
		if d <= 0 {
			problems = append(problems, fmt.Sprintf("--%s: must be positive, got %s", flag, d))
		}
	}
	if l.MaxRetainedBytes < 1<<20 {
		problems = append(problems, fmt.Sprintf("--max-retained-bytes: must be at least 1MiB, got %d bytes", l.MaxRetainedBytes))
	}
	if l.MinRetention > retention && retention > 0 {
		problems = append(problems, fmt.Sprintf("--min-retention: must be at most --retention (%s), got %s", retention, l.MinRetention))
	}
	slices.Sort(problems) // map order must not decide the message order
	return problems
}

// fileLimits are the limits' keys in the --config file.
type fileLimits struct {
	MaxMetrics              *string `yaml:"maxMetrics"`
	MaxConditionLength      *string `yaml:"maxConditionLength"`
	MaxStreams              *string `yaml:"maxStreams"`
	MaxQueryTimeout         *string `yaml:"maxQueryTimeout"`
	MaxBacktests            *string `yaml:"maxBacktests"`
	MaxBacktestWindow       *string `yaml:"maxBacktestWindow"`
	MaxBacktestStarts       *string `yaml:"maxBacktestStarts"`
	MaxBacktestMeasurements *string `yaml:"maxBacktestMeasurements"`
	MaxRounds               *string `yaml:"maxRounds"`
	MaxRetainedBytes        *string `yaml:"maxRetainedBytes"`
	MinRetention            *string `yaml:"minRetention"`
	MaxResultValues         *string `yaml:"maxResultValues"`
	MaxQueryLength          *string `yaml:"maxQueryLength"`
	VerbatimArgs            *string `yaml:"verbatimArgs"`
}

// scalars are the values the file gives, by flag name.
func (f fileLimits) scalars() map[string]*string {
	return map[string]*string{
		"max-metrics":               f.MaxMetrics,
		"max-condition-length":      f.MaxConditionLength,
		"max-streams":               f.MaxStreams,
		"max-query-timeout":         f.MaxQueryTimeout,
		"max-backtests":             f.MaxBacktests,
		"max-backtest-window":       f.MaxBacktestWindow,
		"max-backtest-starts":       f.MaxBacktestStarts,
		"max-backtest-measurements": f.MaxBacktestMeasurements,
		"max-rounds":                f.MaxRounds,
		"max-retained-bytes":        f.MaxRetainedBytes,
		"min-retention":             f.MinRetention,
		"max-result-values":         f.MaxResultValues,
		"max-query-length":          f.MaxQueryLength,
		"verbatim-args":             f.VerbatimArgs,
	}
}
