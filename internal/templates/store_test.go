package templates

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
)

const rollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: echo
spec:
  replicas: 3
  strategy:
    canary:
      analysis:
        templates:
        - templateName: success-rate
`

const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: b
`

func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []row
		// served maps each name Get must find to the file it comes from.
		served      map[string]string
		wantLoaded  float64
		wantBroken  float64
		wantErrors  map[string]float64
		wantInfoMsg map[string]string // file → a substring of its first error message
	}{
		{
			name:   "the fixtures",
			files:  map[string]string{"success-rate.yaml": fixture(t, "success-rate.yaml"), "latency-p99.yaml": fixture(t, "latency-p99.yaml")},
			want:   []row{{"latency-p99", "latency-p99.yaml:10", "ok", ""}, {"success-rate", "success-rate.yaml:7", "ok", ""}},
			served: map[string]string{"success-rate": "success-rate.yaml", "latency-p99": "latency-p99.yaml"},
			// Every file's series exists from the start, at 0.
			wantLoaded: 2, wantErrors: map[string]float64{"success-rate.yaml": 0, "latency-p99.yaml": 0},
		},
		{
			name: "a broken file at start is listed, the others served",
			files: map[string]string{
				"good.yaml":   template("good", simple("30s")),
				"broken.yaml": template("broken", strings.Replace(simple("30s"), "interval:", "intervall:", 1)),
			},
			// The typo and what it leaves missing, listed together.
			want:       []row{{"broken", "broken.yaml:1", "error", "metrics[0].intervall,metrics[0].interval"}, {"good", "good.yaml:1", "ok", ""}},
			served:     map[string]string{"good": "good.yaml"},
			wantLoaded: 1, wantBroken: 1, wantErrors: map[string]float64{"broken.yaml": 1, "good.yaml": 0},
			wantInfoMsg: map[string]string{"broken.yaml": "unknown field"},
		},
		{
			name: "a name defined in two files: the later file in name order gets the error",
			files: map[string]string{
				"a.yaml": template("same", simple("30s")),
				"b.yaml": template("same", simple("1m")),
			},
			want:       []row{{"same", "a.yaml:1", "ok", ""}, {"same", "b.yaml:1", "error", "metadata.name"}},
			served:     map[string]string{"same": "a.yaml"},
			wantLoaded: 1, wantBroken: 1, wantErrors: map[string]float64{"a.yaml": 0, "b.yaml": 1},
			wantInfoMsg: map[string]string{"b.yaml": `template "same" is already defined in a.yaml (line 1)`},
		},
		{
			name: "several documents in a file, other kinds skipped",
			files: map[string]string{"all.yaml": "# canary templates\n---\n" + template("one", simple("30s")) +
				"---\n# nothing here\n---\n" + rollout +
				"--- # the cluster-wide one\n" + strings.Replace(template("two", simple("1m")), "kind: AnalysisTemplate", "kind: ClusterAnalysisTemplate", 1) +
				"---\n" + configMap + "...\n"},
			want:       []row{{"one", "all.yaml:3", "ok", ""}, {"two", "all.yaml:31", "ok", ""}},
			served:     map[string]string{"one": "all.yaml", "two": "all.yaml"},
			wantLoaded: 2, wantErrors: map[string]float64{"all.yaml": 0},
		},
		{
			name: "a file of several documents, one broken, never good: the others are served",
			files: map[string]string{"all.yaml": template("one", simple("30s")) + "---\n" +
				template("two", simple("-1m")) + "---\n" + template("three", simple("1m"))},
			want: []row{{"one", "all.yaml:1", "ok", ""}, {"three", "all.yaml:29", "ok", ""},
				{"two", "all.yaml:15", "error", "metrics[0].interval"}},
			served:     map[string]string{"one": "all.yaml", "three": "all.yaml"},
			wantLoaded: 2, wantBroken: 1, wantErrors: map[string]float64{"all.yaml": 1},
		},
		{
			name:       "a name defined twice in one file",
			files:      map[string]string{"all.yaml": template("one", simple("30s")) + "---\n" + template("one", simple("1m"))},
			want:       []row{{"one", "all.yaml:1", "ok", ""}, {"one", "all.yaml:15", "error", "metadata.name"}},
			served:     map[string]string{"one": "all.yaml"},
			wantLoaded: 1, wantBroken: 1, wantErrors: map[string]float64{"all.yaml": 1},
			wantInfoMsg: map[string]string{"all.yaml": `template "one" is already defined on line 1 of this file`},
		},
		{
			name: "files that are not templates are not read",
			files: map[string]string{
				"t.yml":         template("t", simple("30s")),
				"README.md":     "# not yaml: {",
				"notes.txt":     "nope",
				".hidden.yaml":  "{{{ not read",
				"dir.yaml/x":    "a directory named like a template",
				"..2026_01/a.y": "the layout of a volume",
			},
			want:       []row{{"t", "t.yml:1", "ok", ""}},
			served:     map[string]string{"t": "t.yml"},
			wantLoaded: 1,
		},
		{
			name: "JSON",
			files: map[string]string{"t.json": `{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": "j"},
  "spec": {"metrics": [{"name": "up", "successCondition": "result[0] == 1", "provider": {"prometheus": {"query": "up"}}}]}}`},
			want:       []row{{"j", "t.json:1", "ok", ""}},
			served:     map[string]string{"j": "t.json"},
			wantLoaded: 1,
		},
		{
			name: "a bare spec has no name, a List is refused; an AnalysisRun and a Rollout are skipped",
			files: map[string]string{
				"list.yaml":    "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(template("a", simple("30s")), "\n", "\n  ") + "\n",
				"bare.yaml":    simple("30s")[2:],
				"run.yaml":     strings.Replace(template("run", simple("30s")), "AnalysisTemplate", "AnalysisRun", 1),
				"rollout.yaml": rollout,
				"empty.yaml":   "# nothing yet\n",
			},
			want:       []row{{"", "bare.yaml:1", "error", "kind"}, {"", "list.yaml:1", "error", "kind"}},
			wantBroken: 2, wantErrors: map[string]float64{"bare.yaml": 1, "list.yaml": 1, "run.yaml": 0, "rollout.yaml": 0, "empty.yaml": 0},
		},
		{
			name: "names must be Kubernetes names, and given",
			files: map[string]string{
				"a.yaml": template("Success_Rate", simple("30s")),
				"b.yaml": template(`""`, simple("30s")),
			},
			want:       []row{{"", "b.yaml:1", "error", "metadata.name"}, {"Success_Rate", "a.yaml:1", "error", "metadata.name"}},
			wantBroken: 2,
		},
		{
			name: "a broken template without arguments: every validation problem, each on its field",
			files: map[string]string{"t.yaml": template("t", `  metrics:
  - name: up
    count: 3
    failureLimit: -2
    successCondition: result[0] ==
    provider:
      prometheus:
        query: up
`)},
			want:       []row{{"t", "t.yaml:1", "error", "metrics[0].failureLimit,metrics[0].interval,metrics[0].successCondition"}},
			wantBroken: 1,
		},
		{
			name:       "a broken document that does not parse is named from its text",
			files:      map[string]string{"t.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata:\n  labels:\n    name: not-this\n  name: this-one\nspec:\n  metrics: 3\n"},
			want:       []row{{"this-one", "t.yaml:1", "error", "metrics"}},
			wantBroken: 1,
		},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		writeFiles(t, dir, tt.files)
		s := load(t, dir, Options{})
		checkRows(t, tt.name, s, tt.want)
		for name, file := range tt.served {
			got, ok := s.Get(name)
			if !ok || got.File != file || got.Name != name || got.Document.Metadata.Name != name {
				t.Errorf("%s: Get(%q) = %+v, %v; want it from %s", tt.name, name, got, ok, file)
			}
		}
		for _, in := range s.List() {
			got, ok := s.Get(in.Name)
			if served := ok && got.File == in.File && got.Line == in.Line; served != (in.Status != StatusError) {
				t.Errorf("%s: the %s entry %q of %s:%d: served = %v", tt.name, in.Status, in.Name, in.File, in.Line, served)
			}
		}
		files := make([]string, 0, len(tt.wantErrors))
		for f := range tt.wantErrors {
			files = append(files, f)
		}
		got := readMetrics(t, s, files...)
		want := metricValues{loaded: tt.wantLoaded, broken: tt.wantBroken, reloads: 1, errors: tt.wantErrors}
		if want.errors == nil {
			want.errors = map[string]float64{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: metrics:\ngot  %+v\nwant %+v", tt.name, got, want)
		}
		for file, msg := range tt.wantInfoMsg {
			found := false
			for _, in := range s.List() {
				if in.File == file && len(in.Errors) > 0 {
					found = true
					if !strings.Contains(in.Errors[0].Message, msg) {
						t.Errorf("%s: %s: got error %q, want it to contain %q", tt.name, file, in.Errors[0].Message, msg)
					}
				}
			}
			if !found {
				t.Errorf("%s: %s: no error listed", tt.name, file)
			}
		}
	}
}

