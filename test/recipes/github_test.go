package recipes

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/test/internal/harness"
)

// ghWorkflow is what the tests read of a GitHub Actions workflow, with
// GitHub's field names; decoding refuses any other field, so a misspelt
// key fails here rather than being ignored.
type ghWorkflow struct {
	Name string `yaml:"name"`
	On   struct {
		WorkflowDispatch struct {
			Inputs map[string]struct {
				Description string `yaml:"description"`
				Required    bool   `yaml:"required"`
				Default     string `yaml:"default"`
			} `yaml:"inputs"`
		} `yaml:"workflow_dispatch"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Defaults    struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]ghJob  `yaml:"jobs"`
}

type ghJob struct {
	RunsOn         string            `yaml:"runs-on"`
	TimeoutMinutes int               `yaml:"timeout-minutes"`
	Env            map[string]string `yaml:"env"`
	Steps          []ghStep          `yaml:"steps"`
}

type ghStep struct {
	Name string            `yaml:"name"`
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

// ghActions are the actions the workflow may use; they prepare the job
// (a checkout) or keep its files, and are not run by the test. No Go:
// the recipes run a release of canaryd, never build it.
var ghActions = map[string]bool{
	"actions/checkout@v4":        true,
	"actions/upload-artifact@v4": true,
}

// ghExpression is GitHub's ${{ … }}.
var ghExpression = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// strictYAML decodes one YAML document into out, refusing unknown fields.
func strictYAML(t *testing.T, name string, b []byte, out any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// ghRun is the outcome of a job: the exit code of its first failing step
// (0 when none failed), the step outputs, the job summary
// ($GITHUB_STEP_SUMMARY), the paths its upload-artifact steps keep, and
// the job's workspace.
type ghRun struct {
	code      int
	output    string
	outputs   map[string]string
	summary   string
	artifacts []string
	workspace string
}

// runGHJob runs a job's steps as a GitHub runner would with `shell: bash`
// (bash --noprofile --norc -eo pipefail), stopping at the first failure.
// values are the expressions' values: vars, secrets and inputs. canaryd is
// not on PATH: a job that runs it installs it, from releases, the URL that
// stands for canaryd's GitHub releases (harness.ServeRelease), or ""
// when the job downloads nothing. A directory a step appends to
// $GITHUB_PATH is on the PATH of the steps after it, first, as on GitHub.
func runGHJob(t *testing.T, wf ghWorkflow, name string, values map[string]string, releases string) ghRun {
	t.Helper()
	job, ok := wf.Jobs[name]
	if !ok {
		t.Fatalf("the workflow has no job %q", name)
	}
	if wf.Defaults.Run.Shell != "bash" {
		t.Fatalf("defaults.run.shell = %q: the test runs steps as GitHub runs `shell: bash`", wf.Defaults.Run.Shell)
	}
	tmp := t.TempDir()
	workspace := filepath.Join(tmp, "workspace")
	home := filepath.Join(tmp, "home")
	runnerTemp := filepath.Join(tmp, "runner_temp")
	for _, d := range []string{workspace, home, runnerTemp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	outputs := filepath.Join(tmp, "github_output")
	summary := filepath.Join(tmp, "step_summary")
	githubPath := filepath.Join(tmp, "github_path")
	env := map[string]string{
		"PATH":                basePath(),
		"HOME":                home,
		"RUNNER_TEMP":         runnerTemp,
		"GITHUB_PATH":         githubPath,
		"CI":                  "true",
		"GITHUB_ACTIONS":      "true",
		"GITHUB_WORKSPACE":    workspace,
		"GITHUB_OUTPUT":       outputs,
		"GITHUB_STEP_SUMMARY": summary,
	}
	for _, level := range []map[string]string{wf.Env, job.Env} {
		for k, v := range level {
			env[k] = substitute(t, ghExpression, v, values)
		}
	}
	run := ghRun{workspace: workspace, outputs: map[string]string{}}
	for i, step := range job.Steps {
		switch {
		case step.Uses != "":
			if !ghActions[step.Uses] {
				t.Fatalf("step %d uses %s, which the test does not know", i, step.Uses)
			}
			// An upload after a failed step runs only with if: always().
			if strings.HasPrefix(step.Uses, "actions/upload-artifact@") && (run.code == 0 || step.If == "always()") {
				run.artifacts = append(run.artifacts, step.With["path"])
			}
			continue
		case strings.Contains(step.Run, "go install") || strings.Contains(step.Run, "go build"):
			t.Fatalf("step %d builds canaryd (%q): a recipe installs a release", i, step.Run)
		}
		stepEnv := map[string]string{}
		for k, v := range env {
			stepEnv[k] = v
		}
		if b, err := os.ReadFile(githubPath); err == nil {
			for _, dir := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				stepEnv["PATH"] = dir + string(os.PathListSeparator) + stepEnv["PATH"]
			}
		}
		for k, v := range step.Env {
			stepEnv[k] = substitute(t, ghExpression, v, values)
		}
		if ghExpression.MatchString(step.Run) {
			t.Fatalf("step %q puts an expression in its script; pass it through env", step.Name)
		}
		prepareWorkspace(t, step.Run, workspace)
		if run.code != 0 {
			continue // a step after a failure runs only with if: always()
		}
		script := step.Run
		if strings.Contains(script, harness.ReleasesURL) {
			if releases == "" {
				t.Fatalf("step %q downloads from %s, which this run of the job does not serve", step.Name, harness.ReleasesURL)
			}
			script = strings.ReplaceAll(script, harness.ReleasesURL, releases)
		}
		res := runShell(t, []string{"bash", "--noprofile", "--norc", "-eo", "pipefail"}, script, workspace, stepEnv)
		run.output += res.output
		if res.code != 0 {
			run.code = res.code
		}
	}
	if b, err := os.ReadFile(summary); err == nil {
		run.summary = string(b)
	}
	if b, err := os.ReadFile(outputs); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				run.outputs[k] = v
			}
		}
	}
	return run
}

// canarydRunFile finds the -f FILE of a `canaryd run` line.
var canarydRunFile = regexp.MustCompile(`canaryd run -f (\S+)`)

// prepareWorkspace stands in for the checkout of the user's repository: a
// script that runs `canaryd run -f FILE` finds FILE, the base's
// success-rate template (shortened like every template the tests
// serve), in its working directory.
func prepareWorkspace(t *testing.T, script, workspace string) {
	t.Helper()
	m := canarydRunFile.FindStringSubmatch(script)
	if m == nil {
		return
	}
	if filepath.Base(m[1]) != "success-rate.yaml" {
		t.Fatalf("canaryd run -f %s: the tests provide success-rate.yaml", m[1])
	}
	b, err := os.ReadFile(filepath.Join(harness.Templates(t), "success-rate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(workspace, m[1])
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkKeptReport checks what a job keeps at path: the HTML report of an
// analysis that ended in phase (checkReport), or no file at all when phase
// is "" (no analysis ran).
func checkKeptReport(t *testing.T, path, phase string) {
	t.Helper()
	if phase == "" {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s exists, but no analysis ran", filepath.Base(path))
		}
		return
	}
	checkReport(t, path, phase)
}

// checkReport checks that path is canaryd's HTML report of an analysis
// that ended in phase, whole and self-contained.
func checkReport(t *testing.T, path, phase string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the report: %v", err)
	}
	html := string(b)
	if !strings.HasPrefix(strings.ToLower(html), "<!doctype html") || !strings.Contains(html, "</html>") {
		t.Errorf("%s is not a whole HTML document (%d bytes)", path, len(b))
	}
	if !strings.Contains(html, phase) || !strings.Contains(html, "non-5xx-rate") {
		t.Errorf("%s does not name the phase %s and the metric non-5xx-rate", path, phase)
	}
	for _, external := range []string{`src="http`, `@import`} {
		if strings.Contains(html, external) {
			t.Errorf("%s loads %s: a report must open from disk", path, external)
		}
	}
}

