package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/web"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/webhook"
)

// hostileEnv is what the attacks of TestHostileInput share: a real
// Prometheus with the fixture data, a datasource that never answers, one
// that records the size of what it is sent, one that answers at once with
// as many values as it is asked for, one that holds queries until the
// test releases them, a webhook receiver that never answers, and the
// shipped templates.
type hostileEnv struct {
	prom      string
	stall     string
	recorder  *sizeRecorder
	flood     string
	gate      *gate
	hang      *hangingReceiver
	web       string
	templates string
}

// flags are the serve flags every attack starts canaryd with: the five
// datasources (the real one first, the default), the webhook receiver and
// the hostile web endpoints allowed, the shipped templates; everything
// else at its default (auth off, as it is by default).
func (e *hostileEnv) flags(extra ...string) []string {
	return append([]string{"--prometheus-url", e.prom, "--prometheus-url", e.stall, "--prometheus-url", e.recorder.url,
		"--prometheus-url", e.flood, "--prometheus-url", e.gate.url,
		"--webhook-allow", e.hang.url + "/hooks", "--web-allow", e.web + "/web", "--templates", e.templates}, extra...)
}

// hostileRow is one attack: the flags it adds and what it does and
// asserts. Every row runs against a canaryd of its own, under the
// address-space cap; after it, the process must be alive, its peak RSS
// under the bound and /healthz must have answered throughout.
type hostileRow struct {
	name   string
	flags  []string
	attack func(t *testing.T, c *capped, e *hostileEnv)
}

// TestHostileInput is the hostile-input suite: every attack on canaryd's
// resources a caller can make without a token (auth is off by default),
// each against the built binary under an address-space cap of
// hostileAddressSpace, each asserting the answer (a 4xx/429 problem naming
// the field and the limit, or a terminal phase) within its deadline, the
// process alive, its resident memory under hostileRSSBound and /healthz
// answering throughout. docs/security.md's threat model cites it.
func TestHostileInput(t *testing.T) {
	// The bounds are the shipped container's: keep them together.
	deployment := readFile(t, "../../deploy/kustomize/base/deployment.yaml")
	if !strings.Contains(deployment, "value: "+goMemLimit) || !strings.Contains(deployment, fmt.Sprintf("memory: %dMi", hostileRSSBound>>20)) {
		t.Fatalf("deploy/kustomize/base/deployment.yaml no longer sets GOMEMLIMIT %s and a memory limit of %d Mi: update the suite's bounds with it",
			goMemLimit, hostileRSSBound>>20)
	}
	env := &hostileEnv{
		prom:      promtest.Start(t).URL,
		stall:     stallingServer(t),
		recorder:  newSizeRecorder(t),
		flood:     floodServer(t),
		gate:      newGate(t),
		hang:      newHangingReceiver(t),
		web:       hostileWeb(t),
		templates: shippedTemplates(t),
	}
	// The binary goes with the test: only this test uses it.
	bin := staticBinary(t)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
	for _, row := range hostileRows() {
		t.Run(row.name, func(t *testing.T) {
			began := time.Now()
			c := startCapped(t, env.flags(row.flags...)...)
			row.attack(t, c, env)
			c.check(t)
			t.Logf("%s", time.Since(began).Round(time.Millisecond))
		})
	}
}

func hostileRows() []hostileRow {
	return []hostileRow{
		{name: "conditions/string builtins", attack: attackConditions(stringBuiltinAttacks())},
		{name: "conditions/nested iteration", attack: attackConditions(iterationAttacks())},
		{name: "conditions/nested iteration over the result", attack: attackConditions(nestedResultAttacks())},
		{name: "conditions/Argo's examples still run", attack: attackArgoExamples},
		{name: "conditions/a template argument", attack: attackTemplateConditionArgument},
		{name: "documents/YAML aliases", attack: attackAliases},
		{name: "documents/YAML nodes, three at a time", attack: attackNodes},
		{name: "arguments/inside query quotes", attack: attackArgumentInsideQuotes},
		{name: "arguments/outside query quotes", attack: attackArgumentOutsideQuotes},
		{name: "arguments/size", attack: attackArgumentSize},
		{name: "results/subqueries and range queries", flags: []string{"--max-query-timeout", safetyNet.String()}, attack: attackBigResults},
		{name: "results/retained and listed", attack: attackRetainedResults},
		{name: "results/no eviction before --min-retention", flags: []string{"--max-finished", "20"}, attack: attackEviction},
		{name: "results/retained bytes", flags: []string{"--max-retained-bytes", "4MiB"}, attack: attackRetainedBytes},
		{name: "results/web metrics", flags: []string{"--max-query-timeout", safetyNet.String()}, attack: attackWebMetrics},
		{name: "streams/never read", attack: attackStalledStreams},
		{name: "metrics/made-up methods", attack: attackMethods},
		{name: "rounds/many at once", attack: attackManyRounds},
		{name: "webhooks/path prefixes", attack: attackWebhookPaths},
		{name: "webhooks/hanging receiver", attack: attackHangingWebhooks},
		{name: "lifecycle/DELETE while attacked", attack: attackDelete},
		{name: "lifecycle/SIGTERM while attacked", flags: []string{"--shutdown-grace", "1s"}, attack: attackShutdown},
		{name: "lifecycle/restarted replica", flags: []string{"--replica-name", "hostile"}, attack: attackRestart},
	}
}

// validationDeadline is how long a request that must be refused before
// anything runs may take: generous, since the refusal needs no I/O.
const validationDeadline = 5 * time.Second

// costRefusals are what the refusal of a condition for its cost says:
// a built-in outside the allow-list, work beyond the bound (quadratic,
// or too many steps), a range too long or of unknown size.
var costRefusals = []string{"is not allowed in a condition", "are not allowed in a condition",
	"so its work grows with the square of the result's size", "steps whatever the result", "steps for each value of the result",
	"a range in a condition may have", "a range in a condition must have integer literals"}

// attackConditions posts each condition, as a success condition to POST
// /v1/evaluate and as a failure condition to POST /v1/analyses, and wants
// a 400 on the condition's field for each.
func attackConditions(attacks []conditionAttack) func(*testing.T, *capped, *hostileEnv) {
	return func(t *testing.T, c *capped, _ *hostileEnv) {
		for _, a := range attacks {
			t.Run(a.name, func(t *testing.T) {
				if len(a.condition) > limits.MaxConditionLength {
					t.Fatalf("the condition is %d bytes, over --max-condition-length: it tests nothing", len(a.condition))
				}
				for _, target := range []struct {
					path, field string
					failure     bool
				}{
					{"/v1/evaluate?timeout=2s", "metrics[0].successCondition", false},
					{"/v1/analyses", "metrics[0].failureCondition", true},
				} {
					ans := do(http.MethodPost, c.base+target.path, "application/json", conditionSpec(a.condition, target.failure), validationDeadline)
					e := fieldError(t, ans.problem(t, http.StatusBadRequest), target.field)
					// Refused for what it would cost, not for a mistake
					// of the suite's (a syntax error would be a 400 too).
					if !slices.ContainsFunc(costRefusals, func(s string) bool { return strings.Contains(e.Message, s) }) {
						t.Errorf("%s refused for another reason than its cost: %s", target.field, e.Message)
					}
				}
				c.alive(t)
			})
		}
	}
}