// Each step changes the directory, reloads, and checks what is served.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.yaml": template("alpha", simple("30s")),
		"b.yaml": template("beta", simple("30s")),
	})
	s := load(t, dir, Options{})
	interval := func(name string) string {
		if tmpl, ok := s.Get(name); ok {
			return tmpl.Document.Spec.Metrics[0].Interval
		}
		return "(none)"
	}

	steps := []struct {
		name    string
		files   map[string]string // "" removes
		want    []row
		alpha   string // the interval of the alpha served, "(none)" for none
		errors  float64
		reloads float64
		msg     string // a substring of alpha's first error
	}{
		{
			name:  "unchanged",
			want:  []row{{"alpha", "a.yaml:1", "ok", ""}, {"beta", "b.yaml:1", "ok", ""}},
			alpha: "30s", reloads: 1,
		},
		{
			name:  "a file changes",
			files: map[string]string{"a.yaml": template("alpha", simple("1m"))},
			want:  []row{{"alpha", "a.yaml:1", "ok", ""}, {"beta", "b.yaml:1", "ok", ""}},
			alpha: "1m", reloads: 2,
		},
		{
			name:  "the file breaks: its last good version is kept, stale",
			files: map[string]string{"a.yaml": template("alpha", simple("2m")+"    failureLimit: -2\n")},
			want:  []row{{"alpha", "a.yaml:1", "stale", "metrics[0].failureLimit"}, {"beta", "b.yaml:1", "ok", ""}},
			alpha: "1m", errors: 1, reloads: 3, msg: "failureLimit must be >= 0",
		},
		{
			name:  "it breaks differently: counted again",
			files: map[string]string{"a.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: alpha}\nspec: {metrics: [{name: x, provider: {prometheus: {query: up}}, bogus: 1}]}\n"},
			want:  []row{{"alpha", "a.yaml:1", "stale", "metrics[0].bogus"}, {"beta", "b.yaml:1", "ok", ""}},
			alpha: "1m", errors: 2, reloads: 4, msg: "unknown field",
		},
		{
			name:  "no change: nothing counted",
			want:  []row{{"alpha", "a.yaml:1", "stale", "metrics[0].bogus"}, {"beta", "b.yaml:1", "ok", ""}},
			alpha: "1m", errors: 2, reloads: 4,
		},
		{
			name:  "the file is fixed",
			files: map[string]string{"a.yaml": template("alpha", simple("5m"))},
			want:  []row{{"alpha", "a.yaml:1", "ok", ""}, {"beta", "b.yaml:1", "ok", ""}},
			alpha: "5m", errors: 2, reloads: 5,
		},
		{
			name:  "a file is deleted",
			files: map[string]string{"b.yaml": ""},
			want:  []row{{"alpha", "a.yaml:1", "ok", ""}},
			alpha: "5m", errors: 2, reloads: 6,
		},
		{
			name:  "a template moves to another file",
			files: map[string]string{"a.yaml": "", "c.yaml": template("alpha", simple("6m"))},
			want:  []row{{"alpha", "c.yaml:1", "ok", ""}},
			alpha: "6m", errors: 2, reloads: 7,
		},
		{
			name:  "an earlier file takes the name: the later one is refused",
			files: map[string]string{"0.yaml": template("alpha", simple("7m"))},
			want:  []row{{"alpha", "0.yaml:1", "ok", ""}, {"alpha", "c.yaml:1", "error", "metadata.name"}},
			alpha: "7m", errors: 2, reloads: 8,
		},
		{
			name:  "the earlier file breaks: its stale version keeps the name",
			files: map[string]string{"0.yaml": template("alpha", simple("x"))},
			want:  []row{{"alpha", "0.yaml:1", "stale", "metrics[0].interval"}, {"alpha", "c.yaml:1", "error", "metadata.name"}},
			alpha: "7m", errors: 2, reloads: 9,
		},
		{
			name:  "the earlier file is removed: the name is free again",
			files: map[string]string{"0.yaml": ""},
			want:  []row{{"alpha", "c.yaml:1", "ok", ""}},
			alpha: "6m", errors: 2, reloads: 10,
		},
		{
			name:  "a new file that never loaded is removed",
			files: map[string]string{"d.yaml": "{"},
			want:  []row{{"", "d.yaml:1", "error", "body"}, {"alpha", "c.yaml:1", "ok", ""}},
			alpha: "6m", errors: 2, reloads: 11,
		},
		{
			name:  "and gone",
			files: map[string]string{"d.yaml": ""},
			want:  []row{{"alpha", "c.yaml:1", "ok", ""}},
			alpha: "6m", errors: 2, reloads: 12,
		},
	}
	for _, st := range steps {
		writeFiles(t, dir, st.files)
		if err := s.Reload(); err != nil {
			t.Fatalf("%s: Reload: %v", st.name, err)
		}
		checkRows(t, st.name, s, st.want)
		if got := interval("alpha"); got != st.alpha {
			t.Errorf("%s: alpha's interval: got %s, want %s", st.name, got, st.alpha)
		}
		m := readMetrics(t, s, "a.yaml", "c.yaml", "0.yaml")
		// Errors are counted per file; a.yaml's were counted before it
		// went, and the 0.yaml/c.yaml conflict counted once on c.yaml.
		if got := m.errors["a.yaml"]; got != st.errors {
			t.Errorf("%s: load errors of a.yaml: got %v, want %v", st.name, got, st.errors)
		}
		if m.reloads != st.reloads {
			t.Errorf("%s: reloads: got %v, want %v", st.name, m.reloads, st.reloads)
		}
		if st.msg != "" {
			in := s.List()[0]
			if len(in.Errors) == 0 || !strings.Contains(in.Errors[0].Message, st.msg) {
				t.Errorf("%s: got errors\n%s want one containing %q", st.name, formatFieldErrors(in.Errors), st.msg)
			}
		}
	}
	// The conflict was counted on c.yaml, once (it lasted two reloads), and
	// d.yaml's failed load once; 0.yaml broke once.
	m := readMetrics(t, s, "c.yaml", "0.yaml", "d.yaml")
	if want := map[string]float64{"c.yaml": 1, "0.yaml": 1, "d.yaml": 1}; !reflect.DeepEqual(m.errors, want) {
		t.Errorf("end: load errors: got %v, want %v", m.errors, want)
	}
}

