package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// judgeLooks are the examples of docs/judge.md: a clear regression and an
// A/A canary, four looks each.
const judgeLooksDir = "../../testdata/judge/looks/"

// judgeLine is a line of canaryd judge, numbers that are not finite null.
type judgeLine struct {
	Look     int      `json:"look"`
	EValue   *float64 `json:"eValue"`
	PValue   *float64 `json:"pValue"`
	Ratio    struct{ Estimate, Lower, Upper *float64 }
	Decision string `json:"decision"`
}

// judgeIn runs canaryd judge in-process.
func judgeIn(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(context.Background(), append([]string{"judge"}, args...), func(string) string { return "" }, strings.NewReader(stdin), &stdout, &stderr)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// judgeLines reads canaryd judge's output: every line a JSON object of
// exactly the documented fields.
func judgeLines(t *testing.T, stdout string) []judgeLine {
	t.Helper()
	var out []judgeLine
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if l == "" {
			continue
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.DisallowUnknownFields()
		var j judgeLine
		if err := d.Decode(&j); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, j)
	}
	return out
}

func lookLine(cb, ct, bb, bt float64) string {
	return fmt.Sprintf(`{"canary":{"bad":%g,"total":%g},"baseline":{"bad":%g,"total":%g}}`, cb, ct, bb, bt) + "\n"
}

// aaLooks is an A/A stream of n looks: both sides' bad events at the same
// rate, 1%, of 1,000 events a look, the canary's a little ahead of the
// baseline's and then behind.
func aaLooks(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		wobble := float64(i % 3)
		b.WriteString(lookLine(float64(10*i)+wobble, float64(1000*i), float64(10*i)+2-wobble, float64(1000*i)))
	}
	return b.String()
}

func TestJudgeCommand(t *testing.T) {
	regression, err := os.ReadFile(judgeLooksDir + "regression.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		stdin     string
		args      []string
		wantCode  int
		wantLines []string // each line's decision
	}{
		{"a clear regression fails at its second look", string(regression), nil, exitFailed, []string{"continue", "Failed"}},
		{"the same regression from a file", "", []string{judgeLooksDir + "regression.ndjson"}, exitFailed, []string{"continue", "Failed"}},
		{"the file before the flags", "", []string{judgeLooksDir + "regression.ndjson", "--all"}, exitFailed, []string{"continue", "Failed", "Failed", "Failed"}},
		{"--all goes on to the end, the decision staying", string(regression), []string{"--all"}, exitFailed, []string{"continue", "Failed", "Failed", "Failed"}},
		{"- is standard input", string(regression), []string{"-", "--alpha", "0.05"}, exitFailed, []string{"continue", "Failed"}},
		{"a tolerance of 20 passes the same regression", string(regression), []string{"--tolerance", "20"}, exitSuccessful, []string{"continue", "continue", "continue", "Successful"}},
		{"direction decrease passes a rise", string(regression), []string{"--direction", "decrease"}, exitSuccessful, []string{"continue", "Successful"}},
		{"an A/A stream continues, then ends Successful", "", []string{judgeLooksDir + "aa.ndjson"}, exitSuccessful, []string{"continue", "continue", "continue", "Successful"}},
		{"blank lines are skipped", "\n" + aaLooks(2) + "\n  \n", nil, exitSuccessful, []string{"continue", "Successful"}},
		{"a canary worse, but not surely, ends Inconclusive", lookLine(25, 1000, 10, 1000) + lookLine(50, 2000, 20, 2000), nil, exitInconclusive, []string{"continue", "Inconclusive"}},
		{"the bound on looks, reached", aaLooks(3), []string{"--max-looks", "3"}, exitSuccessful, []string{"continue", "continue", "Successful"}},
		{"spaces, keys in any order, fractions and exponents", `{ "baseline" : {"total": 1e3, "bad": 10.5}, "canary": {"bad":10, "total":1000.0} }` + "\n", nil, exitSuccessful, []string{"Successful"}},
		{"escapes in keys", `{"c\u0061nary":{"bad":10,"total":1000},"baseline":{"bad":10,"total":1000}}` + "\n", nil, exitSuccessful, []string{"Successful"}},
		{"no newline at the end", strings.TrimSuffix(lookLine(10, 1000, 10, 1000), "\n"), nil, exitSuccessful, []string{"Successful"}},
		// A day of a steady baseline puts the dispersion near 1 from the
		// first look, which then decides alone.
		{"the baseline's history", string(regression), []string{"--history", judgeLooksDir + "baseline-day.ndjson"}, exitFailed, []string{"Failed"}},
		{"the history on standard input, the looks from a file", baselineDay(), []string{judgeLooksDir + "regression.ndjson", "--history", "-"}, exitFailed, []string{"Failed"}},
		{"an empty history: the default prior", string(regression), []string{"--history", os.DevNull}, exitFailed, []string{"continue", "Failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeIn(t, tt.stdin, tt.args...)
			if got.code != tt.wantCode {
				t.Errorf("exit code %d, want %d\n%s", got.code, tt.wantCode, got.stderr)
			}
			if got.stderr != "" {
				t.Errorf("stderr: %s", got.stderr)
			}
			lines := judgeLines(t, got.stdout)
			var decisions []string
			for i, l := range lines {
				decisions = append(decisions, l.Decision)
				if l.Look != i+1 {
					t.Errorf("line %d: look %d", i+1, l.Look)
				}
				if l.EValue == nil || l.PValue == nil || *l.PValue > 1 || *l.PValue <= 0 {
					t.Errorf("line %d: eValue %v, pValue %v", i+1, l.EValue, l.PValue)
				}
			}
			if strings.Join(decisions, " ") != strings.Join(tt.wantLines, " ") {
				t.Errorf("decisions %v, want %v\n%s", decisions, tt.wantLines, got.stdout)
			}
		})
	}
}