// attackArgoExamples runs the conditions Argo's documentation writes (the
// bounds must not refuse them), and the costliest conditions the bounds
// accept on a result of 9,500 values, near --max-result-values (from
// floodServer, at once: the row tests the conditions' bound, not how fast a
// Prometheus computes a subquery): each round is answered Successful.
func attackArgoExamples(t *testing.T, c *capped, e *hostileEnv) {
	for _, cond := range argoExampleConditions() {
		ans := do(http.MethodPost, c.base+"/v1/evaluate", "application/json", conditionSpec(cond, false), 10*time.Second)
		var round api.Analysis
		if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseSuccessful {
			t.Errorf("%s: want a 200 Successful round, got %s", cond, ans)
		}
	}
	var metrics []metricJSON
	for i, cond := range costliestAccepted() {
		m := promMetric(fmt.Sprintf("m%d", i), floodQuery(9_500), e.flood)
		m.SuccessCondition = cond
		metrics = append(metrics, m)
	}
	// The deadline is a safety net: the bound this tests is the
	// conditions' cost, which a slow machine makes slower but not
	// refused (FuzzCostBound holds the cost to its charge in time).
	ans := do(http.MethodPost, c.base+"/v1/evaluate?timeout=1m", "application/json", specJSON(metrics), 2*time.Minute)
	var round api.Analysis
	if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseSuccessful {
		t.Errorf("the costliest accepted conditions on a result near the cap: want a 200 Successful round, got %s", ans)
	}
	t.Logf("the costliest accepted conditions: answered in %s", ans.took.Round(time.Millisecond))
}

// attackTemplateConditionArgument sends the shipped latency-p99 template
// (whose threshold-ms argument lands in both its conditions) values that
// are not a number: an expression that would turn every verdict
// Successful, and one that would allocate gigabytes. Outside quotes an
// argument must be a plain literal: a 400 on the argument (args.NAME, for
// a query parameter and a body's args alike).
func attackTemplateConditionArgument(t *testing.T, c *capped, _ *hostileEnv) {
	blowUp := "0 || len(" + nested(stringLit("a", 16), 8, func(in string) string { return "replace(" + in + `, "a", ` + stringLit("a", 16) + ")" }) + ") > 0"
	for _, v := range []struct{ name, value string }{
		{"an expression that is always true", "1e308 || true"},
		{"a ternary", "0 ? 1 : 1e308"},
		{"a comment", "1e308 // "},
		{"nested replace", blowUp},
		{"a let-bound range", "1; let r = 1..999999; all(r, {all(r, {# > 0})})"},
	} {
		t.Run(v.name, func(t *testing.T) {
			ans := do(http.MethodPost, c.base+"/v1/templates/latency-p99/evaluate?arg.service=echo&arg.threshold-ms="+url.QueryEscape(v.value),
				"", nil, validationDeadline)
			fieldError(t, ans.problem(t, http.StatusBadRequest), "args.threshold-ms", "outside a string literal")

			body, _ := json.Marshal(map[string]any{"args": map[string]string{"service": "echo", "threshold-ms": v.value}})
			ans = do(http.MethodPost, c.base+"/v1/templates/latency-p99/evaluate", "application/json", body, validationDeadline)
			fieldError(t, ans.problem(t, http.StatusBadRequest), "args.threshold-ms", "outside a string literal")
		})
	}
}

// attackAliases posts documents whose YAML aliases would expand to about
// 600 MB from 0.6 MB, in each place an alias can be, and the billion
// laughs: each a 400 before anything is expanded. The billion laughs, a
// few hundred bytes, is parsed, and the 400 names the anchor or alias
// where it is (the spec's field, else body); the others hold more nodes
// than spec.MaxYAMLNodes, and are refused on body from their bytes
// alone, unparsed, saying so and that they may hold aliases.
func attackAliases(t *testing.T, c *capped, _ *hostileEnv) {
	for _, v := range []struct{ place, field, text string }{
		{"sequence", "nothing[0]", "alias *a"},
		{"map", "metadata.annotations.k0", "alias *a"},
		{"metrics", "metrics[1]", "alias *m"},
		{"merge keys", "metrics[1].<<", "alias *m"},
		{"nested", "lol1[0]", "alias *l0"},
	} {
		t.Run(v.place, func(t *testing.T) {
			body := aliasBody(v.place)
			t.Logf("%d bytes", len(body))
			for _, path := range []string{"/v1/analyses", "/v1/evaluate", "/v1/gates", "/v1/backtests", "/v1/templates/success-rate/evaluate"} {
				ans := do(http.MethodPost, c.base+path, "application/yaml", body, validationDeadline)
				p := ans.problem(t, http.StatusBadRequest)
				if strings.HasPrefix(path, "/v1/templates/") {
					// The body of a template endpoint is its arguments:
					// refused all the same, before anything is expanded.
					if !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool { return mentions(e.Message, "alias") }) {
						t.Errorf("%s: no error mentions the aliases: %s", path, errorList(p))
					}
					continue
				}
				if v.place != "nested" {
					// Hundreds of thousands of aliases, too many nodes to parse.
					fieldError(t, p, "body", fmt.Sprintf("more than %d YAML nodes", spec.MaxYAMLNodes), "may be YAML anchors and aliases")
					continue
				}
				fieldError(t, p, v.field, v.text)
			}
			c.alive(t)
		})
	}
}

// attackNodes posts bodies of a megabyte, within the body's size limit,
// that are half a million YAML nodes (a flow sequence of ones) or aliases,
// three at a time to each route that decodes a document, a few rounds:
// each is refused, a 400 on body naming the limit of nodes (or the
// aliases), or a 429 past the bound on bodies decoded at once, and the
// process stays within its memory and answers /healthz throughout (c.check).
func attackNodes(t *testing.T, c *capped, _ *hostileEnv) {
	var b strings.Builder
	b.WriteString("metrics: [")
	for b.Len() < server.DefaultMaxBodyBytes-16 {
		b.WriteString("1,")
	}
	b.WriteString("1]\n")
	bodies := [][]byte{[]byte(b.String()), aliasBody("sequence")}
	limit := fmt.Sprintf("more than %d YAML nodes", spec.MaxYAMLNodes)
	for _, path := range []string{"/v1/validate", "/v1/analyses", "/v1/evaluate"} {
		for round := range 3 {
			var wg sync.WaitGroup
			answers := make([]answer, 3)
			for i := range answers {
				wg.Add(1)
				// Ends when its request is answered, within validationDeadline.
				go func() {
					defer wg.Done()
					answers[i] = do(http.MethodPost, c.base+path, "application/yaml", bodies[(round+i)%len(bodies)], validationDeadline)
				}()
			}
			wg.Wait()
			for _, ans := range answers {
				if ans.status == http.StatusTooManyRequests {
					if p := ans.problem(t, http.StatusTooManyRequests); p.Type != server.ProblemTooManyDecodes || ans.header.Get("Retry-After") == "" {
						t.Errorf("%s: a 429 that is not too-many-decodes with Retry-After: %s", path, ans)
					}
					continue
				}
				p := ans.problem(t, http.StatusBadRequest)
				if !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool {
					return e.Field == "body" && (strings.Contains(e.Message, limit) || mentions(e.Message, "more YAML anchors or aliases"))
				}) {
					t.Errorf("%s: refused for another reason than its nodes or aliases: %s", path, errorList(p))
				}
			}
			c.alive(t)
		}
	}
}

