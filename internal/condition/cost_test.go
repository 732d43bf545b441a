package condition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/builtin"

	"github.com/canaryd/canaryd/api"
)

// refusal compiles cond as a successCondition and returns the message of
// its one problem, "" when it is accepted.
func refusal(t *testing.T, cond string) string {
	t.Helper()
	c, errs := Compile(cond, "")
	switch {
	case len(errs) == 0 && c != nil:
		return ""
	case len(errs) != 1 || errs[0].Field != "successCondition" || c != nil:
		t.Fatalf("Compile(%q) = %v, %+v; want one problem on successCondition", cond, c, errs)
	}
	return errs[0].Message
}

// TestBuiltinsRefused calls every expr built-in outside the allow-list and
// expects a refusal naming it; the allowed ones are accepted.
func TestBuiltinsRefused(t *testing.T) {
	predicates := []string{"groupBy", "sortBy", "reduce"}
	refused := 0
	for _, name := range builtin.Names {
		cond := name + "(result) != nil"
		if slices.Contains(predicates, name) {
			cond = name + "(result, {#}) != nil"
		}
		msg := refusal(t, cond)
		if allowedBuiltins[name] {
			continue
		}
		refused++
		if !strings.HasPrefix(msg, name+"() is not allowed in a condition") {
			t.Errorf("%s: got %q; want a refusal naming %s()", cond, msg, name)
		}
	}
	// The string builders above all, which allocate without bound.
	for _, name := range []string{"replace", "repeat", "split", "join", "upper", "lower", "trim", "trimPrefix",
		"indexOf", "fromJSON", "toJSON", "sort", "sortBy", "groupBy", "reduce", "string", "concat", "flatten"} {
		if allowedBuiltins[name] {
			t.Errorf("%s is allowed; it must not be", name)
		}
	}
	if refused < 30 {
		t.Errorf("%d built-ins refused; expr has more", refused)
	}
	// The four nested replace() of a 260-byte condition that ran a process
	// out of memory.
	bomb := `replace(replace(replace(replace("` + strings.Repeat("a", 64) + `", "a", "` + strings.Repeat("a", 32) + `"), "a", "` + strings.Repeat("a", 32) + `"), "a", "aaaaaaaa"), "a", "aaaaaaaa") != ""`
	if msg := refusal(t, bomb); !strings.HasPrefix(msg, "replace() is not allowed in a condition") {
		t.Errorf("nested replace(): %q", msg)
	}
	// Several are named together; through a pipe too.
	if msg := refusal(t, `upper("a") == lower("A")`); !strings.HasPrefix(msg, "upper(), lower() are not allowed") {
		t.Errorf("two built-ins: %q", msg)
	}
	if msg := refusal(t, `("a" | repeat(3)) != ""`); !strings.HasPrefix(msg, "repeat() is not allowed") {
		t.Errorf("a pipe: %q", msg)
	}
	// The refusal comes before the type check: a badly called refused
	// built-in is named all the same.
	if msg := refusal(t, `replace(1) == 2`); !strings.HasPrefix(msg, "replace() is not allowed") {
		t.Errorf("a badly called built-in: %q", msg)
	}
}

