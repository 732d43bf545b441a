package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestDurationUnits: operator durations take Prometheus' units as well as
// Go's, in a flag, its variable and the file alike.
func TestDurationUnits(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"30d", 30 * 24 * time.Hour},
		{"1w", 7 * 24 * time.Hour},
		{"1y", 365 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"2h30m", 150 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"1500s", 1500 * time.Second},
	} {
		file := writeFile(t, dir, "c.yaml", "retention: "+tc.value+"\nmaxAnalysisDuration: "+tc.value+"\n")
		for _, src := range []struct {
			name string
			args []string
			env  []string
		}{
			{"flag", []string{"--retention", tc.value, "--shutdown-grace=" + tc.value, "--max-analysis-duration", tc.value}, nil},
			{"variable", nil, []string{"CANARYD_RETENTION", tc.value, "CANARYD_SHUTDOWN_GRACE", tc.value, "CANARYD_MAX_ANALYSIS_DURATION", tc.value}},
			{"file", []string{"--config", file, "--shutdown-grace", tc.value}, nil},
		} {
			c, err := Load(src.args, env(src.env...), io.Discard)
			if err != nil {
				t.Errorf("%s %s: %v", src.name, tc.value, err)
				continue
			}
			if c.Retention != tc.want || c.ShutdownGrace != tc.want || c.MaxAnalysisDuration != tc.want {
				t.Errorf("%s %s: retention %s, shutdown grace %s, max analysis duration %s; want %s",
					src.name, tc.value, c.Retention, c.ShutdownGrace, c.MaxAnalysisDuration, tc.want)
			}
		}
	}
}

func TestDurationInvalid(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		file string
		want string
	}{
		{name: "no unit", args: []string{"--retention", "30"}, want: `--retention: invalid duration "30" (want e.g. 30s, 5m, 1h, 1d12h, 30d, 1w)`},
		{name: "units out of order", env: []string{"CANARYD_RETENTION", "12h1d"}, want: `CANARYD_RETENTION: invalid duration "12h1d"`},
		{name: "a fraction of a day", file: "retention: 1.5d\n", want: `retention: invalid duration "1.5d"`},
		{name: "negative", args: []string{"--retention", "-1d"}, want: "--retention: must be positive, got -24h0m0s"},
	} {
		problems, ok := loadProblems(t, tc.name, dir, tc.args, tc.file, tc.env...)
		if !ok {
			continue
		}
		if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
			t.Errorf("%s: problems %q lack %q", tc.name, problems, tc.want)
		}
	}
}