// attackArgumentInsideQuotes sends the shipped success-rate template
// namespaces that would close the label matcher's string and turn the
// failing namespace echo-bad (95% success, under the template's 99%) into
// a Successful round: a value in a PromQL string literal is escaped as
// PromQL escapes strings, so the query asks for a namespace of that odd
// name, finds no series, and the round is an Error (result[0] of an empty
// result), never Successful.
func attackArgumentInsideQuotes(t *testing.T, c *capped, _ *hostileEnv) {
	for _, v := range []struct{ name, value string }{
		{"a quote and a comment", `echo-bad"}[1m])) * 0 + 1 #`},
		{"an escaped quote", `echo-bad\"}[1m])) * 0 + 1 #`},
		{"a backslash before the quote", `echo-bad\`},
		{"a newline", "echo-bad\"}[1m])) * 0 + 1\n#"},
		{"a single quote", `echo-bad'}[1m])) * 0 + 1 #`},
		{"a backquote", "echo-bad`}[1m])) * 0 + 1 #"},
		{"or vector", `echo-bad"} or vector(1) or x{a="`},
	} {
		t.Run(v.name, func(t *testing.T) {
			ans := do(http.MethodPost, c.base+"/v1/templates/success-rate/evaluate?arg.namespace="+url.QueryEscape(v.value), "", nil, 10*time.Second)
			var round api.Analysis
			if ans.err != nil || json.Unmarshal(ans.body, &round) != nil || len(round.MetricResults) != 1 || len(round.MetricResults[0].Measurements) != 1 {
				t.Fatalf("want a round, got %s", ans)
			}
			ms := round.MetricResults[0].Measurements[0]
			if ans.status != http.StatusServiceUnavailable || round.Phase != api.PhaseError || ms.Phase != api.PhaseError {
				t.Errorf("want a 503 Error round (the escaped namespace has no data), got %d %s, measurement %s %q", ans.status, round.Phase, ms.Phase, ms.Message)
			}
			if ms.Value != "[]" {
				t.Errorf("the query found data for the escaped namespace: value %.200s", ms.Value)
			}
		})
	}
	// The control: the same template, an honest namespace, the verdict the
	// data decides.
	ans := do(http.MethodPost, c.base+"/v1/templates/success-rate/evaluate?arg.namespace=echo-bad", "", nil, 10*time.Second)
	var round api.Analysis
	if ans.err != nil || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseFailed {
		t.Errorf("echo-bad: want a Failed round, got %s", ans)
	}
}

// attackArgumentOutsideQuotes sends values to arguments that a template
// puts into a query outside any string (a range, a number): they must be
// plain literals, so anything else is a 400 on the argument (args.NAME,
// for a query parameter and a body's args alike).
func attackArgumentOutsideQuotes(t *testing.T, c *capped, e *hostileEnv) {
	for _, v := range []struct{ name, arg, value string }{
		{"a range closed early", "window", `1m])) * 0 + 1 #`},
		{"a range with a subquery", "window", `1h:1ms`},
		{"a range with a newline", "window", "1m]))\n* 0 + 1 #"},
		{"a number and an or", "k", `1 or vector(1) #`},
		{"a number and a division", "k", `1e9 / 1`},
		{"a number with a comment", "k", `1 #`},
	} {
		t.Run(v.name, func(t *testing.T) {
			q := url.Values{"arg.window": {"1m"}, "arg.k": {"1"}}
			q.Set("arg."+v.arg, v.value)
			ans := do(http.MethodPost, c.base+"/v1/templates/outside/evaluate?"+q.Encode(), "", nil, validationDeadline)
			fieldError(t, ans.problem(t, http.StatusBadRequest), "args."+v.arg, "outside a string literal")
		})
	}
	ans := do(http.MethodPost, c.base+"/v1/templates/outside/evaluate?arg.window=2m&arg.k=1", "", nil, 10*time.Second)
	var round api.Analysis
	if ans.err != nil || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseFailed {
		t.Errorf("plain literals: want a Failed round, got %s", ans)
	}
}

// attackArgumentSize sends bodies under 1 MiB whose arguments, substituted,
// would make gigabytes: many {{args.a}} times a large value, in each
// place an argument lands, and across all the metrics a spec may have.
// The resolved spec is bounded before anything is built or sent: a 400
// naming the field and the bound, and the datasource receives nothing.
func attackArgumentSize(t *testing.T, c *capped, e *hostileEnv) {
	big := strings.Repeat("a", 600<<10)
	small := strings.Repeat("a", 10<<10)
	refs := func(n int) string { return strings.Repeat("{{args.a}}", n) }
	var spread []metricJSON
	for i := range limits.MaxMetrics {
		spread = append(spread, metricJSON{Name: fmt.Sprintf("m%d", i), Provider: map[string]any{"prometheus": map[string]any{
			"query": `sum(up{job="{{args.a}}"})`, "address": e.recorder.url,
			"headers": []map[string]string{{"key": "X-B", "value": "{{args.b}}"}}}}})
	}
	for _, v := range []struct {
		name, field, text string
		metrics           []metricJSON
		args              []map[string]string
	}{
		{"in a query", "metrics[0].provider.prometheus.query", "--max-query-length",
			[]metricJSON{promMetric("m", `sum(up{job="`+refs(30_000)+`"})`, e.recorder.url)},
			[]map[string]string{{"name": "a", "value": big}}},
		// The report's 0.5 MB body that sent a 100 MB query.
		{"in a query, to Prometheus", "metrics[0].provider.prometheus.query", "--max-query-length",
			[]metricJSON{promMetric("m", `sum(up{job="`+refs(10_000)+`"})`, e.recorder.url)},
			[]map[string]string{{"name": "a", "value": small}}},
		{"in a condition", "metrics[0].successCondition", "--max-condition-length",
			[]metricJSON{{Name: "m", SuccessCondition: `result[0] > 0 || "` + refs(400) + `" == ""`,
				Provider: map[string]any{"prometheus": map[string]any{"query": "vector(1)", "address": e.recorder.url}}}},
			[]map[string]string{{"name": "a", "value": big}}},
		{"in a header", "metrics[0].provider.prometheus.headers[0].value", "8192",
			[]metricJSON{{Name: "m", Provider: map[string]any{"prometheus": map[string]any{"query": "vector(1)", "address": e.recorder.url,
				"headers": []map[string]string{{"key": "X-Big", "value": refs(10_000)}}}}}},
			[]map[string]string{{"name": "a", "value": small}}},
		// Each field within its bound, the spec not: 50 metrics of a 16 KB
		// query and an 8 KB header.
		{"across the metrics", "metrics", "1048576", spread,
			[]map[string]string{{"name": "a", "value": strings.Repeat("a", 16_000)}, {"name": "b", "value": strings.Repeat("b", 8_000)}}},
	} {
		t.Run(v.name, func(t *testing.T) {
			body := specJSON(v.metrics, v.args...)
			t.Logf("%d bytes", len(body))
			for _, path := range []string{"/v1/evaluate", "/v1/analyses"} {
				ans := do(http.MethodPost, c.base+path, "application/json", body, validationDeadline)
				fieldError(t, ans.problem(t, http.StatusBadRequest), v.field, v.text)
			}
			if n := e.recorder.largest.Load(); n > 0 {
				t.Errorf("the datasource was sent a request of %d bytes", n)
			}
			c.alive(t)
		})
	}
}

// attackBigResults asks a round of a dozen instant queries (the report's
// dozen subqueries, 11 million values and 230 MB of JSON at once) and one
// of range queries whose answers hold far more values than
// --max-result-values: each measurement is an Error naming the bound (the
// values counted, or the bytes read of an answer for them), and memory
// stays bounded.
//
// The answers come from floodServer, which writes them as fast as canaryd
// reads: what decides each measurement is the bound, never how long a
// Prometheus takes to compute a subquery. The deadlines are a safety net
// of minutes, for a canaryd that never answers.
func attackBigResults(t *testing.T, c *capped, e *hostileEnv) {
	metric := func(name string, values int, rangeQuery bool) metricJSON {
		m := promMetric(name, floodQuery(values), e.flood)
		if rangeQuery {
			m.Provider["prometheus"].(map[string]any)["rangeQuery"] = map[string]string{
				"start": `now() - duration("1h")`, "end": "now()", "step": "1s"}
		}
		m.Provider["prometheus"].(map[string]any)["timeout"] = int(safetyNet.Seconds())
		m.SuccessCondition = "len(result) > 0"
		return m
	}
	var subqueries, ranges []metricJSON
	for i := range 12 {
		// About 17 MB of JSON each: beyond the bytes read of an answer.
		subqueries = append(subqueries, metric(fmt.Sprintf("subquery-%d", i), 1_000_000, false))
	}
	for i := range 6 {
		// About 5 MB each: read, and its values counted.
		ranges = append(ranges, metric(fmt.Sprintf("range-%d", i), 300_000, true))
	}
	for _, v := range []struct {
		name    string
		metrics []metricJSON
	}{
		{"a dozen subqueries", subqueries},
		{"range queries", ranges},
	} {
		t.Run(v.name, func(t *testing.T) {
			ans := do(http.MethodPost, c.base+"/v1/evaluate?timeout="+safetyNet.String(), "application/json", specJSON(v.metrics), safetyNet+time.Minute)
			var round api.Analysis
			if ans.err != nil || ans.status != http.StatusServiceUnavailable || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseError {
				t.Fatalf("want a 503 Error round, got %s", ans)
			}
			for _, m := range round.MetricResults {
				ms := m.Measurements[0]
				if ms.Phase != api.PhaseError || !strings.Contains(ms.Message, "--max-result-values") {
					t.Errorf("%s: want an Error naming --max-result-values, got %s %q", m.Name, ms.Phase, ms.Message)
				}
			}
			t.Logf("round of %d bytes in %s", len(ans.body), ans.took.Round(time.Millisecond))
			c.alive(t)
		})
	}
}

// safetyNet is the deadline of a round whose outcome a bound decides,
// not the clock: long enough that no machine reaches it while canaryd
// works (the rows answer in a second or two on a quiet one), so that it
// only ends a test whose canaryd never answers. It is within the
// --max-query-timeout the rows that use it set (hostileRows).
const safetyNet = 3 * time.Minute

// attackWebMetrics asks a round of web metrics against endpoints that
// answer without end, redirect forever, nest deeper than any decoder goes,
// or answer 500,000 values in under 1 MiB, each judged by a condition near
// the cost bound (which holds for a result of at most --max-result-values
// values), as many as a spec may have: each measurement is an Error naming
// its bound, and memory stays bounded. Each endpoint answers at once, and
// the metrics' timeouts and the round's deadline are safetyNet: what ends
// each measurement is its bound, however long the 50 requests queue for
// the 16 connections a host gets on a busy machine. Then a round against
// an endpoint that never answers, whose bound is the metric's timeout: an
// Error naming the deadline, answered by it.
func attackWebMetrics(t *testing.T, c *capped, e *hostileEnv) {
	webMetric := func(name, path, condition string, timeout time.Duration) metricJSON {
		return metricJSON{Name: name, SuccessCondition: condition, Provider: map[string]any{"web": map[string]any{
			"url": e.web + "/web/" + path, "timeoutSeconds": int(timeout.Seconds())}}}
	}
	// About 450 steps a value, no allocation: the bound accepts it for a
	// result of --max-result-values values.
	terms := make([]string, 150)
	for i := range terms {
		terms[i] = fmt.Sprintf("# > -%d", i)
	}
	costly := "all(result, {" + strings.Join(terms, " && ") + "})"
	var metrics []metricJSON
	want := map[string]string{}
	for _, v := range []struct {
		path, text string
		n          int
	}{
		{"endless", "1048576", 3},
		{"redirect", fmt.Sprintf("stopped after %d redirects", web.MaxRedirects), 3},
		// Deeper than a JSON decoder goes: not JSON, and longer than a
		// string in a result may be.
		{"deep", "not JSON, and longer than the 256 bytes", 3},
		// The rest of the 50 metrics a spec may have: 41 MiB of answers
		// that each decode to 500,000 values.
		{"wide", "--max-result-values", limits.MaxMetrics - 9},
	} {
		for i := range v.n {
			name := fmt.Sprintf("%s-%d", v.path, i)
			metrics = append(metrics, webMetric(name, v.path, costly, safetyNet))
			want[name] = v.text
		}
	}
	ans := do(http.MethodPost, c.base+"/v1/evaluate?timeout="+safetyNet.String(), "application/json", specJSON(metrics), safetyNet+time.Minute)
	var round api.Analysis
	if ans.err != nil || ans.status != http.StatusServiceUnavailable || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseError {
		t.Fatalf("want a 503 Error round, got %s", ans)
	}
	t.Logf("the bounds' round answered in %s", ans.took.Round(time.Millisecond))
	for _, m := range round.MetricResults {
		ms := m.Measurements[0]
		if ms.Phase != api.PhaseError || !mentions(ms.Message, want[m.Name]) {
			t.Errorf("%s: want an Error mentioning %q, got %s %q", m.Name, want[m.Name], ms.Phase, tail(ms.Message, 300))
		}
	}

	// The deadline is the bound here: 3 metrics on an endpoint that
	// never answers, alone in their round, so that nothing else queues.
	const timeout, roundTimeout = 2 * time.Second, 5 * time.Second
	metrics = nil
	for i := range 3 {
		metrics = append(metrics, webMetric(fmt.Sprintf("hang-%d", i), "hang", costly, timeout))
	}
	ans = do(http.MethodPost, c.base+"/v1/evaluate?timeout="+roundTimeout.String(), "application/json", specJSON(metrics), roundTimeout+time.Minute)
	if ans.err != nil || ans.status != http.StatusServiceUnavailable || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseError {
		t.Fatalf("hang: want a 503 Error round, got %s", ans)
	}
	// Answered by the round's deadline (0.1 s after it at most, as
	// documented; 2 s here, generously).
	if ans.took > roundTimeout+2*time.Second {
		t.Errorf("hang: the round was answered after %s, its deadline %s", ans.took, roundTimeout)
	}
	for _, m := range round.MetricResults {
		if ms := m.Measurements[0]; ms.Phase != api.PhaseError || !mentions(ms.Message, "deadline") {
			t.Errorf("%s: want an Error mentioning the deadline, got %s %q", m.Name, ms.Phase, tail(ms.Message, 300))
		}
	}
}

// hostileWeb serves the web metrics' hostile endpoints under /web/.
func hostileWeb(t *testing.T) string {
	quit := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/web/endless", func(w http.ResponseWriter, r *http.Request) {
		// A JSON array that never ends, until the client hangs up.
		chunk := []byte(strings.Repeat("1,", 32<<10))
		_, _ = w.Write([]byte("["))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/web/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	})
	mux.HandleFunc("/web/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/web/redirect", http.StatusFound)
	})
	deep := strings.Repeat("[", 500_000) + strings.Repeat("]", 500_000)
	mux.HandleFunc("/web/deep", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, deep)
	})
	wide := "[" + strings.TrimSuffix(strings.Repeat("1,", 500_000), ",") + "]"
	mux.HandleFunc("/web/wide", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, wide)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(quit)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// attackRetainedResults starts more analyses than a page lists, each
