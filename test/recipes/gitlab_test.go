package recipes

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/test/internal/harness"
)

// glJob is what the tests read of a GitLab CI job, with GitLab's names.
type glJob struct {
	Stage        string            `yaml:"stage"`
	Image        string            `yaml:"image"`
	Timeout      string            `yaml:"timeout"`
	Variables    map[string]string `yaml:"variables"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
	AfterScript  []string          `yaml:"after_script"`
	Artifacts    struct {
		When     string   `yaml:"when"`
		ExposeAs string   `yaml:"expose_as"`
		Paths    []string `yaml:"paths"`
		Reports  struct {
			JUnit string `yaml:"junit"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

// glPipeline is a .gitlab-ci.yml: its global keys and its jobs.
type glPipeline struct {
	Stages    []string          `yaml:"stages"`
	Variables map[string]string `yaml:"variables"`
	Jobs      map[string]glJob  `yaml:",inline"`
}

// ciImage is canaryd's CI job image at the release the recipes pin: the
// release's binary on PATH, with a shell (the Dockerfile's stage ci).
const ciImage = "ghcr.io/canaryd/canaryd:" + harness.ReleaseVersion + "-ci"

// glRun is the outcome of a job: its exit code, its log, its directory.
type glRun struct {
	code    int
	output  string
	project string
}

// runGLJob runs a job as a GitLab runner's shell would: before_script then
// script, one shell, stopping at the first command that fails (sh -e; the
// images' shells are POSIX, busybox in curlimages/curl); then after_script,
// whatever happened, in a shell of its own whose outcome is not the job's.
// Variables are the pipeline's and the job's, then the project's CI/CD
// variables (values), which win as they do in GitLab. canaryd is on PATH
// in a job whose image is canaryd's CI image, the tree's binary standing
// in for the image's; in no other.
func runGLJob(t *testing.T, p glPipeline, name string, values map[string]string) glRun {
	t.Helper()
	job, ok := p.Jobs[name]
	if !ok {
		t.Fatalf("the pipeline has no job %q", name)
	}
	project := t.TempDir()
	path := basePath()
	if job.Image == ciImage {
		path = basePath(harness.CanarydDir(t))
	}
	env := map[string]string{
		"PATH":            path,
		"HOME":            t.TempDir(),
		"CI":              "true",
		"GITLAB_CI":       "true",
		"CI_PROJECT_DIR":  project,
		"CI_JOB_NAME":     name,
		"CI_PIPELINE_SRC": "web",
	}
	for _, level := range []map[string]string{p.Variables, job.Variables, values} {
		for k, v := range level {
			env[k] = v
		}
	}
	lines := append(append([]string(nil), job.BeforeScript...), job.Script...)
	for _, line := range lines {
		if strings.Contains(line, "go install") || strings.Contains(line, "go build") {
			t.Fatalf("job %s builds canaryd (%q): a recipe runs a release", name, line)
		}
	}
	script := strings.Join(lines, "\n") + "\n"
	prepareWorkspace(t, script, project)
	res := runShell(t, []string{"sh", "-e"}, script, project, env)
	if len(job.AfterScript) > 0 {
		after := runShell(t, []string{"sh", "-e"}, strings.Join(job.AfterScript, "\n")+"\n", project, env)
		res.output += after.output
	}
	return glRun{code: res.code, output: res.output, project: project}
}

// TestGitLabCI runs both jobs of the .gitlab-ci.yml: the curl gate against
// canaryd serve and `canaryd run` in the job.
func TestGitLabCI(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl")
	var p glPipeline
	strictYAML(t, "gitlab-ci/.gitlab-ci.yml", readExample(t, "gitlab-ci/.gitlab-ci.yml"), &p)
	if p.Variables["NAMESPACE"] != exampleNamespace {
		t.Errorf("NAMESPACE = %q, want %q", p.Variables["NAMESPACE"], exampleNamespace)
	}
	for name, job := range p.Jobs {
		if job.Stage == "" || !contains(p.Stages, job.Stage) {
			t.Errorf("job %s: stage %q is not one of the stages %v", name, job.Stage, p.Stages)
		}
	}
	if img := p.Jobs["canary-analysis"].Image; img != ciImage {
		t.Errorf("canary-analysis runs in %s, want canaryd's CI image %s", img, ciImage)
	}
	w := newWorld(t)
	values := func(ns, token string) map[string]string {
		return map[string]string{
			"CANARYD_URL":    w.authed.URL,
			"CANARYD_TOKEN":  token,
			"PROMETHEUS_URL": w.prom.URL,
			"NAMESPACE":      ns,
		}
	}

	for _, tc := range []struct {
		name      string
		namespace string
		token     string
		wantCode  int    // curl exits 22 on an HTTP status of 400 or more
		wantLog   string // what curl --fail-with-body prints of canaryd's answer
		// wantPhase is the phase of the report kept; "" when no analysis
		// ran, and none is kept
		wantPhase string
	}{
		{"gate/echo-good", harness.EchoGood, w.authed.Token, 0, `"phase":"Successful"`, "Successful"},
		{"gate/echo-bad", harness.EchoBad, w.authed.Token, 22, `"phase":"Failed"`, "Failed"},
		{"gate/wrong token", harness.EchoGood, "not-" + w.authed.Token, 22, `"status":401`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runGLJob(t, p, "canary-gate", values(tc.namespace, tc.token))
			if got.code != tc.wantCode || !strings.Contains(got.output, tc.wantLog) {
				t.Errorf("exit %d, want %d with %s in the log\nlog:\n%s\n%s", got.code, tc.wantCode, tc.wantLog, got.output, w.logs())
			}
			checkGLArtifacts(t, p.Jobs["canary-gate"], got.project, tc.wantPhase)
		})
	}
	for _, tc := range []struct {
		name      string
		namespace string
		wantCode  int
		wantPhase string
	}{
		{"analysis/echo-good", harness.EchoGood, 0, "Successful"},
		{"analysis/echo-bad", harness.EchoBad, 1, "Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runGLJob(t, p, "canary-analysis", values(tc.namespace, ""))
			if got.code != tc.wantCode {
				t.Errorf("exit %d, want %d\nlog:\n%s", got.code, tc.wantCode, got.output)
			}
			checkGLArtifacts(t, p.Jobs["canary-analysis"], got.project, tc.wantPhase)
			checkJUnit(t, filepath.Join(got.project, p.Jobs["canary-analysis"].Artifacts.Reports.JUnit), tc.wantPhase)
		})
	}
	t.Run("gate/prometheus down", func(t *testing.T) {
		w.prom.Stop()
		got := runGLJob(t, p, "canary-gate", values(harness.EchoGood, w.authed.Token))
		if got.code != 22 || !strings.Contains(got.output, `"phase":"Error"`) {
			t.Errorf("exit %d, want 22 with phase Error in the log\nlog:\n%s", got.code, got.output)
		}
		checkGLArtifacts(t, p.Jobs["canary-gate"], got.project, "Error")
	})
}