// TestBuiltinsAllowed uses each allowed built-in as Argo's documented
// conditions and canaryd's own templates do.
func TestBuiltinsAllowed(t *testing.T) {
	conds := map[string]string{
		"all": "all(result, {# > 0.9})", "any": "any(result, # > 0.9)", "none": "none(result, {isNaN(#)})",
		"one": "one(result, {# > 0.9})", "filter": "len(filter(result, {# > 0.5})) == 0",
		"map": "all(map(result, {# * 100}), {# < 500})", "count": "count(result, {# > 0.5}) < 2",
		"sum": "sum(result) / len(result) > 0.9", "find": "find(result, {# > 1}) == nil",
		"findIndex": "findIndex(result, {# > 1}) == -1", "findLast": "findLast(result, {# > 1}) == nil",
		"findLastIndex": "findLastIndex(result, {# > 1}) < 0", "len": "len(result) == 0 || result[0] >= 0.95",
		"first": "first(result) > 0", "last": "last(result) > 0", "max": "max(result) < 10",
		"min": "min(result) > 0", "mean": "mean(result) >= 0.99", "median": "median(result) >= 0.99",
		"abs": "abs(result[0] - 1) < 0.01", "ceil": "ceil(result) == 1", "floor": "floor(result) == 0",
		"round": "round(result) == 1", "int": "int(result) % 2 == 1", "float": "float(result) > 0",
		"now": "now() > date('2020-01-01')", "duration": "duration('5m') > duration('1m')",
		"date": "date('2024-01-02', '2006-01-02', 'UTC') < now()",
	}
	for _, name := range AllowedBuiltins() {
		cond, ok := conds[name]
		if !ok {
			t.Errorf("%s is allowed but not tried here", name)
			continue
		}
		if msg := refusal(t, cond); msg != "" {
			t.Errorf("%s: %q refused: %s", name, cond, msg)
		}
	}
	// Argo's helpers, the operators, and the judge's conditions.
	for _, cond := range []string{
		"isNil(result) || default(result, 0) > asFloat('1') && asInt(1.5) == 1",
		"isNaN(result) || isInf(result)",
		"result.classification in ['High', 'Low', 'NodataFailMetric']",
		"result.classification == 'Pass' && result.meanRatio < 1.2 && result.canary.n >= 50",
		"result?.x?.y == nil && (result.a ?? 1) > 0",
		"let x = result * 2; not (x > 1) ? true : false",
		"'abc' contains 'b' && 'abc' startsWith 'a' && 'abc' endsWith 'c' && 'abc' matches '^a'",
		"result[0] in 200..299 && result[1:] == [] && 2 in result",
		"all(result.service_apdex.values.values, {# > 1})",
		"len(result) > 0 && !isNaN(result[0]) && result[0] >= 500",
	} {
		if msg := refusal(t, cond); msg != "" {
			t.Errorf("%q refused: %s", cond, msg)
		}
	}
}

// TestNestedIterationRefused tries each way of going over the result for
// each of its values.
func TestNestedIterationRefused(t *testing.T) {
	outer := []string{"all", "any", "none", "one", "filter", "map", "count", "sum", "find", "findIndex", "findLast", "findLastIndex"}
	inner := []string{
		"all(result, {# > 0})", "any(result, {# > 0})", "none(result, {# > 0})", "one(result, {# > 0})",
		"len(filter(result, {# > 0})) > 0", "len(map(result, {# * 2})) > 0", "count(result, {# > 0}) > 0",
		"count(result) > 0", "sum(result) > 0", "sum(result, {# * 2}) > 0", "find(result, {# > 0}) != nil",
		"findIndex(result, {# > 0}) > 0", "findLast(result, {# > 0}) != nil", "findLastIndex(result, {# > 0}) > 0",
		"# in result", "max(result) > 0", "min(result) > 0", "mean(result) > 0", "median(result) > 0",
		"result == [#]",
		"result[1:] != [#]",
	}
	for _, o := range outer {
		for _, in := range inner {
			cond := o + "(result, {" + in + "})"
			switch o {
			case "filter", "map":
				cond = "len(" + cond + ") > 0"
			case "sum":
				cond = "sum(result, {(" + in + ") ? 1 : 0}) > 0"
			case "count", "findIndex", "findLastIndex":
				cond += " > 0"
			case "find", "findLast":
				cond += " != nil"
			}
			msg := refusal(t, cond)
			if !strings.Contains(msg, "grows with the square of the result's size") {
				t.Errorf("%s: got %q; want nested iteration refused", cond, msg)
			}
		}
	}
	for _, cond := range []string{
		// Through a variable, $env, a pipe, a part of the result, or #
		// standing for a list.
		"let r = result; all(r, {any(r, {# > 0})})",
		"all(result, {any($env.result, {# > 0})})",
		"result | all(# in result)",
		"all(result, {all(#, {# > 0})})",
		"all(result.a, {len(filter(result.b, {# > 0})) > 0})",
		"all(result[1:], {# in result[:2]})",
		"all(filter(result, {# > 0}), {any(map(result, {# * 2}), {# > 1})})",
		"any(result, {default(result, 0) == [#]})",
		// Lists built from the result for each of its values.
		"max(map(result, {result})) > 0",
		"let m = map(result, {result}); 1 in m",
	} {
		msg := refusal(t, cond)
		if !strings.Contains(msg, "grows") {
			t.Errorf("%s: got %q; want nested iteration refused", cond, msg)
		}
	}
	// The message names both.
	if msg := refusal(t, "all(result, {sum(result) > #})"); !strings.HasPrefix(msg, "sum() inside all() goes over the result once for each value all() goes over") {
		t.Errorf("message: %q", msg)
	}
	// Nested over something small is fine, either way round.
	for _, cond := range []string{
		"all(result, {# in [1, 2, 3]})",
		"all(result, {any(1..10, {# > 0})})",
		"all([1, 2], {all(result, {# > 0})})",
		"all(result, {len(result) > 0})",
		"all(result, {result[0] <= #})",
		"all(result, {# == result[0] || #[0] != result})",
		"any(result.warnings, {# == 'x'})",
		"len(map(result, {#})) > 0 && max(map(result, {#})) > 0",
	} {
		if msg := refusal(t, cond); msg != "" {
			t.Errorf("%q refused: %s", cond, msg)
		}
	}
}

