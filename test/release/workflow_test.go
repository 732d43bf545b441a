package release

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/test/internal/harness"
)

// actionlint is the workflow linter, run from the module proxy at a fixed
// version as the Makefile runs staticcheck. It checks the workflows'
// syntax, expressions, the actions' inputs, and, when shellcheck is on
// PATH, the run: scripts.
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

// workflows are the GitHub Actions workflows actionlint checks: the
// release's, and the recipe users copy.
var workflows = []string{
	".github/workflows/release.yml",
	"deploy/examples/github-actions/canary-gate.yml",
}

// TestActionlint runs actionlint on the workflows.
func TestActionlint(t *testing.T) {
	root := harness.RepoRoot(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"run", actionlint, "-no-color"}, workflows...)
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = root
	// actionlint is its own module: the repository's go.work or
	// GOFLAGS must not change how it builds.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go run %s %s: %v\n%s", actionlint, strings.Join(workflows, " "), err, out)
	}
}

// workflow is what the test reads of release.yml, with GitHub's names;
// unknown fields are refused, so a misspelt key fails here.
type workflow struct {
	Name string `yaml:"name"`
	On   struct {
		Push struct {
			Tags     []string `yaml:"tags"`
			Branches []string `yaml:"branches"`
		} `yaml:"push"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Defaults    struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Jobs map[string]struct {
		RunsOn         string            `yaml:"runs-on"`
		TimeoutMinutes int               `yaml:"timeout-minutes"`
		Permissions    map[string]string `yaml:"permissions"`
		Env            map[string]string `yaml:"env"`
		Steps          []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
			Env  map[string]string `yaml:"env"`
			Run  string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

var (
	// pinned: a version tag (v4, v4.2, v4.2.1) or a commit.
	pinned   = regexp.MustCompile(`^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$`)
	makeCall = regexp.MustCompile(`(?m)(?:^|[;&|]\s*)make\s+([\w-]+)`)
	target   = regexp.MustCompile(`(?m)^([\w-]+):`)
	dockerT  = regexp.MustCompile(`--target\s+(\w+)`)
	stageAs  = regexp.MustCompile(`(?mi)^FROM\s+.*\s+AS\s+(\w+)\s*$`)
)

// TestReleaseWorkflow checks what release.yml must do and may not: run on
// a tag v* alone, with write access to the release and the packages and
// nothing else, with actions pinned; run make targets that exist and
// Dockerfile stages that exist; publish the archives, SBOMs and checksums
// and both images for both architectures.
func TestReleaseWorkflow(t *testing.T) {
	root := harness.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("release.yml: %v", err)
	}

	if !slices.Equal(wf.On.Push.Tags, []string{"v*"}) || len(wf.On.Push.Branches) > 0 {
		t.Errorf("on.push: tags %v, branches %v; want tags [v*] alone", wf.On.Push.Tags, wf.On.Push.Branches)
	}

	// Permissions: none at the top; each job's no more than contents:
	// write and packages: write between them.
	allowed := map[string]bool{"contents:read": true, "contents:write": true, "packages:write": true}
	if len(wf.Permissions) != 0 {
		t.Errorf("permissions %v at the top: give each job its own, none by default (permissions: {})", wf.Permissions)
	}
	granted := map[string]bool{}
	for name, job := range wf.Jobs {
		if job.Permissions == nil {
			t.Errorf("job %s has no permissions: it would get the repository's default", name)
		}
		for scope, level := range job.Permissions {
			if !allowed[scope+":"+level] {
				t.Errorf("job %s: permissions %s: %s; the release needs contents: write and packages: write alone", name, scope, level)
			}
			granted[scope+":"+level] = true
		}
		if job.TimeoutMinutes == 0 {
			t.Errorf("job %s has no timeout-minutes", name)
		}
	}
	for _, p := range []string{"contents:write", "packages:write"} {
		if !granted[p] {
			t.Errorf("no job has %s, which the release needs", p)
		}
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range target.FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]bool{}
	for _, m := range stageAs.FindAllStringSubmatch(string(dockerfile), -1) {
		stages[m[1]] = true
	}

	var scripts strings.Builder
	var fullHistory bool
	for name, job := range wf.Jobs {
		for i, step := range job.Steps {
			if step.Uses != "" && !pinned.MatchString(step.Uses) {
				t.Errorf("job %s step %d: uses %s: pin it to a version tag (@v4) or a commit", name, i, step.Uses)
			}
			if strings.HasPrefix(step.Uses, "actions/checkout@") && step.With["fetch-depth"] == "0" {
				fullHistory = true
			}
			for _, m := range makeCall.FindAllStringSubmatch(step.Run, -1) {
				if !targets[m[1]] {
					t.Errorf("job %s step %d runs make %s, which the Makefile has no target for", name, i, m[1])
				}
			}
			for _, m := range dockerT.FindAllStringSubmatch(step.Run, -1) {
				if !stages[m[1]] {
					t.Errorf("job %s step %d builds --target %s, which the Dockerfile has no stage for", name, i, m[1])
				}
			}
			scripts.WriteString(step.Run + "\n")
		}
	}
	if !fullHistory {
		t.Errorf("no checkout with fetch-depth: 0: make dist's version is git describe --tags, which needs the tags")
	}
	all := scripts.String()
	for _, want := range []string{
		"make dist",
		"sha256sum -c SHA256SUMS",
		"gh release create",
		"dist/*.tar.gz dist/*.spdx.json dist/SHA256SUMS",
		"--platform linux/amd64,linux/arm64",
		"--target ci",
		"--push",
		`--build-arg VERSION="$GITHUB_REF_NAME"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("release.yml runs no %q", want)
		}
	}
}
