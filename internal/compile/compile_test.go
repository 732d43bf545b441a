package compile

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/limits"
)

// TestConditionCutByAComment checks that a condition which YAML cut short
// at " #" (an unquoted `all(result, # >= 0.99)`) is reported with the
// reason, and that a quoted one, or one that is fine, is not.
func TestConditionCutByAComment(t *testing.T) {
	const hint = `YAML read the rest of the line after " #" as a comment`
	for _, tc := range []struct {
		name, yaml string
		want       bool
	}{
		{"unquoted", "metrics:\n- name: m\n  successCondition: all(result, # >= 0.99)\n", true},
		{"unquoted failureCondition", "metrics:\n- name: m\n  failureCondition: any(result, # < 0.5)\n", true},
		{"quoted", "metrics:\n- name: m\n  successCondition: 'all(result, # >= 0.9'\n", false},
		{"a valid condition with a comment after it", "metrics:\n- name: m\n  successCondition: result[0] > 1 # fine\n", false},
	} {
		_, _, problems := ParseAndCompile([]byte(tc.yaml), nil, Builtin(noSources))
		got := false
		for _, p := range problems {
			if strings.Contains(p.Message, hint) {
				got = true
				if !strings.HasSuffix(p.Field, "Condition") {
					t.Errorf("%s: the hint is on %s", tc.name, p.Field)
				}
			}
		}
		if got != tc.want {
			t.Errorf("%s: hint given %v, want %v: %+v", tc.name, got, tc.want, problems)
		}
	}
}

// Limits.VerbatimArgs lifts the checks on the arguments of an Argo
// document only (see spec.ResolveOptions): Compile tells it by the
// document's apiVersion.
func TestCompileVerbatimArgsOnlyForArgoDocuments(t *testing.T) {
	const spec = `{"args": [{"name": "w", "value": "5m]) or rate(y[5m"}], "metrics": [{"name": "m", "provider": {"prometheus": {"query": "rate(x[{{args.w}}])"}}}]}`
	argo := `{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": "t"}, "spec": ` + spec + `}`
	for _, tc := range []struct {
		name     string
		input    string
		verbatim bool
		runs     bool
	}{
		{"an Argo document", argo, false, false},
		{"an Argo document with verbatim arguments", argo, true, true},
		{"a bare spec with verbatim arguments", spec, true, false},
	} {
		compiled, errs := Compile(mustParse(t, tc.input), nil, Builtin(noSources), WithLimits(limits.Limits{VerbatimArgs: tc.verbatim}))
		switch {
		case tc.runs && (len(errs) > 0 || string(compiled.Spec.Metrics[0].Provider.Prometheus) != `{"query":"rate(x[5m]) or rate(y[5m])"}`):
			t.Errorf("%s: %v", tc.name, errs)
		case !tc.runs && (len(errs) != 1 || errs[0].Field != "args[0].value"):
			t.Errorf("%s: %v, want its value refused", tc.name, errs)
		}
	}
}

// Arguments named like secrets are secret (IsSecretArg): their values are
// not quoted in the problems of Resolve, and read ***** in Compiled.Args.
func TestCompileHoldsArgumentsNamedLikeSecretsSecret(t *testing.T) {
	for _, name := range []string{"api-token", "password", "db_passwd", "apikey", "X-Api-Key", "client-secret", "credentials", "auth"} {
		if !IsSecretArg(name) {
			t.Errorf("IsSecretArg(%q) = false", name)
		}
	}
	for _, name := range []string{"namespace", "service", "threshold"} {
		if IsSecretArg(name) {
			t.Errorf("IsSecretArg(%q) = true", name)
		}
	}
	doc := mustParse(t, "args: [{name: api-token}, {name: ns}]\nmetrics: [{name: m, provider: {prometheus: {query: \"x > {{args.api-token}} + {{args.ns}}\"}}}]\n")
	_, errs := Compile(doc, map[string]string{"api-token": `s3cr3t"value`, "ns": `a"b`}, Builtin(noSources))
	if len(errs) != 2 || strings.Contains(formatErrors(errs), "s3cr3t") || !strings.Contains(formatErrors(errs), `("a\"b")`) {
		t.Errorf("problems: %v", errs)
	}
	compiled, errs := Compile(doc, map[string]string{"api-token": "42", "ns": "7"}, Builtin(noSources))
	if len(errs) > 0 || compiled.Args["api-token"] != "*****" || compiled.Args["ns"] != "7" {
		t.Errorf("args: %v %v", compiled, errs)
	}
}