// TestRangesBounded checks that ranges are small literal ones.
func TestRangesBounded(t *testing.T) {
	for _, tc := range []struct {
		cond string
		want string // prefix of the refusal; "" accepted
	}{
		{"all(1..1000, {# > 0})", ""},
		{"10..1 == []", ""},
		{"all(-5..5, {# > -10})", ""},
		{"all(1..1001, {# > 0})", "the range 1..1001 has 1001 values, more than the 1000 a range in a condition may have"},
		{"let r = 1..999999; all(r, {all(r, {# > 0})})", "the range 1..999999 has 999999 values"},
		{"-9223372036854775807..9223372036854775807 == []", "the range -9223372036854775807..9223372036854775807 has 1.8e+19 values"},
		{"all(1..len(result), {# > 0})", "a range in a condition must have integer literals at both ends"},
		{"all(1..int(result), {# > 0})", "a range in a condition must have integer literals at both ends"},
		{"let n = 5; all(1..n, {# > 0})", "a range in a condition must have integer literals at both ends"},
		// Small ranges nested go over the fixed budget.
		{"let r = 1..999; all(r, {all(r, {# > 0})})", "this condition may take 6994006 steps whatever the result, more than the 100000"},
		// And within one iteration over the result, over the budget a value.
		{"all(result, {any(1..500, {# > 0})})", "this condition may take 4009 steps for each value of the result (through all()), more than the 1000"},
	} {
		msg := refusal(t, tc.cond)
		if (tc.want == "") != (msg == "") || !strings.HasPrefix(msg, tc.want) {
			t.Errorf("%s: got %q; want %q", tc.cond, msg, tc.want)
		}
	}
}