// measuring results of thousands of values, lets them finish and be
// retained, and lists them: each stored value is cut at 4 KiB with its
// count, a page leaves the measurements out unless asked and holds at
// most 100 analyses (next for the rest), and what is retained is counted
// against --max-retained-bytes.
func attackRetainedResults(t *testing.T, c *capped, _ *hostileEnv) {
	m := promMetric("m", mediumResultQuery, "")
	m.SuccessCondition = "len(result) > 0"
	m.Count, m.Interval = 3, "10ms"
	n := m
	n.Name = "n"
	body := specJSON([]metricJSON{m, n})
	const started = 120
	for i := range started {
		ans := do(http.MethodPost, c.base+"/v1/analyses?wait=true", "application/json", body, 30*time.Second)
		if ans.err != nil || ans.status != http.StatusOK {
			t.Fatalf("analysis %d: %s", i, ans)
		}
	}

	ans := do(http.MethodGet, c.base+"/v1/analyses", "", nil, 10*time.Second)
	var page server.AnalysisList
	if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &page) != nil {
		t.Fatalf("GET /v1/analyses: %s", ans)
	}
	t.Logf("GET /v1/analyses: %d analyses in %d bytes", len(page.Analyses), len(ans.body))
	if len(ans.body) > 1<<20 || len(page.Analyses) != server.DefaultListLimit || page.Next == "" {
		t.Errorf("the first page: %d analyses in %d bytes, next %q; want %d, at most 1 MiB, and a next page",
			len(page.Analyses), len(ans.body), page.Next, server.DefaultListLimit)
	}
	for _, a := range page.Analyses {
		if a.MetricResults[0].Count != 3 || len(a.MetricResults[0].Measurements) != 0 {
			t.Errorf("%s listed with %d measurements (count %d), want none unless asked", a.ID, len(a.MetricResults[0].Measurements), a.MetricResults[0].Count)
			break
		}
	}
	ans = do(http.MethodGet, c.base+"/v1/analyses?cursor="+url.QueryEscape(page.Next), "", nil, 10*time.Second)
	var rest server.AnalysisList
	if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &rest) != nil || len(rest.Analyses) != started-server.DefaultListLimit || rest.Next != "" {
		t.Errorf("the second page: want the last %d analyses, got %s", started-server.DefaultListLimit, ans)
	}

	// Asked for, the measurements come with each value cut at 4 KiB.
	ans = do(http.MethodGet, c.base+"/v1/analyses?measurements=true&limit=5", "", nil, 10*time.Second)
	if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &page) != nil || len(page.Analyses) != 5 {
		t.Fatalf("GET /v1/analyses?measurements=true&limit=5: %s", ans)
	}
	for _, ms := range page.Analyses[0].MetricResults[0].Measurements {
		if len(ms.Value) > 4<<10 || !strings.HasSuffix(ms.Value, " values)]") {
			t.Errorf("a stored value of %d bytes, ending %q: want at most 4 KiB, ending with its count", len(ms.Value), tail(ms.Value, 40))
		}
	}
	ans = do(http.MethodGet, c.base+fmt.Sprintf("/v1/analyses?limit=%d", server.MaxListLimit+1), "", nil, 10*time.Second)
	fieldError(t, ans.problem(t, http.StatusBadRequest), "limit")

	retained := metricValue(t, c.base, "canaryd_analyses_retained_bytes")
	t.Logf("retained: %.0f bytes", retained)
	if retained <= 0 || retained > 64<<20 {
		t.Errorf("canaryd_analyses_retained_bytes %v, want some and at most --max-retained-bytes (64 MiB)", retained)
	}
}

