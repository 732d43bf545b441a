package main

import (
	"strings"
	"testing"
)

// TestValidateFilesAndDirectories runs validate over testdata/validate:
// several -f, directories read as serve --templates reads them, files of
// several documents; every problem is printed with its file and line.
func TestValidateFilesAndDirectories(t *testing.T) {
	good := writeSpec(t, "good.yaml", "metrics: [{name: up, successCondition: 'result[0] == 1', provider: {prometheus: {query: min(up)}}}]\n")
	bad := writeSpec(t, "bad.yaml", "metrics: [{name: up, successCondition: 'result[0] ==', provider: {prometheus: {query: min(up)}}}]\n")
	needsArg := writeSpec(t, "needs-arg.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisRun\nmetadata: {name: needs-arg}\nspec:\n  args:\n    - name: namespace\n"+
		"  metrics: [{name: up, successCondition: 'result[0] == 1', provider: {prometheus: {query: 'min(up{namespace=\"{{args.namespace}}\"})'}}}]\n")
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout []string
		wantStderr []string
		notStdout  []string
	}{
		{
			name:     "a directory of good templates",
			args:     []string{"-f", "testdata/validate/good"},
			wantCode: 0,
			wantStdout: []string{
				"testdata/validate/good/success-rate.yaml:3: valid: AnalysisTemplate success-rate (arguments a request must give: namespace)\n",
				"testdata/validate/good/two-templates.yaml:2: valid: AnalysisTemplate error-rate: 1 metric(s): errors (5 times, 1m0s apart)\n",
				"testdata/validate/good/two-templates.yaml:16: valid: ClusterAnalysisTemplate up: 1 metric(s): up (once)\n",
				"testdata/validate/good/two-templates.yaml:28: skipped: kind AnalysisRun",
			},
		},
		{
			name:     "an argument's value is checked with the template",
			args:     []string{"-f", "testdata/validate/good/success-rate.yaml", "--arg", "namespace=echo"},
			wantCode: 0,
			wantStdout: []string{
				"testdata/validate/good/success-rate.yaml:3: valid: AnalysisTemplate success-rate: 1 metric(s): non-5xx-rate (3 times, 30s apart)\n",
			},
		},
		{
			name:       "an AnalysisRun's missing argument: the flag that gives it",
			args:       []string{"-f", needsArg},
			wantCode:   exitUsage,
			wantStderr: []string{`:6: args[0].value: argument "namespace" was not supplied: give it with --arg namespace=…` + "\n"},
		},
		{
			name:     "a directory of good and bad files: each problem with its file and line",
			args:     []string{"-f", "testdata/validate/mixed"},
			wantCode: exitUsage,
			wantStdout: []string{
				"testdata/validate/mixed/ok.json:1: valid: AnalysisTemplate ok",
				"testdata/validate/mixed/some-bad.yaml:2: valid: AnalysisTemplate fine",
			},
			wantStderr: []string{
				"testdata/validate/mixed/bare-spec.yaml:3: kind: a bare spec cannot be a named template",
				// Each on its field's line: a field left out on its metric's.
				"testdata/validate/mixed/some-bad.yaml:20: metrics[0].interval: interval must be specified when count > 1\n",
				"testdata/validate/mixed/some-bad.yaml:22: metrics[0].successCondition: ",
				`testdata/validate/mixed/taken.yaml:2: metadata.name: template "ok" is already defined in ok.json (line 1)`,
				"canaryd validate: 4 problem(s) in 3 of 5 document(s)\n",
			},
			notStdout: []string{"README"},
		},
		{
			name:       "several -f: every one is checked",
			args:       []string{"-f", bad, "-f", good, "-f", "testdata/validate/good"},
			wantCode:   exitUsage,
			wantStdout: []string{good + ": valid: 1 metric(s): up (once)\n", "testdata/validate/good/success-rate.yaml:3: valid"},
			wantStderr: []string{bad + ":1: metrics[0].successCondition: ", "canaryd validate: 1 problem(s) in 1 of 5 document(s)\n"},
		},
		{
			name:       "good files and standard input",
			args:       []string{"-f", good, "-f", "-"},
			stdin:      "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: x}\nspec: {metrics: [{name: up, provider: {prometheus: {query: up}}}]}\n---\napiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: z}\nspec: {metrics: [{name: up, provider: {prometheus: {query: up}}}]}\n",
			wantCode:   0,
			wantStdout: []string{good + ": valid", "<stdin>:1: valid: AnalysisTemplate x", "<stdin>:6: valid: AnalysisTemplate z"},
		},
		{
			name:       "a path that does not exist",
			args:       []string{"-f", good, "-f", "testdata/validate/nowhere.yaml"},
			wantCode:   exitUsage,
			wantStdout: []string{good + ": valid"},
			wantStderr: []string{"testdata/validate/nowhere.yaml: no such file or directory\n"},
		},
		{
			name:       "an argument no document declares",
			args:       []string{"-f", "testdata/validate/good", "--arg", "namespce=echo"},
			wantCode:   exitUsage,
			wantStderr: []string{`--arg namespce: no document declares an argument "namespce"`},
		},
		{
			name:     "every problem at once, each on its line, the arguments left without values",
			args:     []string{"-f", "testdata/validate/faults"},
			wantCode: exitUsage,
			wantStderr: []string{
				"testdata/validate/faults/five-faults.yaml:12: dryRun[0].metricName: invalid regular expression",
				"testdata/validate/faults/five-faults.yaml:15: metrics[0].interval: must be a string, got a number (quote the value in YAML)\n",
				"testdata/validate/faults/five-faults.yaml:17: metrics[0].successCondition: unknown name reslt",
				"testdata/validate/faults/five-faults.yaml:20: metrics[0].provider.prometheus.query: failed to resolve {{args.namespace}}\n",
				"testdata/validate/faults/five-faults.yaml:20: metrics[0].provider.prometheus.query: the query does not parse as PromQL: 3:1: parse error: unclosed left parenthesis",
				"canaryd validate: 5 problem(s) in 1 of 1 document(s)\n",
			},
		},
		{
			name:       "standard input twice",
			args:       []string{"-f", "-", "-f", "-"},
			wantCode:   exitUsage,
			wantStderr: []string{"standard input can be read once"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, tt.stdin, append([]string{"validate"}, tt.args...)...)
			if got.code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", got.code, tt.wantCode, got.stdout, got.stderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, got.stdout)
				}
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
				}
			}
			for _, not := range tt.notStdout {
				if strings.Contains(got.stdout+got.stderr, not) {
					t.Errorf("the output mentions %q:\n%s%s", not, got.stdout, got.stderr)
				}
			}
		})
	}
}

// TestRunRefusesAQueryThatDoesNotParse: run refuses a query that
// Prometheus' parser refuses, with its position, before anything is sent.
func TestRunRefusesAQueryThatDoesNotParse(t *testing.T) {
	spec := writeSpec(t, "syntax.yaml", "metrics:\n- name: broken\n  provider:\n    prometheus:\n      query: sum(rate(istio_requests_total[1m])\n")
	got := runCLI(t, "", "run", "-f", spec, "--prometheus-url", "http://127.0.0.1:9")
	const want = "metrics[0].provider.prometheus.query: the query does not parse as PromQL: 1:35: parse error: unclosed left parenthesis"
	if got.code != exitUsage || !strings.Contains(got.stderr, want) {
		t.Errorf("exit code %d, want %d; stderr lacks %q:\n%s", got.code, exitUsage, want, got.stderr)
	}
}