// A file of several documents is the unit of change: one broken document
// keeps the last good version of all of them.
func TestReloadMultiDocument(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"all.yaml": template("one", simple("30s")) + "---\n" + template("two", simple("30s"))})
	s := load(t, dir, Options{})

	writeFiles(t, dir, map[string]string{"all.yaml": template("one", simple("1m")) + "---\n" +
		template("two", simple("bad")) + "---\n" + template("three", "  metrics: 1\n")})
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "one broken document", s, []row{
		{"one", "all.yaml:1", "stale", "metrics[0].interval,metrics"},
		{"three", "all.yaml:29", "error", "metrics"},
		{"two", "all.yaml:15", "stale", "metrics[0].interval,metrics"},
	})
	if tmpl, _ := s.Get("one"); tmpl.Document.Spec.Metrics[0].Interval != "30s" {
		t.Errorf("one broken document: one is served at interval %s, want the last good 30s", tmpl.Document.Spec.Metrics[0].Interval)
	}
	if _, ok := s.Get("three"); ok {
		t.Errorf("one broken document: three is served")
	}
	in := s.List()[0]
	for _, e := range in.Errors {
		if !strings.HasPrefix(e.Message, "document 2 (line 15): ") && !strings.HasPrefix(e.Message, "document 3 (line 29): ") {
			t.Errorf("one broken document: error %q does not name its document", e.Message)
		}
	}
}