// TestJudgeCommandNulls: a bound or estimate that is not finite is null.
func TestJudgeCommandNulls(t *testing.T) {
	got := judgeIn(t, lookLine(5, 100, 0, 100))
	if !strings.Contains(got.stdout, `"ratio":{"estimate":null,"lower":0,"upper":null}`) {
		t.Errorf("a canary with bad events and a baseline with none: %s", got.stdout)
	}
	got = judgeIn(t, lookLine(0, 0, 0, 0))
	if !strings.Contains(got.stdout, `"estimate":null`) || got.code != exitSuccessful {
		t.Errorf("no events: exit %d, %s%s", got.code, got.stdout, got.stderr)
	}
}

func TestJudgeCommandBadInput(t *testing.T) {
	ok := lookLine(10, 1000, 10, 1000)
	tests := []struct {
		name      string
		stdin     string
		args      []string
		wantErr   string
		wantLines int // lines written before the bad one
	}{
		{"alpha 0", ok, []string{"--alpha", "0"}, "--alpha: must be in (0, 0.5], got 0", 0},
		{"alpha above 0.5", ok, []string{"--alpha", "0.6"}, "--alpha: must be in (0, 0.5], got 0.6", 0},
		{"alpha NaN", ok, []string{"--alpha", "NaN"}, "--alpha: must be in (0, 0.5], got NaN", 0},
		{"tolerance 0", ok, []string{"--tolerance", "0"}, "--tolerance: must be a finite number > 0, got 0", 0},
		{"tolerance negative", ok, []string{"--tolerance", "-1"}, "--tolerance: must be a finite number > 0, got -1", 0},
		{"tolerance infinite", ok, []string{"--tolerance", "+Inf"}, "--tolerance: must be a finite number > 0, got +Inf", 0},
		{"direction either", ok, []string{"--direction", "either"}, `--direction: must be increase or decrease, got "either"`, 0},
		{"max-looks 0", ok, []string{"--max-looks", "0"}, "--max-looks: must be at least 1, got 0", 0},
		{"an unknown flag", ok, []string{"--alfa", "0.1"}, "flag provided but not defined: -alfa", 0},
		{"two files", ok, []string{"a.ndjson", "b.ndjson"}, `2 files given ("a.ndjson", "b.ndjson")`, 0},
		{"a missing file", "", []string{"/nonexistent/looks.ndjson"}, "/nonexistent/looks.ndjson: no such file or directory", 0},
		{"no looks", "\n\n", nil, "canaryd judge: no looks: the input has none", 0},
		{"counts that decrease", aaLooks(6) + lookLine(5, 7000, 70, 7000), nil,
			"line 7: canary.bad: counts are cumulative and must not decrease: 5 after 60", 6},
		{"a total that decreases", ok + lookLine(10, 1000, 10, 999), nil,
			"line 2: baseline.total: counts are cumulative and must not decrease: 999 after 1000", 1},
		{"a negative count", lookLine(-1, 1000, 10, 1000), nil, "line 1: canary.bad: must not be negative, got -1", 0},
		{"more bad than total", ok + lookLine(10, 1000, 1001, 1000), nil,
			"line 2: baseline.bad: more bad events (1001) than total events (1000)", 1},
		{"NaN, which JSON does not have", `{"canary":{"bad":NaN,"total":1000},"baseline":{"bad":10,"total":1000}}`, nil, "line 1: not JSON: invalid character 'N'", 0},
		{"the string NaN", `{"canary":{"bad":"NaN","total":1000},"baseline":{"bad":10,"total":1000}}`, nil, `line 1: canary.bad: must be a number, got a string ("NaN")`, 0},
		{"Infinity", `{"canary":{"bad":1,"total":Infinity},"baseline":{"bad":10,"total":1000}}`, nil, "line 1: not JSON", 0},
		{"a number beyond a float64", ok + `{"canary":{"bad":10,"total":1e999},"baseline":{"bad":10,"total":1000}}`, nil,
			"line 2: canary.total: must be a finite number, got 1e999 (beyond a float64)", 1},
		{"null", `{"canary":{"bad":null,"total":1000},"baseline":{"bad":10,"total":1000}}`, nil, "line 1: canary.bad: must be a number, got null", 0},
		{"a line that is not JSON", ok + ok + "canary=10 baseline=10\n", nil, "line 3: not JSON: invalid character 'c'", 2},
		{"half a look", `{"canary":{"bad":10,"total":1000},"baseline":{"bad":10,`, nil, "line 1: not JSON: unexpected end of JSON input", 0},
		{"an unknown field", `{"canary":{"bad":10,"total":1000,"errors":3},"baseline":{"bad":10,"total":1000}}`, nil,
			"line 1: canary.errors: unknown field; canary takes bad and total", 0},
		{"an unknown side", `{"canary":{"bad":10,"total":1000},"baseline":{"bad":10,"total":1000},"control":{}}`, nil,
			"line 1: control: unknown field; a look takes canary and baseline", 0},
		{"a key in another case", `{"Canary":{"bad":10,"total":1000},"baseline":{"bad":10,"total":1000}}`, nil,
			"line 1: Canary: unknown field", 0},
		{"a field given twice", `{"canary":{"bad":10,"bad":11,"total":1000},"baseline":{"bad":10,"total":1000}}`, nil,
			"line 1: canary.bad: given more than once", 0},
		{"a missing count", `{"canary":{"bad":10},"baseline":{"bad":10,"total":1000}}`, nil, "line 1: canary.total: is required", 0},
		{"a missing side", `{"canary":{"bad":10,"total":1000}}`, nil, "line 1: baseline: is required", 0},
		{"a side that is not an object", `{"canary":[10,1000],"baseline":{"bad":10,"total":1000}}`, nil,
			`line 1: canary: canary must be an object {"bad": …, "total": …}, got an array`, 0},
		{"an array", `[10, 1000, 10, 1000]`, nil, "line 1: a look must be an object", 0},
		{"two looks on a line", strings.TrimSpace(ok) + ok, nil, "line 1: not JSON: invalid character '{' after top-level value", 0},
		{"more looks than --max-looks", aaLooks(4), []string{"--max-looks", "3"}, "line 4: more looks than --max-looks (3)", 3},
		{"a line longer than a MiB", ok + strings.Repeat(" ", 1<<20) + ok, nil, "line 2: longer than 1048576 bytes", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeIn(t, tt.stdin, tt.args...)
			if got.code != exitUsage {
				t.Errorf("exit code %d, want %d", got.code, exitUsage)
			}
			if !strings.Contains(got.stderr, tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, got.stderr)
			}
			lines := judgeLines(t, got.stdout)
			if len(lines) != tt.wantLines {
				t.Errorf("%d lines on stdout, want %d, the looks before the bad one:\n%s", len(lines), tt.wantLines, got.stdout)
			}
			for _, l := range lines {
				if l.Decision != "continue" {
					t.Errorf("a line before the bad one concludes: %+v", l)
				}
			}
		})
	}
}

