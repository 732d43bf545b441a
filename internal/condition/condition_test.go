package condition

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// noData is the text Argo v1.10 puts after the condition when the result is
// nil or an empty slice, whatever the underlying error was.
const noData = "metric result is nil or empty: no data returned from the metric provider"

func ptr[T any](v T) *T { return &v }

func apdex() map[string]any {
	return map[string]any{
		"service_apdex": map[string]any{
			"label": nil,
			"values": map[string]any{
				"values": []any{float64(2), float64(2)},
			},
		},
	}
}

type judgeCase struct {
	name             string
	result           any
	success, failure string
	want             api.Phase
	wantErr          string // exact; "" means no error
}

// judgeCases are rows of the reference's tables, judged the way Argo's
// EvaluateResult judges them. Each name says which table the row is from.
var judgeCases = []judgeCase{
	// §2.3 decision table.
	{"2.3 no conditions", true, "", "", api.PhaseSuccessful, ""},
	{"2.3 success only, true", true, "true", "", api.PhaseSuccessful, ""},
	{"2.3 success only, false", true, "false", "", api.PhaseFailed, ""},
	{"2.3 failure only, true", true, "", "true", api.PhaseFailed, ""},
	{"2.3 failure only, false", true, "", "false", api.PhaseSuccessful, ""},
	{"2.3 both true, failure wins", true, "true", "true", api.PhaseFailed, ""},
	{"2.3 success true, failure false", true, "true", "false", api.PhaseSuccessful, ""},
	{"2.3 both false", true, "false", "false", api.PhaseInconclusive, ""},
	{"2.3 success error stops before failure", true, "a == true", "b == true", api.PhaseError,
		`could not evaluate successCondition "a == true": unknown name a`},
	{"2.3 failure error after success", true, "true", "b == true", api.PhaseError,
		`could not evaluate failureCondition "b == true": unknown name b`},
	{"2.3 nil result replaces even a syntax error", nil, "1 +", "", api.PhaseError,
		`could not evaluate successCondition "1 +": ` + noData},
	{"2.3 empty slice replaces the error", []float64{}, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"2.3 empty array replaces the error", [0]float64{}, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"2.3 quotes in the condition are not escaped", 1.0, `result == "a"`, "", api.PhaseError,
		`could not evaluate successCondition "result == "a"": invalid operation: == (mismatched types float64 and string)`},

	// §2.5 EvaluateResult tests.
	{"2.5 WithSuccess", true, "true", "false", api.PhaseSuccessful, ""},
	{"2.5 WithFailure", true, "true", "true", api.PhaseFailed, ""},
	{"2.5 Inconclusive", true, "false", "false", api.PhaseInconclusive, ""},
	{"2.5 NoSuccessConditionAndNotFailing", true, "", "false", api.PhaseSuccessful, ""},
	{"2.5 NoFailureConditionAndNotSuccessful", true, "false", "", api.PhaseFailed, ""},
	{"2.5 NoFailureConditionAndNoSuccessCondition", true, "", "", api.PhaseSuccessful, ""},
	{"2.5 WithErrorOnSuccessCondition", true, "a == true", "true", api.PhaseError,
		`could not evaluate successCondition "a == true": unknown name a`},
	{"2.5 WithErrorOnFailureCondition", true, "true", "a == true", api.PhaseError,
		`could not evaluate failureCondition "a == true": unknown name a`},
	{"2.5 ErrorMessageWithNilResult", nil, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"2.5 ErrorMessageWithEmptySlice", []float64{}, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"2.5 ErrorMessageWithInvalidExpression", true, "a == true", "", api.PhaseError,
		`could not evaluate successCondition "a == true": unknown name a`},
	{"2.5 ErrorMessageOnFailureCondition", true, "true", "invalidVar == true", api.PhaseError,
		`could not evaluate failureCondition "invalidVar == true": unknown name invalidVar`},

	// §2.4 NaN and Inf.
	{"2.4 NaN, success only", math.NaN(), "result >= 0.9", "", api.PhaseFailed, ""},
	{"2.4 NaN, success and failure", math.NaN(), "result >= 0.9", "result < 0.9", api.PhaseInconclusive, ""},
	{"2.4 NaN, isNaN guard", math.NaN(), "isNaN(result) || result >= 0.9", "", api.PhaseSuccessful, ""},
	{"2.4 +Inf", math.Inf(1), "result >= 0.9", "", api.PhaseSuccessful, ""},
	{"2.4 -Inf", math.Inf(-1), "result >= 0.9", "", api.PhaseFailed, ""},

	// §2.6 empirical results, v1.10 column.
	{"2.6 empty vector, index", []float64{}, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"2.6 empty vector, all is vacuously true", []float64{}, "all(result, # < 0.1)", "", api.PhaseSuccessful, ""},
	{"2.6 empty vector, len guard", []float64{}, "len(result) == 0 || result[0] >= 0.95", "", api.PhaseSuccessful, ""},
	{"2.6 negative index", []float64{0.5, 0.99}, "result[-1] > 0.9", "", api.PhaseSuccessful, ""},
	{"2.6 index into a float", 2.0, "result[0] > 1", "", api.PhaseError,
		`could not evaluate successCondition "result[0] > 1": type float64[int] is undefined`},
	{"2.6 NaN, success and failure", math.NaN(), "result >= 0.9", "result < 0.9", api.PhaseInconclusive, ""},
	{"2.6 NaN, success only", math.NaN(), "result >= 0.9", "", api.PhaseFailed, ""},
	{"2.6 nil compared", nil, "result > 1", "", api.PhaseError,
		`could not evaluate successCondition "result > 1": ` + noData},
	{"2.6 nil with default", nil, "default(result, 0) < 1", "", api.PhaseSuccessful, ""},
	{"2.6 nil with isNil", nil, "isNil(result)", "", api.PhaseSuccessful, ""},
	{"2.6 missing map key is nil", map[string]any{"a": 1.0}, "result.missing == nil", "", api.PhaseSuccessful, ""},
	{"2.6 missing map key compared", map[string]any{"a": 1.0}, "result.missing > 1", "", api.PhaseError,
		`could not evaluate successCondition "result.missing > 1": invalid operation: <nil> > int`},
	{"2.6 fetch from nil", map[string]any{"a": 1.0}, "result.x.y == nil", "", api.PhaseError,
		`could not evaluate successCondition "result.x.y == nil": cannot fetch y from <nil>`},
	{"2.6 optional chaining", map[string]any{"a": 1.0}, "result?.x?.y == nil", "", api.PhaseSuccessful, ""},
	{"2.6 sum", []float64{1, 2, 3}, "sum(result) == 6", "", api.PhaseSuccessful, ""},
	{"2.6 mean", []float64{1, 2, 3}, "mean(result) == 2", "", api.PhaseSuccessful, ""},
	{"2.6 median", []float64{1, 2, 3}, "median(result) == 2", "", api.PhaseSuccessful, ""},
	{"2.6 max over an array (v1.10)", []float64{1, 2, 3}, "max(result) == 3", "", api.PhaseSuccessful, ""},
	{"2.6 min over an array (v1.10)", []float64{1, 2, 3}, "min(result) == 1", "", api.PhaseSuccessful, ""},
	{"2.6 string result is not a bool", "true", "result", "", api.PhaseError,
		`could not evaluate successCondition "result": expected bool, but got string`},
	{"2.6 float result is not a bool", 1.0, "result", "", api.PhaseError,
		`could not evaluate successCondition "result": expected bool, but got float64`},
	{"2.6 syntax error on nil", nil, "1 +", "", api.PhaseError,
		`could not evaluate successCondition "1 +": ` + noData},
	{"2.6 modulo on a float", 7.0, "result % 2 == 1", "", api.PhaseError,
		`could not evaluate successCondition "result % 2 == 1": invalid operation: % (mismatched types float64 and int)`},
	{"2.2 modulo after int()", 7.0, "int(result) % 2 == 1", "", api.PhaseSuccessful, ""},
	{"2.6 date built-ins", 1.0, "now() > date('2020-01-01')", "", api.PhaseSuccessful, ""},
	{"2.2 string compared with int", "s", "result > 1", "", api.PhaseError,
		`could not evaluate successCondition "result > 1": invalid operation: > (mismatched types string and int)`},

	// §1.10: Datadog hands over *float64, nil when there is no data.
	{"1.10 nil pointer with default", (*float64)(nil), "default(result, 0) < 1", "", api.PhaseSuccessful, ""},
	{"1.10 nil pointer with isNil", (*float64)(nil), "isNil(result)", "", api.PhaseSuccessful, ""},
	{"1.10 pointer is dereferenced", ptr(2.0), "result > 1", "", api.PhaseSuccessful, ""},
	{"1.10 default returns the dereferenced value", ptr(2.0), "default(result, 0) == 2", "", api.PhaseSuccessful, ""},
	{"1.10 nil pointer compared", (*float64)(nil), "result > 1", "", api.PhaseError,
		`could not evaluate successCondition "result > 1": ` + noData},

	// §3.2 and §3.3: Prometheus results.
	{"3.3 scalar equal", 10.0, "result == 10", "", api.PhaseSuccessful, ""},
	{"3.3 scalar not equal", 10.0, "result != 10", "", api.PhaseFailed, ""},
	{"3.3 range query matrix", []float64{11, 12, 13, 14}, "all(result, # > 10)", "", api.PhaseSuccessful, ""},
	{"3.3 NaN, success and failure", math.NaN(), "result >= 0.9", "result < 0.9", api.PhaseInconclusive, ""},
	{"3.3 NaN, or isNaN", math.NaN(), "result >= 0.9 || isNaN(result)", "", api.PhaseSuccessful, ""},
	{"3.3 NaN, success only", math.NaN(), "result >= 0.9", "", api.PhaseFailed, ""},
	{"3.3 +Inf, success", math.Inf(1), "result >= 0.9", "", api.PhaseSuccessful, ""},
	{"3.3 +Inf, failure isInf", math.Inf(1), "", "isInf(result)", api.PhaseFailed, ""},
	{"3.3 vector", []float64{10, 11}, "10 in result", "len(result) != 2", api.PhaseSuccessful, ""},
	{"3.2 empty vector, index", []float64{}, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"3.2 empty vector, len == 0 guard", []float64{}, "len(result) == 0 || result[0] >= 0.95", "", api.PhaseSuccessful, ""},
	{"3.2 empty vector, all", []float64{}, "all(result, # >= 0.95)", "", api.PhaseSuccessful, ""},
	{"3.2 empty vector, len > 0 guard", []float64{}, "len(result) > 0 && result[0] >= 0.95", "", api.PhaseFailed, ""},

	// §3.4: loopback Prometheus.
	{"3.4 empty vector, index", []float64{}, "result[0] >= 0.95", "", api.PhaseError,
		`could not evaluate successCondition "result[0] >= 0.95": ` + noData},
	{"3.4 empty vector, len guard", []float64{}, "len(result) == 0 || result[0] >= 0.95", "", api.PhaseSuccessful, ""},
	{"3.4 empty vector, all", []float64{}, "all(result, # >= 0.95)", "", api.PhaseSuccessful, ""},
	{"3.4 first series only", []float64{0.5, 0.99}, "result[0] >= 0.95", "", api.PhaseFailed, ""},
	{"3.4 vector NaN", []float64{math.NaN()}, "result[0] >= 0.95", "result[0] < 0.95", api.PhaseInconclusive, ""},
	{"3.4 matrix flattened", []float64{1, 2, 3}, "all(result, # > 0)", "", api.PhaseSuccessful, ""},
}