// attackRetainedBytes fills --max-retained-bytes (4 MiB here) with
// analyses of 20 metrics, each recording ten values of 4 KiB (the most a
// stored value may be) and a 16 KiB query, about 1.1 MiB an analysis:
// once every finished result is younger than --min-retention, a new
// analysis gets a 429 naming the bound. The bound is checked when an
// analysis starts (its size is not known before it measures), so what is
// held may pass it by the analyses admitted under it: here, one at a
// time, by at most one.
func attackRetainedBytes(t *testing.T, c *capped, _ *hostileEnv) {
	var metrics []metricJSON
	for i := range 20 {
		m := promMetric(fmt.Sprintf("m%d", i), "vector(1.23456789)[5m:100ms]\n# "+strings.Repeat("x", 16_000), "")
		m.SuccessCondition, m.Count, m.Interval = "len(result) > 0", 10, "10ms"
		metrics = append(metrics, m)
	}
	body := specJSON(metrics)
	for i := range 20 {
		ans := do(http.MethodPost, c.base+"/v1/analyses?wait=true", "application/json", body, 30*time.Second)
		if ans.status == http.StatusTooManyRequests {
			p := ans.problem(t, http.StatusTooManyRequests)
			if p.Type != server.ProblemTooManyAnalyses || !strings.Contains(p.Detail, "--max-retained-bytes") || ans.header.Get("Retry-After") == "" {
				t.Errorf("analysis %d: a 429 not naming --max-retained-bytes, or without Retry-After: %s", i, ans)
			}
			t.Logf("analysis %d refused: %s", i, p.Detail)
			break
		}
		if ans.err != nil || ans.status != http.StatusOK {
			t.Fatalf("analysis %d: %s", i, ans)
		}
		if i == 19 {
			t.Errorf("20 analyses of about 1 MiB each accepted with --max-retained-bytes 4MiB")
		}
	}
	if retained := metricValue(t, c.base, "canaryd_analyses_retained_bytes"); retained > 4<<20+3<<19 {
		t.Errorf("canaryd_analyses_retained_bytes %v, over --max-retained-bytes 4MiB and the one analysis admitted under it", retained)
	}
}

// attackEviction fills what a small canaryd may retain, in bytes and in
// number, as fast as it can: no caller can evict another's finished result
// younger than --min-retention; a new analysis gets a 429 naming the bound
// instead, and the first result stays readable.
func attackEviction(t *testing.T, c *capped, _ *hostileEnv) {
	m := promMetric("m", mediumResultQuery, "")
	m.SuccessCondition = "len(result) > 0"
	m.Count, m.Interval = 3, "10ms"
	body := specJSON([]metricJSON{m})
	var first string
	for i := range 40 {
		ans := do(http.MethodPost, c.base+"/v1/analyses?wait=true", "application/json", body, 30*time.Second)
		if ans.status == http.StatusTooManyRequests {
			p := ans.problem(t, http.StatusTooManyRequests)
			if p.Type != server.ProblemTooManyAnalyses || !strings.Contains(p.Detail, "--max-finished") || ans.header.Get("Retry-After") == "" {
				t.Errorf("analysis %d: a 429 not naming --max-finished, or without Retry-After: %s", i, ans)
			}
			if i != 20 {
				t.Errorf("analysis %d refused, want the 21st with --max-finished 20", i)
			}
			break
		}
		var a api.Analysis
		if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &a) != nil {
			t.Fatalf("analysis %d: %s", i, ans)
		}
		if i == 0 {
			first = a.ID
		}
		if i == 39 {
			t.Errorf("40 analyses accepted with --max-finished 20 and none older than --min-retention")
		}
	}
	if ans := do(http.MethodGet, c.base+"/v1/analyses/"+first, "", nil, 5*time.Second); ans.status != http.StatusOK {
		t.Errorf("the first analysis was evicted before --min-retention: %s", ans)
	}
}