// firstEValue is the e-value of the first look of regression.ndjson
// judged with the history given (none when "").
func firstEValue(t *testing.T, history string) float64 {
	t.Helper()
	args := []string{judgeLooksDir + "regression.ndjson", "--all"}
	if history != "" {
		path := filepath.Join(t.TempDir(), "history.ndjson")
		if err := os.WriteFile(path, []byte(history), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--history", path)
	}
	got := judgeIn(t, "", args...)
	lines := judgeLines(t, got.stdout)
	if len(lines) != 4 || lines[0].EValue == nil {
		t.Fatalf("exit %d, %d lines:\n%s%s", got.code, len(lines), got.stdout, got.stderr)
	}
	return *lines[0].EValue
}

// TestJudgeCommandHistory: the baseline's history sets the dispersion the
// first looks are judged at. Without one, the first look's evidence is
// divided by some 36 (the default prior); a day of a baseline without
// bursts leaves it nearly whole; a bursty baseline's divides it by its
// own dispersion, between the two; a history without bad events tells
// nothing.
func TestJudgeCommandHistory(t *testing.T) {
	none := firstEValue(t, "")
	steady := firstEValue(t, baselineDay())
	var bursty, quiet strings.Builder
	for i := 1; i <= 288; i++ {
		// An error an interval, and 10 at once every 24 intervals.
		fmt.Fprintf(&bursty, `{"bad":%d,"total":%d}`+"\n", i+10*(i/24), 1000*i)
		fmt.Fprintf(&quiet, `{"bad":0,"total":%d}`+"\n", 1000*i)
	}
	burst := firstEValue(t, bursty.String())
	if !(steady > 100*none) {
		t.Errorf("the first look's e-value: %g with a steady baseline's history, %g without; want it far above", steady, none)
	}
	if !(none < burst && burst < steady) {
		t.Errorf("the first look's e-value: %g with a bursty baseline's history, want it between %g (none) and %g (steady)", burst, none, steady)
	}
	if got := firstEValue(t, quiet.String()); got != none {
		t.Errorf("a history without bad events: the first look's e-value %g, want %g, as without one", got, none)
	}
}

// TestJudgeCommandBadHistory: bad input in --history is exit 64 naming
// the line and the interval's field, and nothing is judged.
func TestJudgeCommandBadHistory(t *testing.T) {
	ok := `{"bad":1,"total":1000}` + "\n"
	tests := []struct {
		name    string
		history string
		args    []string
		wantErr string
	}{
		{"not JSON", ok + "bad=1 total=1000\n", nil, "--history line 2: not JSON: invalid character 'b'"},
		{"not an object", ok + "[1, 1000]\n", nil, `--history line 2: an interval must be an object {"bad": …, "total": …}, got an array`},
		{"a look, not an interval", lookLine(10, 1000, 10, 1000), nil, "--history line 1: history[0].canary: unknown field; an interval takes bad and total"},
		{"a missing count", `{"bad":1}`, nil, "--history line 1: history[0].total: is required"},
		{"the string NaN", `{"bad":"NaN","total":1000}`, nil, `--history line 1: history[0].bad: must be a number, got a string ("NaN")`},
		{"a number beyond a float64", ok + `{"bad":1,"total":1e999}`, nil, "--history line 2: history[1].total: must be a finite number, got 1e999 (beyond a float64)"},
		{"a negative count", `{"bad":-1,"total":1000}`, nil, "--history line 1: history[0].bad: must not be negative, got -1"},
		{"counts that decrease, after blank lines", "\n" + ok + "\n" + `{"bad":3,"total":2000}` + "\n" + `{"bad":2,"total":3000}` + "\n", nil,
			"--history line 5: history[2].bad: counts are cumulative and must not decrease: 2 after 3"},
		{"a total that decreases", ok + `{"bad":1,"total":999}`, nil, "--history line 2: history[1].total: counts are cumulative and must not decrease: 999 after 1000"},
		{"more bad than total", `{"bad":11,"total":10}`, nil, "--history line 1: history[0].bad: more bad events (11) than total events (10)"},
		{"more intervals than --max-looks", ok + ok + ok + ok, []string{"--max-looks", "3"}, "--history line 4: more intervals than --max-looks (3)"},
		{"a line longer than a MiB", ok + strings.Repeat(" ", 1<<20) + ok, nil, "--history line 2: longer than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.ndjson")
			if err := os.WriteFile(path, []byte(tt.history), 0o600); err != nil {
				t.Fatal(err)
			}
			got := judgeIn(t, aaLooks(3), append([]string{"--history", path}, tt.args...)...)
			if got.code != exitUsage {
				t.Errorf("exit code %d, want %d", got.code, exitUsage)
			}
			// One line, the problem's.
			if want := "canaryd judge: " + tt.wantErr; !strings.HasPrefix(got.stderr, want) || strings.Count(got.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want %q…", got.stderr, want)
			}
			if got.stdout != "" {
				t.Errorf("stdout, with the history bad: %s", got.stdout)
			}
		})
	}
	for _, tt := range []struct {
		name, stdin string
		args        []string
		wantErr     string
	}{
		{"the history and the looks both on standard input", aaLooks(3), []string{"--history", "-"}, "--history -: standard input holds the looks"},
		{"the same, with -", aaLooks(3), []string{"-", "--history", "-"}, "--history -: standard input holds the looks"},
		{"no file named", aaLooks(3), []string{"--history", ""}, "--history: must name a file, or - for standard input"},
		{"a missing file", aaLooks(3), []string{"--history", "/nonexistent/history.ndjson"}, "--history /nonexistent/history.ndjson: no such file or directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeIn(t, tt.stdin, tt.args...)
			if got.code != exitUsage || !strings.Contains(got.stderr, tt.wantErr) || got.stdout != "" {
				t.Errorf("exit code %d (want %d), stderr %q (want %q), stdout %q", got.code, exitUsage, got.stderr, tt.wantErr, got.stdout)
			}
		})
	}
}

