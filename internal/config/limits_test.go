package config

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/limits"
)

// TestLimits checks the limits' defaults and that each is read from a flag,
// a variable and the file, as every setting is.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.yaml", "maxMetrics: 7\nmaxJudgeLooks: 123\nmaxBacktestWindow: 48h\nmaxQueryTimeout: 20s\nmaxRetainedBytes: 128MiB\nmaxResultValues: 300\nmaxQueryLength: 1000\nverbatimArgs: true\n")
	tests := []struct {
		name string
		args []string
		env  []string
		want func(*limits.Limits)
	}{
		{name: "defaults", want: func(*limits.Limits) {}},
		{name: "flags", args: []string{"--max-metrics", "10", "--max-condition-length", "512", "--max-streams", "8", "--max-query-timeout", "15s",
			"--max-backtests", "2", "--max-backtest-window", "72h", "--max-backtest-starts", "100", "--max-backtest-measurements", "5000",
			"--max-judge-looks", "500", "--max-rounds", "16", "--max-retained-bytes", "1GiB", "--min-retention", "5m", "--max-result-values", "50000",
			"--max-query-length", "8192", "--verbatim-args", "--max-report-renders", "2", "--report-query-rate", "3", "--report-cache-bytes", "8MiB"},
			want: func(l *limits.Limits) {
				// Every limit with a flag, the others (and --max-analysis-duration) at their defaults.
				*l = limits.Limits{MaxConditionNodes: l.MaxConditionNodes, MaxFieldLength: l.MaxFieldLength, MaxResolvedSize: l.MaxResolvedSize,
					MaxAnalysisDuration: l.MaxAnalysisDuration, MaxMetrics: 10, MaxConditionLength: 512, MaxStreams: 8, MaxQueryTimeout: 15 * time.Second,
					MaxReportRenders: 2, ReportQueryRate: 3, ReportCacheBytes: 8 << 20,
					MaxBacktests: 2, MaxBacktestWindow: 72 * time.Hour, MaxBacktestStarts: 100, MaxBacktestMeasurements: 5000,
					MaxJudgeLooks: 500, MaxRounds: 16, MaxRetainedBytes: 1 << 30, MinRetention: 5 * time.Minute, MaxResultValues: 50000,
					MaxQueryLength: 8192, VerbatimArgs: true}
			}},
		{name: "sizes in bytes and powers of ten", args: []string{"--max-retained-bytes", "2000000"}, env: []string{"CANARYD_MAX_RETAINED_BYTES", "64MB"},
			want: func(l *limits.Limits) { l.MaxRetainedBytes = 2_000_000 }},
		{name: "a size in a variable", env: []string{"CANARYD_MAX_RETAINED_BYTES", "64MB"},
			want: func(l *limits.Limits) { l.MaxRetainedBytes = 64_000_000 }},
		{name: "variables", env: []string{"CANARYD_MAX_STREAMS", "3", "CANARYD_MAX_BACKTESTS", "1", "CANARYD_MAX_RESULT_VALUES", "2000",
			"CANARYD_MAX_QUERY_LENGTH", "4096", "CANARYD_VERBATIM_ARGS", "true", "CANARYD_MAX_JUDGE_LOOKS", "70"},
			want: func(l *limits.Limits) {
				l.MaxStreams, l.MaxBacktests, l.MaxResultValues, l.MaxQueryLength, l.VerbatimArgs = 3, 1, 2000, 4096, true
				l.MaxJudgeLooks = 70
			}},
		{name: "a boolean flag given false over a variable", args: []string{"--verbatim-args=false"}, env: []string{"CANARYD_VERBATIM_ARGS", "true"},
			want: func(*limits.Limits) {}},
		{name: "file, and a flag over it", args: []string{"--config", file, "--max-metrics", "9"},
			want: func(l *limits.Limits) {
				l.MaxMetrics, l.MaxBacktestWindow, l.MaxQueryTimeout = 9, 48*time.Hour, 20*time.Second
				l.MaxRetainedBytes, l.MaxResultValues = 128<<20, 300
				l.MaxQueryLength, l.VerbatimArgs, l.MaxJudgeLooks = 1000, true, 123
			}},
	}
	for _, tt := range tests {
		c, err := Load(tt.args, env(tt.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		want := limits.Default()
		tt.want(&want)
		if !reflect.DeepEqual(c.Limits, want) {
			t.Errorf("%s: limits\n got %+v\nwant %+v", tt.name, c.Limits, want)
		}
	}
}

// TestLimitsInvalid checks that a limit cannot be switched off or made
// negative, and that every such problem is reported at once.
func TestLimitsInvalid(t *testing.T) {
	_, err := Load([]string{"--max-metrics", "0", "--max-streams", "-1", "--max-query-timeout", "0s", "--max-backtest-window", "-1h",
		"--max-rounds", "0", "--max-retained-bytes", "512KiB", "--min-retention", "2h", "--retention", "1h", "--max-result-values", "0",
		"--max-query-length", "0", "--verbatim-args=maybe", "--max-judge-looks", "0"}, env(), io.Discard)
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("Load: %v, want *Error", err)
	}
	want := []string{
		"--max-backtest-window: must be positive, got -1h0m0s",
		"--max-metrics: must be at least 1, got 0",
		"--max-query-timeout: must be positive, got 0s",
		"--max-streams: must be at least 1, got -1",
		"--max-rounds: must be at least 1, got 0",
		"--max-result-values: must be at least 1, got 0",
		"--max-retained-bytes: must be at least 1MiB, got 524288 bytes",
		"--min-retention: must be at most --retention (1h0m0s), got 2h0m0s",
		"--max-query-length: must be at least 1, got 0",
		"--max-judge-looks: must be at least 1, got 0",
		`--verbatim-args: invalid boolean "maybe" (want true or false)`,
	}
	got := strings.Join(cerr.Problems, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("problems lack %q:\n%s", w, got)
		}
	}
	if _, err := Load([]string{"--max-retained-bytes", "lots"}, env(), io.Discard); err == nil || !strings.Contains(err.Error(), `invalid size "lots"`) {
		t.Errorf("--max-retained-bytes lots: %v, want an invalid size", err)
	}
	if _, err := Load([]string{"--config", writeFile(t, t.TempDir(), "c.yaml", "maxStream: 3\n")}, env(), io.Discard); err == nil || !strings.Contains(err.Error(), "unknown key maxStream") {
		t.Errorf("a misspelt limit key: %v, want an unknown key", err)
	}
}