// attackStalledStreams opens streams (NDJSON and server-sent events, on GET
// and on POST) that never read, on analyses whose events are some 4 KiB
// each (a value as long as a measurement's may be), eight every 10 ms,
// and waits: a stream that falls behind is cut off (its last event a
// cutoff) rather than buffered, so that memory stays bounded, and each
// response ends.
func attackStalledStreams(t *testing.T, c *capped, e *hostileEnv) {
	var metrics []metricJSON
	for i := range 8 {
		// 3,000 values, cheap for Prometheus: the value is cut at 4 KiB.
		m := promMetric(fmt.Sprintf("m%d", i), "vector(1.23456789)[5m:100ms]", "")
		m.SuccessCondition, m.Interval = "len(result) > 0", "10ms"
		metrics = append(metrics, m)
	}
	body := specJSON(metrics)
	ans := do(http.MethodPost, c.base+"/v1/analyses", "application/json", body, 10*time.Second)
	var a api.Analysis
	if ans.err != nil || ans.status != http.StatusAccepted || json.Unmarshal(ans.body, &a) != nil {
		t.Fatalf("POST /v1/analyses: %s", ans)
	}
	type stream struct {
		conn net.Conn
		req  *http.Request
		sse  bool
	}
	var streams []stream
	defer func() {
		for _, s := range streams {
			s.conn.Close()
		}
	}()
	addr := strings.TrimPrefix(c.base, "http://")
	for i := range 16 {
		accept := "application/x-ndjson"
		if i%2 == 1 {
			accept = "text/event-stream"
		}
		req, _ := http.NewRequest(http.MethodGet, c.base+"/v1/analyses/"+a.ID, nil)
		if i%8 == 0 {
			req, _ = http.NewRequest(http.MethodPost, c.base+"/v1/analyses", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", accept)
		streams = append(streams, stream{conn: stalledConn(t, addr, req), req: req, sse: i%2 == 1})
	}
	// The streams stay unread while the analyses measure, until canaryd has
	// cut each one off (it logs each); how long that takes depends on the
	// kernel's socket buffers (some megabytes a connection on loopback)
	// and on how fast the machine measures.
	// The wait is a safety net of minutes: each stream is cut off when
	// its buffer fills, however slowly the machine fills it.
	deadline := time.Now().Add(safetyNet)
	for strings.Count(c.logs.text(), `"msg":"stream cut off`) < len(streams) {
		if time.Now().After(deadline) {
			t.Errorf("after %s, %d of %d unread streams cut off", safetyNet, strings.Count(c.logs.text(), `"msg":"stream cut off`), len(streams))
			break
		}
		c.alive(t)
		time.Sleep(100 * time.Millisecond)
	}
	c.alive(t)
	if rss := c.memory("VmRSS"); rss > hostileRSSBound {
		t.Errorf("RSS %d MiB with %d unread streams", rss>>20, len(streams))
	}
	// Read now, each stream must end, its last event the cutoff.
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Add(1)
		// Ends at the end of the response or at the read deadline.
		go func() {
			defer wg.Done()
			_ = s.conn.SetReadDeadline(time.Now().Add(time.Minute))
			resp, err := http.ReadResponse(bufio.NewReader(s.conn), s.req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("stream %d (%s): %v %v", i, s.req.Method, resp, err)
				return
			}
			n, last, err := lastEvent(resp.Body)
			if err != nil {
				t.Errorf("stream %d (%s, sse %v): not cut off: %d events read, then %v", i, s.req.Method, s.sse, n, err)
				return
			}
			if last != "cutoff" {
				t.Errorf("stream %d (%s, sse %v) ended without a cutoff event: %d events, the last %q", i, s.req.Method, s.sse, n, last)
			}
		}()
	}
	wg.Wait()
}

// lastEvent reads a stream (NDJSON lines, or server-sent events' data
// lines) to the end of the response and returns how many events it had
// and the type of the last, heartbeats left out. Only the last is decoded:
// the streams carry megabytes, and the reader must keep up.
func lastEvent(r io.Reader) (int, api.EventType, error) {
	var n int
	var last []byte
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimPrefix(line, []byte("data: "))
		if len(line) > 0 && line[0] == '{' && !bytes.Contains(line, []byte(`"type":"heartbeat"`)) {
			n++
			last = line
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, "", err
		}
	}
	var ev api.Event
	if last != nil {
		if err := json.Unmarshal(last, &ev); err != nil {
			return n, "", err
		}
	}
	return n, ev.Type, nil
}

// stalledConn connects with a tiny receive window, sends req and reads
// nothing.
func stalledConn(t *testing.T, addr string, req *http.Request) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// attackMethods sends 1,500 made-up HTTP methods: each is refused, and
// /metrics stays the size it was.
func attackMethods(t *testing.T, c *capped, _ *hostileEnv) {
	before := do(http.MethodGet, c.base+"/metrics", "", nil, 5*time.Second)
	client := &http.Client{Timeout: 5 * time.Second}
	paths := []string{"/healthz", "/v1/analyses", "/v1/analyses/x.y", "/nowhere"}
	for i := range 1500 {
		req, _ := http.NewRequest(fmt.Sprintf("M%04dX", i), c.base+paths[i%len(paths)], nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("method %s: %v", req.Method, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("method %s on %s: %d, want 405 or 404", req.Method, req.URL.Path, resp.StatusCode)
		}
	}
	after := do(http.MethodGet, c.base+"/metrics", "", nil, 5*time.Second)
	t.Logf("/metrics: %d bytes before, %d after", len(before.body), len(after.body))
	if grew := len(after.body) - len(before.body); grew > 16<<10 {
		t.Errorf("/metrics grew by %d bytes after 1,500 made-up methods", grew)
	}
	if strings.Contains(string(after.body), "M0001X") {
		t.Errorf("/metrics names a made-up method")
	}
}

// attackManyRounds sends many rounds at once, each held by a datasource
// (gate) until every round has been refused or is held: the rounds beyond
// the concurrency limit get 429 while the others are held, and the others,
// once released, their Successful round. No clock decides which: the held
// rounds end when the test releases them, not at a deadline that a slow
// machine could reach before the last request arrives, which would let
// later rounds in.
func attackManyRounds(t *testing.T, c *capped, e *hostileEnv) {
	const n = 200
	m := promMetric("m", "up", e.gate.url)
	m.SuccessCondition = "result[0] > 0"
	body := specJSON([]metricJSON{m})
	answers := make(chan answer, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		// Ends when the round is answered, once the gate is released (or
		// at the safety net's deadline).
		go func() {
			defer wg.Done()
			answers <- do(http.MethodPost, c.base+"/v1/evaluate?timeout="+safetyNet.String(), "application/json", body, safetyNet+time.Minute)
		}()
	}
	// Every request has arrived when each is answered or held.
	var early []answer
	deadline := time.After(safetyNet)
	for len(early)+int(e.gate.held.Load()) < n {
		select {
		case ans := <-answers:
			early = append(early, ans)
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("after %s, %d rounds answered and %d held of %d", safetyNet, len(early), e.gate.held.Load(), n)
		}
	}
	held := int(e.gate.held.Load())
	e.gate.release()
	wg.Wait()
	close(answers)
	counts := map[int]int{}
	for _, ans := range early {
		counts[ans.status]++
		if ans.status != http.StatusTooManyRequests {
			t.Errorf("a round answered while the datasource held it: %s", ans)
			continue
		}
		p := ans.problem(t, http.StatusTooManyRequests)
		if p.Type != server.ProblemTooManyAnalyses || ans.header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "--max-rounds") {
			t.Errorf("a 429 without Retry-After or not naming --max-rounds: %s", ans)
		}
	}
	for ans := range answers {
		counts[ans.status]++
		var round api.Analysis
		if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &round) != nil || round.Phase != api.PhaseSuccessful {
			t.Errorf("a held round, released: want a 200 Successful round, got %s", ans)
		}
	}
	t.Logf("%d rounds at once: %d held, %v", n, held, counts)
	if held != analyses.DefaultMaxRounds || counts[http.StatusTooManyRequests] != n-analyses.DefaultMaxRounds {
		t.Errorf("%d rounds at once: %d held, %v; want --max-rounds (%d) held and answered, the rest refused with 429",
			n, held, counts, analyses.DefaultMaxRounds)
	}
}