// TestJudgeCommandEndToEnd runs the built binary on a file and on
// standard input, and checks its exit codes.
func TestJudgeCommandEndToEnd(t *testing.T) {
	dir := t.TempDir()
	aa := filepath.Join(dir, "aa.ndjson")
	if err := os.WriteFile(aa, []byte(aaLooks(50)), 0o600); err != nil {
		t.Fatal(err)
	}
	regression, err := os.ReadFile(judgeLooksDir + "regression.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		stdin     string
		args      []string
		wantCode  int
		wantLines int
		wantErr   string
	}{
		{"an A/A file", "", []string{"judge", aa}, exitSuccessful, 0, ""},
		{"an A/A stream on standard input, to its end", aaLooks(50), []string{"judge", "--all"}, exitSuccessful, 50, ""},
		{"a regression on standard input", string(regression), []string{"judge"}, exitFailed, 2, ""},
		{"Inconclusive", lookLine(25, 1000, 10, 1000) + lookLine(50, 2000, 20, 2000), []string{"judge"}, exitInconclusive, 2, ""},
		{"bad input", string(regression) + lookLine(1, 1, 1, 1), []string{"judge", "--all"}, exitUsage, 4, "line 5: canary.bad: counts are cumulative and must not decrease: 1 after 80"},
		{"a regression with its baseline's history", string(regression), []string{"judge", "--history", judgeLooksDir + "baseline-day.ndjson"}, exitFailed, 1, ""},
		{"the history on standard input", baselineDay(), []string{"judge", judgeLooksDir + "regression.ndjson", "--history", "-"}, exitFailed, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLIRaw(t, tt.stdin, tt.args...)
			if got.code != tt.wantCode {
				t.Errorf("exit code %d, want %d\n%s", got.code, tt.wantCode, got.stderr)
			}
			lines := judgeLines(t, got.stdout)
			if tt.wantLines > 0 && len(lines) != tt.wantLines {
				t.Errorf("%d lines, want %d", len(lines), tt.wantLines)
			}
			if len(lines) == 0 {
				t.Fatalf("no lines:\n%s", got.stderr)
			}
			if !strings.Contains(got.stderr, tt.wantErr) || (tt.wantErr == "" && got.stderr != "") {
				t.Errorf("stderr %q, want %q", got.stderr, tt.wantErr)
			}
		})
	}
}