// TestStringsBounded checks that a condition cannot build large strings:
// concatenation counts a step a byte.
func TestStringsBounded(t *testing.T) {
	a := `"` + strings.Repeat("x", 1000) + `"`
	doubled := "let a0 = " + a + "; "
	for i := 1; i <= 8; i++ {
		doubled += "let a" + string(rune('0'+i)) + " = a" + string(rune('0'+i-1)) + " + a" + string(rune('0'+i-1)) + "; "
	}
	doubled += "len(a8) > 0"
	if msg := refusal(t, doubled); !strings.Contains(msg, "steps whatever the result, more than the 100000") {
		t.Errorf("doubling a string: %q", msg)
	}
	if msg := refusal(t, "len(map(result, {"+a+" + "+a+"})) > 0"); !strings.Contains(msg, "steps for each value of the result") {
		t.Errorf("a string built for each value: %q", msg)
	}
	if msg := refusal(t, `"a" + "b" == "ab" && result.classification + "!" != "Pass!"`); msg != "" {
		t.Errorf("a small concatenation refused: %s", msg)
	}
	// Numbers add without a string's cost.
	if msg := refusal(t, "all(result, {# + 1 > 1})"); msg != "" {
		t.Errorf("an addition refused: %s", msg)
	}
	if msg := refusal(t, "result matches result"); !strings.HasPrefix(msg, "matches needs a literal pattern") {
		t.Errorf("a computed pattern: %q", msg)
	}
	// A pattern of many instructions is charged for every byte it reads.
	pattern := strings.Repeat("a{999}", 100)
	if msg := refusal(t, "result.reason matches '"+pattern+"'"); !strings.Contains(msg, "steps whatever the result") {
		t.Errorf("a large pattern: %q", msg)
	}
}

// TestMapLiteralsCharged holds map literals to their charge (mapSteps,
// mapEntrySteps). The red team's condition builds a map of 95 entries for
// each value: charged as array elements, it was accepted, and on 10,000
// values it allocated about 90 MB and took 50 times the documented bound.
// It is refused on its field; the maps accepted allocate no more bytes
// than their bound has steps, and take no longer than the bound's time.
func TestMapLiteralsCharged(t *testing.T) {
	var b strings.Builder
	b.WriteString("none(result, {{")
	for i := range 95 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "k%02d: -#", i)
	}
	b.WriteString("}.k00 < 0})")
	redTeam := b.String()
	msg := refusal(t, redTeam)
	for _, want := range []string{"this condition may take", "steps for each value of the result (through none()), more than the 1000 canaryd allows",
		"a map literal ({a: 1}) counts 400 steps each time it is built, and 200 more for each of its entries"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the red team's condition (%d bytes, a map of 95 entries for each value): got %q; want a refusal saying %q", len(redTeam), msg, want)
		}
	}
	// Nor is a map of three entries built for each value, nor one of one
	// entry for each of a range's 1000 values.
	for _, cond := range []string{"none(result, {{a: #, b: #, c: #}.a < 0})", "none(1..1000, {{a: #}.a < 0})"} {
		if msg := refusal(t, cond); !strings.Contains(msg, "a map literal ({a: 1}) counts 400 steps") {
			t.Errorf("%s: got %q; want refused for its maps", cond, msg)
		}
	}

	result := make([]float64, cappedResultValues)
	margin := 4.0
	if raceDetector {
		margin *= 10
	}
	for _, cond := range []string{
		"none(result, {{k: #}.k < 0})",
		"none(result, {{a: #, b: #}.a < 0})",
		"none(1..100, {{a: #, b: #}.a < 0})",
		"{" + strings.Repeat("a: 1, ", 56) + "b: 2}.b == 2 && none(result, {# < 0})",
		`result[0] < {"p50": 0.5, "p99": 0.9}.p99`,
	} {
		bound, err := validate(cond, 0)
		if err != nil {
			t.Errorf("%s: refused: %v", cond, err)
			continue
		}
		steps := bound.At(len(result))
		e := measure(t, cond, result, 2)
		if limit := steps + 1<<20; float64(e.bytes) > limit {
			t.Errorf("%s allocated %d bytes on %d values; its bound is %.0f steps, a byte a step at most (limit %.0f)", cond, e.bytes, len(result), steps, limit)
		}
		if limit := time.Duration(margin * (steps*float64(stepTime) + float64(20*time.Millisecond))); e.took > limit {
			t.Errorf("%s took %s on %d values; its bound is %.0f steps, %s a step at most (limit %s)", cond, e.took, len(result), steps, stepTime, limit)
		}
	}
}