// attackWebhookPaths asks for webhooks whose paths leave the allowed prefix
// in the ways a Java server resolves: a 400 on webhook each.
func attackWebhookPaths(t *testing.T, c *capped, e *hostileEnv) {
	body := conditionSpec("result[0] > 0", false)
	for _, suffix := range []string{"/..;/admin", "/..%5Cadmin", "/%252e%252e/admin", "/%2e%2e/admin", "/..%2fadmin",
		"/a;b", "/a%5Cb", `/a\b`, "/%2E%2E/admin", "/.%2e/admin"} {
		t.Run(suffix, func(t *testing.T) {
			ans := do(http.MethodPost, c.base+"/v1/analyses?webhook="+url.QueryEscape(e.hang.url+"/hooks"+suffix), "application/json", body, validationDeadline)
			fieldError(t, ans.problem(t, http.StatusBadRequest), "webhook")
		})
	}
}

// attackHangingWebhooks starts 300 short analyses, each with a webhook to
// a receiver that accepts and never answers: analyses whose events are
// still owed count against --max-webhook-backlog (200; a 429 on webhook
// beyond it), the connections to the destination are capped (16), and
// goroutines stay bounded.
func attackHangingWebhooks(t *testing.T, c *capped, e *hostileEnv) {
	base := metricValue(t, c.base, "go_goroutines")
	m := promMetric("m", "vector(1)", "")
	m.SuccessCondition = "result[0] > 0"
	body := specJSON([]metricJSON{m})
	hook := url.QueryEscape(e.hang.url + "/hooks/hostile")
	counts := map[int]int{}
	for i := range 300 {
		ans := do(http.MethodPost, c.base+"/v1/analyses?wait=true&webhook="+hook, "application/json", body, 10*time.Second)
		counts[ans.status]++
		switch {
		case ans.status == http.StatusTooManyRequests:
			p := ans.problem(t, http.StatusTooManyRequests)
			if p.Type != server.ProblemTooManyAnalyses || !strings.Contains(p.Detail, "--max-webhook-backlog") {
				t.Errorf("analysis %d: a 429 not naming --max-webhook-backlog: %s", i, ans)
			}
			fieldError(t, p, "webhook")
			if i < webhook.DefaultMaxBacklog {
				t.Errorf("analysis %d refused, before %d webhooks were owed", i, webhook.DefaultMaxBacklog)
			}
		case ans.status != http.StatusOK:
			t.Fatalf("analysis %d: %s", i, ans)
		case i >= webhook.DefaultMaxBacklog:
			t.Errorf("analysis %d accepted with %d webhooks owed", i, i)
		}
	}
	t.Logf("300 analyses with a hanging webhook: %v", counts)
	time.Sleep(time.Second)
	goroutines := metricValue(t, c.base, "go_goroutines")
	t.Logf("goroutines: %v before, %v after; %d connections at most to the receiver", base, goroutines, e.hang.most.Load())
	// Two goroutines per analysis with deliveries owed (its stream and the
	// wait for it), two per connection, and some slack.
	if limit := base + 2*webhook.DefaultMaxBacklog + 2*webhook.DefaultMaxConnsPerHost + 50; goroutines > limit {
		t.Errorf("goroutines grew from %v to %v, over %v", base, goroutines, limit)
	}
	if most := e.hang.most.Load(); most > webhook.DefaultMaxConnsPerHost {
		t.Errorf("%d connections at once to one webhook destination, over %d", most, webhook.DefaultMaxConnsPerHost)
	}
}

// attackDelete deletes a running analysis while it waits on a datasource
// that never answers and measures large results, with hostile requests
// arriving meanwhile: DELETE answers with the terminated analysis within
// its bound.
func attackDelete(t *testing.T, c *capped, e *hostileEnv) {
	stop := hostileLoad(t, c, e)
	defer stop()
	for i := range 3 {
		id := startLongAnalysis(t, c, e)
		ans := do(http.MethodDelete, c.base+"/v1/analyses/"+id, "", nil, 5*time.Second)
		var a api.Analysis
		if ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &a) != nil || !a.Phase.Completed() || a.Message != "Run Terminated" {
			t.Errorf("DELETE %d: want a 200 with the terminated analysis within 5 s, got %s", i, ans)
		}
	}
}

// shutdownBound is how long the shutdown of the SIGTERM row may take: its
// --shutdown-grace of 1 s, the 3 s an analysis told to stop is waited for,
// and the 5 s the HTTP server gets to finish its responses.
const shutdownBound = time.Second + 3*time.Second + 5*time.Second

// attackShutdown sends SIGTERM while analyses wait on a datasource that
// never answers, streams go unread and hostile requests keep arriving:
// the process exits 0 within shutdownBound.
func attackShutdown(t *testing.T, c *capped, e *hostileEnv) {
	stop := hostileLoad(t, c, e)
	for range 5 {
		startLongAnalysis(t, c, e)
	}
	time.Sleep(500 * time.Millisecond)
	c.check(t)
	c.probe.stop()
	signalled := time.Now()
	c.signal(t, syscall.SIGTERM)
	select {
	case code := <-c.exited:
		if code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
		t.Logf("exited %s after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	case <-time.After(shutdownBound):
		t.Fatalf("still running %s after SIGTERM, over its bound of %s", time.Since(signalled).Round(time.Millisecond), shutdownBound)
	}
	stop()
	// check, after the row, must see the exit as intended: start a fresh
	// process for it.
	*c = *startCapped(t, e.flags()...)
}

// attackRestart kills the process (a crash) with an analysis running and
// starts it again: the analysis' id, whose epoch is the earlier run's, is
// answered with 410 (canaryd restarted after it started), not 404.
func attackRestart(t *testing.T, c *capped, e *hostileEnv) {
	id := startLongAnalysis(t, c, e)
	c.probe.stop()
	_ = c.cmd.Process.Kill()
	<-c.exited
	*c = *startCapped(t, e.flags("--replica-name", "hostile")...)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		ans := do(method, c.base+"/v1/analyses/"+id, "", nil, 5*time.Second)
		p := ans.problem(t, http.StatusGone)
		if p.Type != server.ProblemReplicaRestarted || !strings.Contains(p.Detail, "restarted after the analysis started") {
			t.Errorf("%s: want the replica-restarted problem, got %+v", method, p)
		}
	}
	ans := do(http.MethodGet, c.base+"/v1/analyses/hostile.aaaaaaaaaaaaaaaaaaaaaaaaaa", "", nil, 5*time.Second)
	if ans.status != http.StatusNotFound {
		t.Errorf("an id that never existed: want 404, got %s", ans)
	}
}