// checkGLArtifacts checks the artifacts a job keeps, whatever its outcome:
// the report of an analysis that ended in phase; none when phase is ""
// (no analysis ran).
func checkGLArtifacts(t *testing.T, job glJob, project, phase string) {
	t.Helper()
	artifacts := job.Artifacts
	if artifacts.When != "always" {
		t.Errorf("artifacts:when %q: the report of a failed canary must be kept too", artifacts.When)
	}
	if len(artifacts.Paths) != 1 {
		t.Fatalf("artifacts:paths %v, want the report", artifacts.Paths)
	}
	checkKeptReport(t, filepath.Join(project, artifacts.Paths[0]), phase)
}

// checkJUnit checks that path is canaryd's JUnit XML of an analysis that
// ended in phase: one test case per metric, failed when the analysis
// failed.
func checkJUnit(t *testing.T, path, phase string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("artifacts:reports:junit: %v", err)
	}
	var suites struct {
		XMLName  xml.Name `xml:"testsuites"`
		Failures int      `xml:"failures,attr"`
		Suites   []struct {
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatalf("%s is not JUnit XML: %v\n%s", path, err, b)
	}
	if len(suites.Suites) != 1 || len(suites.Suites[0].Cases) != 1 || suites.Suites[0].Cases[0].Name != "non-5xx-rate" {
		t.Fatalf("%s: want one suite with one test case, non-5xx-rate:\n%s", path, b)
	}
	s := suites.Suites[0]
	gotPhase := ""
	for _, p := range s.Properties {
		if p.Name == "phase" {
			gotPhase = p.Value
		}
	}
	if gotPhase != phase {
		t.Errorf("%s: property phase = %q, want %q", path, gotPhase, phase)
	}
	if failed := s.Cases[0].Failure != nil; failed != (phase == "Failed") || (suites.Failures > 0) != failed {
		t.Errorf("%s: the test case failed = %v (failures=%d), want %v for a %s analysis", path, failed, suites.Failures, phase == "Failed", phase)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