// volume lays out dir as the kubelet does a ConfigMap volume: every key a
// link name -> ..data/name, ..data a link to a timestamped directory.
type volume struct {
	t       *testing.T
	dir     string
	version int
}

// update writes a new version of the ConfigMap and swaps it in the
// kubelet's order: new directory, ..data swapped atomically (a new link
// renamed over it), links of new keys added. The links of removed keys and
// the old directory are removed only by cleanup, so that a scan can see the
// moment between.
func (v *volume) update(files map[string]string) (cleanup func()) {
	t := v.t
	v.version++
	ts := filepath.Join(v.dir, "..2026_11_22_12_00_0"+string(rune('0'+v.version))+".123456789")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ts, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(v.dir, "..data"))
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(v.dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	return func() {
		entries, err := os.ReadDir(v.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := files[e.Name()]; !ok && !strings.HasPrefix(e.Name(), ".") {
				if err := os.Remove(filepath.Join(v.dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		if old != "" {
			if err := os.RemoveAll(filepath.Join(v.dir, old)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestConfigMapVolume(t *testing.T) {
	v := &volume{t: t, dir: t.TempDir()}
	v.update(map[string]string{
		"success-rate.yaml": fixture(t, "success-rate.yaml"),
		"latency-p99.yaml":  fixture(t, "latency-p99.yaml"),
	})()
	s := load(t, v.dir, Options{})
	checkRows(t, "initial", s, []row{{"latency-p99", "latency-p99.yaml:10", "ok", ""}, {"success-rate", "success-rate.yaml:7", "ok", ""}})

	// latency-p99 removed, success-rate changed, error-rate added. Right
	// after the swap, the link latency-p99.yaml is still there, to nothing.
	cleanup := v.update(map[string]string{
		"success-rate.yaml": strings.Replace(fixture(t, "success-rate.yaml"), "interval: 30s", "interval: 1m", 1),
		"error-rate.yml":    template("error-rate", simple("30s")),
	})
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	want := []row{{"error-rate", "error-rate.yml:1", "ok", ""}, {"success-rate", "success-rate.yaml:7", "ok", ""}}
	checkRows(t, "after the swap", s, want)
	if tmpl, _ := s.Get("success-rate"); tmpl.Document.Spec.Metrics[0].Interval != "1m" {
		t.Errorf("after the swap: success-rate not reloaded: interval %s", tmpl.Document.Spec.Metrics[0].Interval)
	}
	cleanup()
	reloads := readMetrics(t, s).reloads
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	checkRows(t, "after the cleanup", s, want)
	if got := readMetrics(t, s).reloads; got != reloads {
		t.Errorf("after the cleanup: reloads went from %v to %v; nothing changed", reloads, got)
	}

	// Outside a volume, a link to nothing is a file that cannot be read.
	plain := t.TempDir()
	writeFiles(t, plain, map[string]string{"real.yaml": template("real", simple("30s"))})
	if err := os.Symlink("real.yaml", filepath.Join(plain, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere.yaml", filepath.Join(plain, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	s = load(t, plain, Options{})
	checkRows(t, "plain directory with links", s, []row{
		{"", "dangling.yaml:0", "error", "body"},
		{"real", "link.yaml:1", "ok", ""},
		{"real", "real.yaml:1", "error", "metadata.name"},
	})
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.yaml": template("t", simple("30s"))})
	s := load(t, dir, Options{PollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends when ctx is cancelled, below
		defer close(done)
		s.Run(ctx)
	}()

	writeFiles(t, dir, map[string]string{"t.yaml": template("t", simple("1m"))})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tmpl, _ := s.Get("t"); tmpl.Document.Spec.Metrics[0].Interval == "1m" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run: the change was not picked up within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
}

func TestDirectoryProblems(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFiles(t, filepath.Dir(file), map[string]string{"file": "x"})
	for _, tt := range []struct {
		name, dir, want string
	}{
		{"no directory", "", "templates: no directory given"},
		{"missing", filepath.Join(t.TempDir(), "missing"), "no such file or directory"},
		{"a file", file, "is not a directory"},
	} {
		_, err := Load(Options{Dir: tt.dir, Providers: testProviders})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Load: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}

	// One store per registerer.
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	load(t, dir, Options{Registerer: reg})
	if _, err := Load(Options{Dir: dir, Registerer: reg, Providers: testProviders}); err == nil || !strings.Contains(err.Error(), "one Store per registerer") {
		t.Errorf("second store on a registerer: got %v", err)
	}
	families, err := reg.Gather()
	var names []string
	for _, mf := range families {
		names = append(names, mf.GetName())
	}
	// The counter by file has no series before a file is seen.
	if want := []string{"canaryd_template_files_broken", "canaryd_templates_loaded", "canaryd_templates_reloads_total"}; err != nil || !reflect.DeepEqual(names, want) {
		t.Errorf("registered metrics: got %v, %v; want %v", names, err, want)
	}

	// The directory goes away: Reload fails, what was loaded stays.
	writeFiles(t, dir, map[string]string{"t.yaml": template("t", simple("30s"))})
	s := load(t, dir, Options{})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Errorf("directory removed: Reload succeeded")
	}
	if _, ok := s.Get("t"); !ok {
		t.Errorf("directory removed: t is no longer served")
	}
}

// Get and List run while the directory changes under reloads; run with
// -race.
func TestConcurrentReads(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.yaml": template("t", simple("30s"))})
	s := load(t, dir, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { // ends with ctx
			defer wg.Done()
			for ctx.Err() == nil {
				if tmpl, ok := s.Get("t"); !ok || tmpl.Name != "t" {
					t.Error("t not served during a reload")
					return
				}
				for _, in := range s.List() {
					in.Errors = append(in.Errors, api.FieldError{}) // the copy is the caller's
				}
			}
		}()
	}
	for i := range 50 {
		content := template("t", simple("30s"))
		if i%2 == 1 {
			content = template("t", simple("broken"))
		}
		writeFiles(t, dir, map[string]string{"t.yaml": content})
		if err := s.Reload(); err != nil {
			t.Error(err)
		}
	}
	cancel()
	wg.Wait()
}

func TestReloadErrorIsAboutTheDirectory(t *testing.T) {
	dir := t.TempDir()
	s := load(t, dir, Options{})
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	err := s.Reload()
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reload of a removed directory: got %v, want a not-exist error", err)
	}
}
