package condition

import (
	"testing"
	"time"
)

func TestTimeExpr(t *testing.T) {
	at := time.Date(2024, time.March, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		expression string
		want       time.Time
		wantErr    string // exact; "" means no error
	}{
		// §2.5 EvalTime tests.
		{"2.5 date minus duration", `date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC") - duration("1h")`,
			time.Date(2023, time.August, 13, 23, 0, 0, 0, time.UTC), ""},
		{"2.5 not a time", `hello`, time.Time{}, "unknown name hello"},
		{"2.5 invalid expression", `now() -- ?`, time.Time{}, "unexpected token Operator(\"?\")"},
		// §3.3: rangeQuery errors carry expr's message.
		{"3.3 bad duration", `now() - duration("??")`, time.Time{}, `time: invalid duration "??"`},
		// canaryd: now() is the measurement's instant.
		{"now is the given instant", `now()`, at, ""},
		{"lookback from now", `now() - duration("5m")`, at.Add(-5 * time.Minute), ""},
		{"helpers are there", `isNaN(0.0) || isInf(0.0) ? now() : now() - duration("1h")`, at.Add(-time.Hour), ""},
		{"not a time, known when compiling", `1 + 1`, time.Time{}, "expected time.Time, but got int"},
		{"not a time, known when running", `[now(), 1][1]`, time.Time{}, "expected time.Time, but got int"},
		{"nil", `nil`, time.Time{}, "expected time.Time, but got <nil>"},
	} {
		got, err := evalTime(tc.expression, at)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if !got.Equal(tc.want) || gotErr != tc.wantErr {
			t.Errorf("%s: %q at %v = %v, %q; want %v, %q", tc.name, tc.expression, at, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

// TestTimeExprNowReadsEachInstant shows that one compiled expression reads
// the instant it is evaluated at, not the one it was compiled at.
func TestTimeExprNowReadsEachInstant(t *testing.T) {
	te, err := CompileTime(`now() - duration("1m")`)
	if err != nil {
		t.Fatalf("CompileTime: %v", err)
	}
	for _, at := range []time.Time{
		time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2030, time.June, 30, 23, 59, 0, 0, time.FixedZone("X", 3600)),
	} {
		got, err := te.Eval(at)
		if want := at.Add(-time.Minute); err != nil || !got.Equal(want) {
			t.Errorf("Eval(%v) = %v, %v; want %v", at, got, err, want)
		}
	}
}

func TestCompileTimeRejectsNonTime(t *testing.T) {
	if _, err := CompileTime(`1 + 1`); err == nil || err.Error() != "expected time.Time, but got int" {
		t.Errorf("CompileTime(`1 + 1`) error = %v; want expected time.Time, but got int", err)
	}
}

func evalTime(expression string, at time.Time) (time.Time, error) {
	te, err := CompileTime(expression)
	if err != nil {
		return time.Time{}, err
	}
	return te.Eval(at)
}