// TestGitHubActions runs both jobs of the workflow: the gate job's curl
// step against canaryd serve, the analysis job's `canaryd run` step in the
// job itself.
func TestGitHubActions(t *testing.T) {
	t.Parallel()
	needTools(t, "bash", "curl", "jq")
	var wf ghWorkflow
	strictYAML(t, "github-actions/canary-gate.yml", readExample(t, "github-actions/canary-gate.yml"), &wf)
	if d := wf.On.WorkflowDispatch.Inputs["namespace"].Default; d != exampleNamespace {
		t.Errorf("input namespace defaults to %q, want %q", d, exampleNamespace)
	}
	w := newWorld(t)
	values := func(ns, token string) map[string]string {
		return map[string]string{
			"vars.CANARYD_URL":      w.authed.URL,
			"secrets.CANARYD_TOKEN": token,
			"vars.PROMETHEUS_URL":   w.prom.URL,
			"inputs.namespace":      ns,
		}
	}

	for _, tc := range []struct {
		name      string
		namespace string
		token     string
		wantCode  int // curl exits 22 on an HTTP status of 400 or more
		wantPhase string
		// wantReport: the analysis ran, and its report is kept
		wantReport bool
	}{
		{"gate/echo-good", harness.EchoGood, w.authed.Token, 0, "Successful", true},
		{"gate/echo-bad", harness.EchoBad, w.authed.Token, 22, "Failed", true},
		{"gate/wrong token", harness.EchoGood, "not-" + w.authed.Token, 22, "Error", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runGHJob(t, wf, "gate", values(tc.namespace, tc.token), "")
			if got.code != tc.wantCode || got.outputs["phase"] != tc.wantPhase {
				t.Errorf("exit %d, phase=%q; want exit %d, phase=%q\noutput:\n%s\n%s",
					got.code, got.outputs["phase"], tc.wantCode, tc.wantPhase, got.output, w.logs())
			}
			checkGateReport(t, got.workspace, got.artifacts, tc.wantPhase, tc.wantReport)
		})
	}
	for _, tc := range []struct {
		name      string
		namespace string
		wantCode  int // canaryd run: 0 Successful, 1 Failed
		wantPhase string
	}{
		{"analysis/echo-good", harness.EchoGood, 0, "Successful"},
		{"analysis/echo-bad", harness.EchoBad, 1, "Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runGHJob(t, wf, "analysis", values(tc.namespace, ""), harness.ServeRelease(t))
			if got.code != tc.wantCode {
				t.Errorf("exit %d, want %d\noutput:\n%s", got.code, tc.wantCode, got.output)
			}
			// The job ran the release it pins, which it downloaded and
			// checked.
			if !strings.Contains(got.output, "canaryd_"+harness.ReleaseVersion+"_linux_") || !strings.Contains(got.output, ".tar.gz: OK") ||
				!strings.Contains(got.output, "canaryd "+harness.ReleaseVersion+"\n") {
				t.Errorf("the job did not check and run canaryd %s from the release:\n%s", harness.ReleaseVersion, got.output)
			}
			// The job summary: the Markdown verdict, its reason and the
			// table of metrics.
			if !strings.Contains(got.summary, "canaryd analysis: "+tc.wantPhase+"\n") || !strings.Contains(got.summary, "| non-5xx-rate |") {
				t.Errorf("the job summary has no %s verdict with the metric's row:\n%s", tc.wantPhase, got.summary)
			}
			// The report is kept, whatever the verdict.
			if len(got.artifacts) != 1 {
				t.Fatalf("artifacts kept: %v, want the report", got.artifacts)
			}
			checkReport(t, filepath.Join(got.workspace, got.artifacts[0]), tc.wantPhase)
		})
	}
	t.Run("analysis/damaged download", func(t *testing.T) {
		// The archive differs from the one SHA256SUMS sums: the job
		// stops before it unpacks or runs anything.
		release, damaged := harness.Release(t), t.TempDir()
		entries, err := os.ReadDir(release)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(release, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(e.Name(), ".tar.gz") {
				b = append(b, 0)
			}
			if err := os.WriteFile(filepath.Join(damaged, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got := runGHJob(t, wf, "analysis", values(harness.EchoGood, ""), harness.ServeReleaseDir(t, damaged))
		if got.code == 0 || !strings.Contains(got.output, ".tar.gz: FAILED") || strings.Contains(got.output, "canaryd "+harness.ReleaseVersion) || got.summary != "" {
			t.Errorf("exit %d; want the install step to fail sha256sum -c before canaryd runs\noutput:\n%s\nsummary:\n%s", got.code, got.output, got.summary)
		}
	})
	t.Run("gate/prometheus down", func(t *testing.T) {
		w.prom.Stop()
		got := runGHJob(t, wf, "gate", values(harness.EchoGood, w.authed.Token), "")
		if got.code != 22 || got.outputs["phase"] != "Error" {
			t.Errorf("exit %d, phase=%q; want exit 22, phase=\"Error\"\noutput:\n%s", got.code, got.outputs["phase"], got.output)
		}
		checkGateReport(t, got.workspace, got.artifacts, "Error", true)
	})
	t.Run("gate/canaryd unreachable", func(t *testing.T) {
		v := values(harness.EchoGood, w.authed.Token)
		v["vars.CANARYD_URL"] = "http://127.0.0.1:1"
		got := runGHJob(t, wf, "gate", v, "")
		// curl's own exit code: 7, could not connect.
		if got.code != 7 || got.outputs["phase"] != "Error" {
			t.Errorf("exit %d, phase=%q; want exit 7, phase=\"Error\"\noutput:\n%s", got.code, got.outputs["phase"], got.output)
		}
		checkGateReport(t, got.workspace, got.artifacts, "", false)
	})
}

// checkGateReport checks what a gate job keeps: the report of the gate's
// analysis, fetched from its Location, when the analysis ran; nothing
// otherwise (a refused token has no analysis), the job's outcome the
// verdict's either way.
func checkGateReport(t *testing.T, dir string, artifacts []string, phase string, want bool) {
	t.Helper()
	if len(artifacts) != 1 {
		t.Fatalf("artifacts kept: %v, want the report (if: always())", artifacts)
	}
	if !want {
		phase = ""
	}
	checkKeptReport(t, filepath.Join(dir, artifacts[0]), phase)
}