// TestJudge uses newConditions rather than Compile because several rows
// (unknown names, syntax errors) are Argo's answers for conditions that
// Compile rejects up front.
func TestJudge(t *testing.T) {
	for _, tc := range judgeCases {
		c := newConditions(tc.success, tc.failure)
		// Twice: the second run takes the cached program.
		for i := range 2 {
			got, err := c.Judge(tc.result)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr {
				t.Errorf("%s (run %d): Judge(%#v) with success %q, failure %q = %s, %q; want %s, %q",
					tc.name, i+1, tc.result, tc.success, tc.failure, got, gotErr, tc.want, tc.wantErr)
			}
		}
	}
}

// TestJudgeCompiled runs the rows whose conditions pass validation through
// Compile, so that validation is shown not to reject what Argo accepts.
func TestJudgeCompiled(t *testing.T) {
	for _, tc := range judgeCases {
		c, errs := Compile(tc.success, tc.failure)
		if errs != nil {
			if tc.want != api.PhaseError {
				t.Errorf("%s: Compile(%q, %q) = %v; want no errors for a condition Argo judges %s",
					tc.name, tc.success, tc.failure, errs, tc.want)
			}
			continue
		}
		got, err := c.Judge(tc.result)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: Judge(%#v) = %s, %q; want %s, %q", tc.name, tc.result, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

func TestEval(t *testing.T) {
	for _, tc := range []struct {
		name      string
		result    any
		condition string
		want      bool
		wantErr   string // exact; "" means no error
	}{
		// §2.5 EvalCondition tests.
		{"2.5 WithSuccess", true, "result == true", true, ""},
		{"2.5 WithFailure", true, "result == false", false, ""},
		{"2.5 NonBoolReturn", true, "1", false, "expected bool, but got int"},
		{"2.5 InvalidReference", true, "invalidVariable", false, "unknown name invalidVariable"},
		{"2.5 nested map array", apdex(), "all(result.service_apdex.values.values, {# > 1})", true, ""},
		{"2.5 in operator", []float64{2, 2}, "2 in result", true, ""},
		{"2.5 float64", 5.0, "result > 1", true, ""},
		{"2.5 invalid struct", true, "result.Name() == 'hi'", false, "type bool has no method Name"},
		{"2.5 asInt panic", "1.1", "asInt(result) == 1.1", false, `strconv.ParseInt: parsing "1.1": invalid syntax`},
		{"2.5 asInt string", "1", "asInt(result) == 1", true, ""},
		{"2.5 asInt int", 1, "asInt(result) == 1", true, ""},
		{"2.5 asInt float truncates", 1.123, "asInt(result) == 1", true, ""},
		{"2.5 asFloat not a number", "NotANum", "asFloat(result) == 1.1", false, `strconv.ParseFloat: parsing "NotANum": invalid syntax`},
		{"2.5 asFloat compared with string", "1.1", `asFloat(result) == "1.1"`, false, "invalid operation: == (mismatched types float64 and string)"},
		{"2.5 asFloat string ==", "1.1", "asFloat(result) == 1.1", true, ""},
		{"2.5 asFloat string >=", "1.1", "asFloat(result) >= 1.1", true, ""},
		{"2.5 asFloat string <=", "1.1", "asFloat(result) <= 1.1", true, ""},
		{"2.5 asFloat float", 1.1, "asFloat(result) == 1.1", true, ""},
		{"2.5 asFloat int ==", 1, "asFloat(result) == 1", true, ""},
		{"2.5 asFloat int >=", 1, "asFloat(result) >= 1", true, ""},

		// §2.2 details.
		{"2.2 asInt truncates 2.9", 2.9, "asInt(result) == 2", true, ""},
		{"2.2 asInt unsupported type", true, "asInt(result) == 1", false, "asInt() not supported on bool true"},
		{"2.2 asFloat unsupported type", []float64{1}, "asFloat(result) == 1", false, "asFloat() not supported on []float64 [1]"},
		{"2.2 isNil ignores its argument", map[string]any{"a": nil}, "isNil(result.a)", false, ""},
		{"2.2 default ignores its first argument", map[string]any{"a": nil}, "len(default(result.a, 1)) == 1", true, ""},
		{"2.2 float compared with string", 1.0, "result == 'a'", false, "invalid operation: == (mismatched types float64 and string)"},
		{"2.2 values inside []any are checked at run time", []any{1.0, "a"}, "result[1] == 'a'", true, ""},
		{"2.2 let, ternary and not", 0.5, "let x = result * 2; not (x > 1) ? true : false", true, ""},
		{"2.2 nil literal is not a bool", 1.0, "nil", false, "expected bool, but got <nil>"},

		// §2.6 raw expr-lang texts, before Judge wraps them.
		{"2.6 empty vector index, raw", []float64{}, "result[0] >= 0.95", false, "index out of range: 0 (array length is 0)"},
		{"2.6 index into a float, raw", 2.0, "result[0] > 1", false, "type float64[int] is undefined"},
		{"2.6 syntax error, raw", nil, "1 +", false, "unexpected token EOF"},
	} {
		got, err := Eval(tc.condition, tc.result)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: Eval(%q, %#v) = %v, %q; want %v, %q", tc.name, tc.condition, tc.result, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name             string
		success, failure string
		want             []api.FieldError
	}{
		{"nothing set", "", "", nil},
		{"typical", "result[0] >= 0.99", "result[0] < 0.9", nil},
		{"type mismatch is left to the measurement", "result == 'a'", "", nil},
		{"modulo on result is left to the measurement", "result % 2 == 1", "", nil},
		{"indexing result is left to the measurement", "result[0] > 1", "", nil},
		{"result alone may be a bool", "result", "", nil},
		{"helpers", "isNil(result) || default(result, 0) > asFloat('1') && asInt(1.5) == 1", "isNaN(result) || isInf(result)", nil},
		{"built-ins", "all(result, # > 0) && len(result) > 0 && max(result) < 10", "now() < date('2020-01-01')", nil},
		{"int literal", "1", "", []api.FieldError{
			{Field: "successCondition", Message: "expected bool, but got int"},
		}},
		{"nil literal", "", "nil", []api.FieldError{
			{Field: "failureCondition", Message: "expected bool, but got <nil>"},
		}},
		{"helper result is not a bool", "asInt(result)", "", []api.FieldError{
			{Field: "successCondition", Message: "expected bool, but got int64"},
		}},
		{"unknown name", "a == true", "", []api.FieldError{
			{Field: "successCondition", Message: "unknown name a"},
		}},
		{"both wrong", "foo > 1", "1 +", []api.FieldError{
			{Field: "successCondition", Message: "unknown name foo"},
			{Field: "failureCondition", Message: "unexpected token EOF"},
		}},
		{"bad argument to a helper", "isNaN('a')", "", []api.FieldError{
			{Field: "successCondition", Message: "cannot use string as argument (type float64) to call isNaN "},
		}},
		{"bad regexp", "'a' matches '('", "", []api.FieldError{
			{Field: "successCondition", Message: "error parsing regexp: missing closing ): `(`"},
		}},
	} {
		c, errs := Compile(tc.success, tc.failure)
		if !reflect.DeepEqual(errs, tc.want) {
			t.Errorf("%s: Compile(%q, %q) errors = %#v; want %#v", tc.name, tc.success, tc.failure, errs, tc.want)
			continue
		}
		if errs != nil {
			if c != nil {
				t.Errorf("%s: Compile returned conditions along with errors", tc.name)
			}
			continue
		}
		if c.Success() != tc.success || c.Failure() != tc.failure {
			t.Errorf("%s: Success(), Failure() = %q, %q; want %q, %q", tc.name, c.Success(), c.Failure(), tc.success, tc.failure)
		}
	}
}

func TestNilConditions(t *testing.T) {
	var c *Conditions
	got, err := c.Judge(1.0)
	if got != api.PhaseSuccessful || err != nil {
		t.Errorf("nil Conditions: Judge = %s, %v; want Successful, no error", got, err)
	}
	if c.Success() != "" || c.Failure() != "" {
		t.Errorf("nil Conditions: Success(), Failure() = %q, %q; want empty", c.Success(), c.Failure())
	}
}

func programCount(c *compiled) int {
	n := 0
	c.programs.Range(func(any, any) bool { n++; return true })
	return n
}

// TestJudgeCompilesOncePerType checks the cache: one program per concrete
// result type, reused across measurements, with type-specific answers.
func TestJudgeCompilesOncePerType(t *testing.T) {
	c, errs := Compile("result > 1", "")
	if errs != nil {
		t.Fatalf("Compile: %v", errs)
	}
	steps := []struct {
		result    any
		want      api.Phase
		wantErr   string
		wantCount int
	}{
		{2.0, api.PhaseSuccessful, "", 1},
		{0.5, api.PhaseFailed, "", 1},
		{ptr(3.0), api.PhaseSuccessful, "", 1}, // dereferenced: still float64
		{"s", api.PhaseError, `could not evaluate successCondition "result > 1": invalid operation: > (mismatched types string and int)`, 2},
		{"t", api.PhaseError, `could not evaluate successCondition "result > 1": invalid operation: > (mismatched types string and int)`, 2},
		{int64(5), api.PhaseSuccessful, "", 3},
		{1.5, api.PhaseSuccessful, "", 3},
	}
	for i, s := range steps {
		got, err := c.Judge(s.result)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != s.want || gotErr != s.wantErr {
			t.Errorf("step %d: Judge(%#v) = %s, %q; want %s, %q", i, s.result, got, gotErr, s.want, s.wantErr)
		}
		if n := programCount(c.success); n != s.wantCount {
			t.Errorf("step %d: %d cached programs; want %d", i, n, s.wantCount)
		}
	}
	p1, _ := c.success.programs.Load(reflect.TypeFor[float64]())
	_, _ = c.Judge(9.0)
	p2, _ := c.success.programs.Load(reflect.TypeFor[float64]())
	if p1 != p2 {
		t.Errorf("the float64 program was replaced; want it compiled once")
	}
}

// TestJudgeReadsEachResult guards the pooled environment: default() and
// result must read the value being judged, not the one the program was
// compiled with or the previous one.
func TestJudgeReadsEachResult(t *testing.T) {
	c, errs := Compile("default(result, 0) > 2.5 && result > 2.5", "")
	if errs != nil {
		t.Fatalf("Compile: %v", errs)
	}
	for i, s := range []struct {
		result any
		want   api.Phase
	}{
		{ptr(2.0), api.PhaseFailed},
		{ptr(3.0), api.PhaseSuccessful},
		{2.0, api.PhaseFailed},
		{3.0, api.PhaseSuccessful},
	} {
		got, err := c.Judge(s.result)
		if got != s.want || err != nil {
			t.Errorf("step %d: Judge(%v) = %s, %v; want %s, no error", i, s.result, got, err, s.want)
		}
	}
}

// TestJudgeConcurrent is for the race detector: one Conditions shared by
// goroutines measuring values of several types at once.
func TestJudgeConcurrent(t *testing.T) {
	c, errs := Compile("default(result, 0) >= 0.5 && !isNil(result)", "isNaN(asFloat(result))")
	if errs != nil {
		t.Fatalf("Compile: %v", errs)
	}
	results := []any{0.9, 0.1, ptr(0.7), (*float64)(nil), "0.8", math.NaN(), 1, nil}
	want := make([]api.Phase, len(results))
	wantErr := make([]string, len(results))
	for i, r := range results {
		p, err := newConditions(c.Success(), c.Failure()).Judge(r)
		want[i] = p
		wantErr[i] = fmt.Sprint(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(results)
				p, err := c.Judge(results[k])
				if p != want[k] || fmt.Sprint(err) != wantErr[k] {
					t.Errorf("goroutine %d: Judge(%#v) = %s, %v; want %s, %s", g, results[k], p, err, want[k], wantErr[k])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDoubles: a list of doubles handed as Doubles is read as Argo's
// []interface{}: a comparison with a string is false, where for a
// []float64 it does not compile; numbers compare as for a []float64.
func TestDoubles(t *testing.T) {
	cond := `result[0] == "ok"`
	if ok, err := Eval(cond, Doubles{0.5}); ok || err != nil {
		t.Errorf("%s on Doubles: %v, %v; want false, no error", cond, ok, err)
	}
	if _, err := Eval(cond, []float64{0.5}); err == nil {
		t.Errorf("%s on a []float64 compiled; want the checker's refusal", cond)
	}
	for _, c := range []string{"result[0] >= 0.99", "all(result, {# > 0.9})", "len(result) == 2"} {
		want, err := Eval(c, []float64{0.995, 0.991})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Eval(c, Doubles{0.995, 0.991}); got != want || err != nil {
			t.Errorf("%s on Doubles: %v, %v; want %v as for a []float64", c, got, err, want)
		}
	}
}