// TestMemoryBudget checks that expr's run-time budget is set: a condition
// within its cost bound that allocates more array elements than
// MemoryBudget is an Error measurement, not an allocation.
func TestMemoryBudget(t *testing.T) {
	c, errs := Compile("len(map(result, {[#, #, #, #]})) > 0", "")
	if errs != nil {
		t.Fatal(errs)
	}
	small := make([]float64, 1000)
	if phase, err := c.Judge(small); phase != api.PhaseSuccessful || err != nil {
		t.Fatalf("1000 values: %s, %v", phase, err)
	}
	large := make([]float64, MemoryBudget/4+1)
	phase, err := c.Judge(large)
	if phase != api.PhaseError || err == nil || !strings.Contains(err.Error(), "memory budget exceeded") {
		t.Errorf("%d values: %s, %v; want Error, memory budget exceeded", len(large), phase, err)
	}
}

// TestTimeExpressionsBounded checks that a rangeQuery's time expressions
// have the conditions' allow-list and bounds.
func TestTimeExpressionsBounded(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`now() - duration("5m")`, ""},
		{`date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC") - duration("1h")`, ""},
		{`now() - duration(repeat("1", 3) + "h")`, "repeat() is not allowed in a time expression"},
		{`all(1..999999, {# > 0}) ? now() : now()`, "the range 1..999999 has 999999 values"},
		{`let r = 1..999; all(r, {all(r, {# > 0})}) ? now() : now()`, "this time expression may take 6994008 steps, more than the 100000"},
	} {
		_, err := CompileTime(tc.expr)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("CompileTime(%q) = %v; want %q", tc.expr, err, tc.want)
		}
	}
}

// TestJudgeContext checks the pool: a caller waits with its context, for a
// place in the pool and for the evaluation, and answers when it ends.
func TestJudgeContext(t *testing.T) {
	c, errs := Compile("all(result, {# >= 0})", "")
	if errs != nil {
		t.Fatal(errs)
	}
	// Cheap: on the caller's goroutine, as Judge.
	if phase, err := c.JudgeContext(context.Background(), []float64{1, 2}); phase != api.PhaseSuccessful || err != nil {
		t.Fatalf("inline: %s, %v", phase, err)
	}
	large := make([]float64, 5000) // 8·5000 + 3 steps: over InlineSteps
	if c.inline(large) {
		t.Fatalf("%d values judged inline", len(large))
	}
	if phase, err := c.JudgeContext(context.Background(), large); phase != api.PhaseSuccessful || err != nil {
		t.Fatalf("pooled: %s, %v", phase, err)
	}

	// A context already done: nothing is evaluated.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if phase, err := c.JudgeContext(done, []float64{1}); phase != api.PhaseError || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %s, %v", phase, err)
	}

	// An evaluation that does not end (held here): the caller answers at
	// its deadline, and the evaluation keeps its place until it ends.
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	beforeEvaluation = func() { started <- struct{}{}; <-release }
	defer func() { beforeEvaluation = func() {} }()
	ctx, cancelCtx := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelCtx()
	phase, err := c.JudgeContext(ctx, large)
	if phase != api.PhaseError || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("held evaluation: %s, %v; want Error, deadline exceeded", phase, err)
	}
	<-started
	if len(evaluators) != 1 {
		t.Errorf("%d places taken; want the held evaluation's", len(evaluators))
	}

	// A full pool: a caller waits for a place with its context.
	for range cap(evaluators) - 1 {
		evaluators <- struct{}{}
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	phase, err = c.JudgeContext(ctx2, large)
	if phase != api.PhaseError || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waited for an evaluator") {
		t.Errorf("full pool: %s, %v", phase, err)
	}
	for range cap(evaluators) - 1 {
		<-evaluators
	}
	close(release)
	// The held evaluation ends and gives its place back.
	for len(evaluators) > 0 {
		time.Sleep(time.Millisecond)
	}
	if phase, err := c.JudgeContext(context.Background(), large); phase != api.PhaseSuccessful || err != nil {
		t.Errorf("after: %s, %v", phase, err)
	}
}
