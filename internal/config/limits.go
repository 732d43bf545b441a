package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/canaryd/canaryd/internal/server"
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
}

// DefaultMaxQueryTimeout is MaxQueryTimeout when none is set. The other
// limits' defaults are those of the server, which enforces them.
const DefaultMaxQueryTimeout = time.Minute

// DefaultLimits returns the limits used when none is set.
func DefaultLimits() Limits {
	return Limits{
		MaxMetrics:              server.DefaultMaxMetrics,
		MaxConditionLength:      server.DefaultMaxConditionLength,
		MaxStreams:              server.DefaultMaxStreams,
		MaxQueryTimeout:         DefaultMaxQueryTimeout,
		MaxBacktests:            server.DefaultMaxBacktests,
		MaxBacktestWindow:       server.DefaultMaxBacktestWindow,
		MaxBacktestStarts:       server.DefaultMaxBacktestStarts,
		MaxBacktestMeasurements: server.DefaultMaxBacktestMeasurements,
	}
}

// limitSettings are the flags of the limits, listed after the others.
func limitSettings() []setting {
	return []setting{
		intSetting("max-metrics", fmt.Sprintf("most metrics one analysis may have; more is a 400 on metrics (default %d)", server.DefaultMaxMetrics),
			func(c *Config) *int { return &c.MaxMetrics }),
		intSetting("max-condition-length", fmt.Sprintf("longest successCondition or failureCondition accepted, in bytes (default %d)", server.DefaultMaxConditionLength),
			func(c *Config) *int { return &c.MaxConditionLength }),
		intSetting("max-streams", fmt.Sprintf("streams that may follow one analysis at once; more get 429 (default %d)", server.DefaultMaxStreams),
			func(c *Config) *int { return &c.MaxStreams }),
		durationSetting("max-query-timeout", "cap on a metric's Prometheus timeout: a longer one is lowered to it (default 1m)",
			func(c *Config) *time.Duration { return &c.MaxQueryTimeout }),
		intSetting("max-backtests", fmt.Sprintf("backtests running at once before new ones get 429 (default %d)", server.DefaultMaxBacktests),
			func(c *Config) *int { return &c.MaxBacktests }),
		durationSetting("max-backtest-window", "longest window, from start to end, a backtest may replay (default 744h, 31 days)",
			func(c *Config) *time.Duration { return &c.MaxBacktestWindow }),
		intSetting("max-backtest-starts", fmt.Sprintf("most analyses one backtest series (every) may start (default %d)", server.DefaultMaxBacktestStarts),
			func(c *Config) *int { return &c.MaxBacktestStarts }),
		intSetting("max-backtest-measurements", fmt.Sprintf("most measurements one backtest request may take, estimated from its schedule (default %d)", server.DefaultMaxBacktestMeasurements),
			func(c *Config) *int { return &c.MaxBacktestMeasurements }),
	}
}

// validate returns the limits' problems: every one must be positive, since
// none may be switched off.
func (l Limits) validate() []string {
	var problems []string
	for flag, n := range map[string]int{
		"max-metrics": l.MaxMetrics, "max-condition-length": l.MaxConditionLength, "max-streams": l.MaxStreams,
		"max-backtests": l.MaxBacktests, "max-backtest-starts": l.MaxBacktestStarts, "max-backtest-measurements": l.MaxBacktestMeasurements,
	} {
		if n < 1 {
			problems = append(problems, fmt.Sprintf("--%s: must be at least 1, got %d", flag, n))
		}
	}
	for flag, d := range map[string]time.Duration{"max-query-timeout": l.MaxQueryTimeout, "max-backtest-window": l.MaxBacktestWindow} {
		if d <= 0 {
			problems = append(problems, fmt.Sprintf("--%s: must be positive, got %s", flag, d))
		}
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
	}
}
