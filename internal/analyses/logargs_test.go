package analyses

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestLogArgs checks that an analysis' arguments are logged as zap.Any
// logs a map: an object of them, by name.
func TestLogArgs(t *testing.T) {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{})
	for _, c := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"b": "2", "a": `"1"`}, `{"args":{"a":"\"1\"","b":"2"}}` + "\n"},
		{nil, `{"args":{}}` + "\n"},
	} {
		buf, err := enc.EncodeEntry(zapcore.Entry{}, []zap.Field{zap.Object("args", logArgs(c.args))})
		if err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); got != c.want {
			t.Errorf("%v logged as %s, want %s", c.args, got, c.want)
		}
	}
}

// TestMeasurementLine checks that each measurement is logged at debug
// level with its fields, now that the line is checked before its fields
// are made.
func TestMeasurementLine(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	a, err := NewAnalyses(AnalysesOptions{MaxRunning: 1, MaxFinished: 1, Retention: time.Hour, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := a.Start(plan(t, 2), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	lines := logs.FilterMessage("measurement").All()
	if len(lines) != 2 {
		t.Fatalf("%d measurement lines, want 2", len(lines))
	}
	fields := lines[0].ContextMap()
	if lines[0].Level != zapcore.DebugLevel || fields["analysis_id"] != run.ID() || fields["metric"] != "m" || fields["phase"] != "Successful" || fields["value"] != "1" {
		t.Errorf("measurement line at %s with %v, want debug with the analysis, metric m, phase Successful, value 1", lines[0].Level, fields)
	}
}