// startLongAnalysis starts an analysis that waits on the datasource that
// never answers (with a timeout far beyond the test) and measures large
// results every 50 ms, and returns its id once it runs.
func startLongAnalysis(t *testing.T, c *capped, e *hostileEnv) string {
	t.Helper()
	stall := promMetric("stall", "up", e.stall)
	stall.Provider["prometheus"].(map[string]any)["timeout"] = 60
	stall.SuccessCondition = "result[0] > 0"
	big := promMetric("big", mediumResultQuery, "")
	big.SuccessCondition, big.Interval = "all(result, {# >= 0})", "50ms"
	ans := do(http.MethodPost, c.base+"/v1/analyses", "application/json", specJSON([]metricJSON{stall, big}), 10*time.Second)
	var a api.Analysis
	if ans.err != nil || ans.status != http.StatusAccepted || json.Unmarshal(ans.body, &a) != nil {
		t.Fatalf("POST /v1/analyses: %s", ans)
	}
	return a.ID
}

// hostileLoad keeps sending attacks until stop is called: the report's
// CPU-bound condition, a nested replace, alias bombs and rounds of large
// results, a few at a time. Their answers are not judged here (their rows
// do that); stop waits for every one.
func hostileLoad(t *testing.T, c *capped, e *hostileEnv) (stop func()) {
	base := c.base
	ctx, cancel := context.WithCancel(context.Background())
	bodies := [][]byte{
		conditionSpec(iterationAttacks()[0].condition, false),
		conditionSpec(stringBuiltinAttacks()[0].condition, false),
		aliasBody("metrics"),
		specJSON([]metricJSON{promMetric("big", mediumResultQuery, "")}),
	}
	var wg sync.WaitGroup
	var sent atomic.Int64
	for i := range 4 {
		wg.Add(1)
		// Ends when stop cancels ctx.
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/evaluate?timeout=2s", strings.NewReader(string(bodies[i])))
				req.Header.Set("Content-Type", "application/yaml")
				resp, err := client.Do(req)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				sent.Add(1)
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		t.Logf("%d hostile requests answered meanwhile", sent.Load())
	}
}

// stallingServer is a datasource that accepts every request and never
// answers it.
func stallingServer(t *testing.T) string {
	srv := neverAnswer(t)
	srv.Start()
	return srv.URL
}

// neverAnswer is a server that reads each request and never answers it,
// until the client hangs up or the test ends.
func neverAnswer(t *testing.T) *httptest.Server {
	quit := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end is what lets net/http notice the
		// client hanging up (and cancel the request's context).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	}))
	t.Cleanup(func() {
		close(quit)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// floodQuery is a query that floodServer answers with n values.
func floodQuery(n int) string { return fmt.Sprintf(`flood{values="%d"}`, n) }

// floodValues reads the count of values a floodQuery asks for.
var floodValues = regexp.MustCompile(`values="([0-9]+)"`)

// floodServer is a stand-in for Prometheus that answers every query, instant
// or range, with a matrix of as many values as the query asks for
// (floodQuery), written as fast as the connection takes them from a chunk
// made once, until they are all written or canaryd hangs up.
//
// A fake, where the suite otherwise queries a real Prometheus, because the
// rows that use it test canaryd's bounds on answers (--max-result-values,
// and the bytes read of an answer for it): a real Prometheus computing
// answers of a million values took minutes on two busy cores, so that a
// deadline, not the bound, ended the measurements there. This one makes
// an answer over the bound in milliseconds whatever the machine.
func floodServer(t *testing.T) string {
	// A series' values: 1,000 pairs a second apart, about 17 KB.
	const perSeries = 1000
	var pairs strings.Builder
	for i := range perSeries {
		if i > 0 {
			pairs.WriteByte(',')
		}
		fmt.Fprintf(&pairs, `[%d,"1"]`, 1_700_000_000+i)
	}
	values := []byte(pairs.String())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m := floodValues.FindStringSubmatch(r.Form.Get("query"))
		if m == nil {
			http.Error(w, "not a flood query: "+r.Form.Get("query"), http.StatusBadRequest)
			return
		}
		n, _ := strconv.Atoi(m[1])
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		_, _ = bw.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
		for i := 0; n > 0; i++ {
			k := min(n, perSeries)
			n -= k
			if i > 0 {
				_ = bw.WriteByte(',')
			}
			fmt.Fprintf(bw, `{"metric":{"__name__":"flood","series":"%d"},"values":[`, i)
			// k pairs of the chunk: cut after the k-th pair's bracket.
			chunk := values
			if k < perSeries {
				chunk = values[:pairEnd(values, k)]
			}
			_, _ = bw.Write(chunk)
			if _, err := bw.WriteString("]}"); err != nil {
				return // canaryd hung up: the bound it tests was met
			}
		}
		_, _ = bw.WriteString("]}}")
		_ = bw.Flush()
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// pairEnd is the length of the first k pairs of a series' values.
func pairEnd(values []byte, k int) int {
	n := 0
	for i, c := range values {
		if c == ']' {
			if n++; n == k {
				return i + 1
			}
		}
	}
	return len(values)
}

// gate is a datasource that holds every query until release is called,
// then answers it (and every later one) with vector(1); it counts the
// queries it holds.
type gate struct {
	url     string
	held    atomic.Int64
	opened  chan struct{}
	release func()
}

func newGate(t *testing.T) *gate {
	g := &gate{opened: make(chan struct{})}
	var once sync.Once
	g.release = func() { once.Do(func() { close(g.opened) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		g.held.Add(1)
		defer g.held.Add(-1)
		select {
		case <-g.opened:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"1"]}]}}`, time.Now().Unix())
	}))
	t.Cleanup(func() {
		g.release()
		srv.CloseClientConnections()
		srv.Close()
	})
	g.url = srv.URL
	return g
}

// sizeRecorder is a datasource that answers vector(1) to every query and
// records the largest request it was sent.
type sizeRecorder struct {
	url     string
	largest atomic.Int64
}

func newSizeRecorder(t *testing.T) *sizeRecorder {
	rec := &sizeRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		n += int64(len(r.URL.RawQuery))
		for k, vs := range r.Header {
			for _, v := range vs {
				n += int64(len(k) + len(v))
			}
		}
		for {
			m := rec.largest.Load()
			if n <= m || rec.largest.CompareAndSwap(m, n) {
				break
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"1"]}]}}`, time.Now().Unix())
	}))
	srv.Config.MaxHeaderBytes = 64 << 20
	t.Cleanup(srv.Close)
	rec.url = srv.URL
	return rec
}

// hangingReceiver is a webhook destination that accepts every delivery
// and never answers; it counts the connections open at once.
type hangingReceiver struct {
	url  string
	open atomic.Int64
	most atomic.Int64
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	rc := &hangingReceiver{}
	srv := neverAnswer(t)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := rc.open.Add(1)
			for {
				m := rc.most.Load()
				if n <= m || rc.most.CompareAndSwap(m, n) {
					break
				}
			}
		case http.StateClosed, http.StateHijacked:
			rc.open.Add(-1)
		}
	}
	srv.Start()
	rc.url = srv.URL
	return rc
}

// shippedTemplates is a --templates directory with the templates canaryd
// ships (deploy/kustomize/base/templates) and outside, a template whose
// arguments land outside quotes in its query.
func shippedTemplates(t *testing.T) string {
	dir := t.TempDir()
	shipped := "../../deploy/kustomize/base/templates"
	entries, err := os.ReadDir(shipped)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		if !strings.HasSuffix(entry.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(shipped, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, entry.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: outside}
spec:
  args:
    - name: window
    - name: k
  metrics:
    - name: rate
      successCondition: result[0] >= 0.99
      provider:
        prometheus:
          query: |
            sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="echo-bad", response_code!~"5.."}[{{args.window}}])) * {{args.k}}
            /
            sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="echo-bad"}[{{args.window}}]))
`
	if err := os.WriteFile(filepath.Join(dir, "outside.yaml"), []byte(outside), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
