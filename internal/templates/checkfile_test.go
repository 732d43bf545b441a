package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestCheckFile checks a file of several documents as Load would load it:
// a template, a broken one, one of another kind and a name given twice.
func TestCheckFile(t *testing.T) {
	const file = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: good}
spec:
  args: [{name: interval}]
  metrics:
    - name: m
      interval: "{{args.interval}}"
      count: 2
      provider: {prometheus: {query: up}}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: broken}
spec:
  metrics:
    - name: m
      count: 3
      provider: {prometheus: {query: up}}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisRun
metadata: {name: a-run}
spec:
  metrics: [{name: m, provider: {prometheus: {query: up}}}]
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: good}
spec:
  metrics: [{name: m, provider: {prometheus: {query: up}}}]
`
	got := CheckFile("all.yaml", []byte(file), CheckOptions{Providers: testProviders})
	if len(got) != 4 {
		t.Fatalf("%d documents, want 4: %+v", len(got), got)
	}
	want := []struct {
		line    int
		name    string
		loaded  bool
		skipped bool
		err     string
	}{
		{1, "good", true, false, ""},
		{12, "broken", false, false, "metrics[0].interval: interval must be specified when count > 1"},
		{21, "", false, true, ""},
		{27, "good", false, false, `metadata.name: template "good" is already defined on line 1 of this file`},
	}
	for i, w := range want {
		c := got[i]
		if c.File != "all.yaml" || c.Line != w.line || c.Name != w.name || (c.Template != nil) != w.loaded || c.Skipped != w.skipped {
			t.Errorf("document %d: %+v, want line %d name %q loaded %v skipped %v", i+1, c, w.line, w.name, w.loaded, w.skipped)
		}
		if text := errorsText(c.Errors); !strings.Contains(text, w.err) || (w.err == "") != (text == "") {
			t.Errorf("document %d: errors %q, want %q", i+1, text, w.err)
		}
	}
	if got[2].Kind != spec.KindAnalysisRun {
		t.Errorf("skipped kind %q, want AnalysisRun", got[2].Kind)
	}

	// An argument given a value is checked with it, not with a
	// placeholder; a name the template does not declare is ignored.
	got = CheckFile("all.yaml", []byte(file), CheckOptions{Providers: testProviders, Args: map[string]string{"interval": "soon", "other": "x"}})
	if text := errorsText(got[0].Errors); !strings.Contains(text, "metrics[0].interval") {
		t.Errorf("with interval=soon: errors %q, want one on metrics[0].interval", text)
	}
	got = CheckFile("all.yaml", []byte(file), CheckOptions{Providers: testProviders, Args: map[string]string{"interval": "1m"}})
	if got[0].Template == nil {
		t.Errorf("with interval=1m: %v, want it loaded", got[0].Errors)
	}

	// The Check callback sees the document, as Load's does.
	calls := 0
	CheckFile("all.yaml", []byte(file), CheckOptions{Providers: testProviders, Check: func(*spec.Document) []api.FieldError { calls++; return nil }})
	if calls != 3 {
		t.Errorf("Check called %d times, want 3 (every template that parses)", calls)
	}
}

// TestCheckDir checks a directory as Load reads it: only template files,
// a name an earlier file holds refused, an unreadable file reported.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.yaml":        fixture(t, "success-rate.yaml"),
		"b.yml":         fixture(t, "success-rate.yaml"),
		"c.json":        `{"metrics": []}`,
		"notes.txt":     "not read",
		".hidden.yaml":  "not read",
		"sub/d.yaml":    "not read",
		"latency.yaml":  fixture(t, "latency-p99.yaml"),
		"broken.yaml":   "metrics: [",
		"z-empty.yaml":  "# nothing\n",
		"z-other.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"z-second.yaml": "---\n",
	})
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	got, err := CheckDir(dir, CheckOptions{Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got {
		line := c.File + " " + c.Name
		switch {
		case c.Template != nil:
			line += " ok"
		case c.Skipped:
			line += " skipped " + c.Kind
		default:
			line += " " + errorsText(c.Errors)
		}
		lines = append(lines, line)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"a.yaml success-rate ok",
		`b.yml success-rate metadata.name: template "success-rate" is already defined in a.yaml (line 7)`,
		"broken.yaml  body: invalid YAML",
		"c.json  kind: a bare spec cannot be a named template",
		"dangling.yaml  body: cannot read the file: it is a symbolic link to nothing",
		"latency.yaml latency-p99 ok",
		"z-other.yaml  skipped ConfigMap",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("CheckDir lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "notes") || strings.Contains(text, "hidden") || strings.Contains(text, "d.yaml") {
		t.Errorf("CheckDir read a file Load does not:\n%s", text)
	}
	if len(got) != 7 {
		t.Errorf("%d entries, want 7:\n%s", len(got), text)
	}

	if _, err := CheckDir(filepath.Join(dir, "nope"), CheckOptions{Providers: testProviders}); err == nil {
		t.Error("CheckDir of a missing directory: no error")
	}
}

func errorsText(errs []api.FieldError) string {
	var parts []string
	for _, e := range errs {
		parts = append(parts, e.Field+": "+e.Message)
	}
	return strings.Join(parts, "; ")
}

// TestCheckFileEveryProblem: a typo does not hide the other problems of
// its document, and a document of another kind with a typo is not skipped
// silently.
func TestCheckFileEveryProblem(t *testing.T) {
	const file = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  metrics:
    - name: m
      count: 3
      failureLimt: 1
      successCondition: result[0] >=
      provider: {prometheus: {query: up}}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisRun
metadata: {name: r}
spec:
  metrics: [{name: m, provider: {prometheus: {query: up, adress: x}}}]
`
	got := CheckFile("t.yaml", []byte(file), CheckOptions{Providers: testProviders})
	if len(got) != 2 {
		t.Fatalf("%d documents, want 2: %+v", len(got), got)
	}
	text := errorsText(got[0].Errors)
	for _, want := range []string{"metrics[0].failureLimt: unknown field", "metrics[0].interval: interval must be specified when count > 1", "metrics[0].successCondition: "} {
		if !strings.Contains(text, want) {
			t.Errorf("errors %q lack %q", text, want)
		}
	}
	if got[1].Skipped || !strings.Contains(errorsText(got[1].Errors), "metrics[0].provider.prometheus.adress: unknown field") {
		t.Errorf("the AnalysisRun with a typo: %+v, want its unknown field listed", got[1])
	}
}