// baselineDay is testdata/judge/looks/baseline-day.ndjson, the history of
// the baseline of regression.ndjson (docs/judge.md's example of
// --history): a day of five-minute intervals (288), 600 to 1,400
// requests each as the day goes, and independent errors (Poisson) at
// 0.2%, drawn with a fixed seed; cumulative, a line an interval.
func baselineDay() string {
	r := rand.New(rand.NewPCG(20261128, 20))
	var b strings.Builder
	var bad, total float64
	for i := range 288 {
		n := math.Round(1000 - 400*math.Cos(2*math.Pi*float64(i)/288))
		// Knuth's Poisson sampler: the mean is small.
		k, p, limit := 0.0, r.Float64(), math.Exp(-0.002*n)
		for p > limit {
			k++
			p *= r.Float64()
		}
		bad, total = bad+k, total+n
		fmt.Fprintf(&b, `{"bad":%g,"total":%g}`+"\n", bad, total)
	}
	return b.String()
}

// TestBaselineDay: the history of docs/judge.md's examples is what
// baselineDay draws.
func TestBaselineDay(t *testing.T) {
	got, err := os.ReadFile(judgeLooksDir + "baseline-day.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != baselineDay() {
		t.Errorf("%sbaseline-day.ndjson is not baselineDay()'s; write it again from baselineDay", judgeLooksDir)
	}
}
