package recipes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/test/internal/harness"
)

// tektonTask is what the tests read of a Tekton v1 Task, with Tekton's
// names; decoding refuses any other field.
type tektonTask struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Description string `yaml:"description"`
		Params      []struct {
			Name        string `yaml:"name"`
			Type        string `yaml:"type"`
			Description string `yaml:"description"`
			Default     string `yaml:"default"`
		} `yaml:"params"`
		Results []struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		} `yaml:"results"`
		Workspaces []struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
			Optional    bool   `yaml:"optional"`
		} `yaml:"workspaces"`
		Steps []struct {
			Name  string `yaml:"name"`
			Image string `yaml:"image"`
			Env   []struct {
				Name      string `yaml:"name"`
				Value     string `yaml:"value"`
				ValueFrom *struct {
					SecretKeyRef struct {
						Name string `yaml:"name"`
						Key  string `yaml:"key"`
					} `yaml:"secretKeyRef"`
				} `yaml:"valueFrom"`
			} `yaml:"env"`
			Script string `yaml:"script"`
		} `yaml:"steps"`
	} `yaml:"spec"`
}

// tektonTaskRun is what the tests read of a Tekton v1 TaskRun.
type tektonTaskRun struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		GenerateName string `yaml:"generateName"`
	} `yaml:"metadata"`
	Spec struct {
		TaskRef struct {
			Name string `yaml:"name"`
		} `yaml:"taskRef"`
		Params []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"params"`
	} `yaml:"spec"`
}

// tektonVariable is Tekton's $(params.NAME), $(results.NAME.path) and
// $(workspaces.NAME.bound|path).
var tektonVariable = regexp.MustCompile(`\$\(((?:params|results|workspaces)\.[a-zA-Z0-9_.-]+)\)`)

// runTektonStep runs the Task's step as Tekton would: its params (the
// Task's defaults, then the TaskRun's), result paths and workspaces
// substituted in the script and env, the env's Secret read from secrets,
// the script run by its shebang. Each workspace is bound to a directory of
// its own when bind is set (Tekton's path is "" for an optional one left
// unbound). It returns the outcome, the result `phase` and the directory
// of each workspace bound.
func runTektonStep(t *testing.T, task tektonTask, params map[string]string, secrets map[string]string, bind bool) (result, string, map[string]string) {
	t.Helper()
	if len(task.Spec.Steps) != 1 {
		t.Fatalf("the Task has %d steps, want 1", len(task.Spec.Steps))
	}
	step := task.Spec.Steps[0]
	values := map[string]string{}
	for _, p := range task.Spec.Params {
		values["params."+p.Name] = p.Default
	}
	for k, v := range params {
		if _, ok := values["params."+k]; !ok {
			t.Fatalf("the Task has no param %q", k)
		}
		values["params."+k] = v
	}
	tmp := t.TempDir()
	for _, r := range task.Spec.Results {
		values["results."+r.Name+".path"] = filepath.Join(tmp, "result-"+r.Name)
	}
	workspaces := map[string]string{}
	for _, w := range task.Spec.Workspaces {
		if !bind && !w.Optional {
			t.Fatalf("workspace %s is not optional: the TaskRun must bind it", w.Name)
		}
		values["workspaces."+w.Name+".bound"] = strconv.FormatBool(bind)
		values["workspaces."+w.Name+".path"] = ""
		if bind {
			dir := filepath.Join(tmp, "workspace-"+w.Name)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			values["workspaces."+w.Name+".path"] = dir
			workspaces[w.Name] = dir
		}
	}
	env := map[string]string{"PATH": basePath(), "HOME": tmp}
	for _, e := range step.Env {
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			name := substitute(t, tektonVariable, ref.Name, values)
			v, ok := secrets[name+"/"+ref.Key]
			if !ok {
				t.Fatalf("env %s: no Secret %s with key %s", e.Name, name, ref.Key)
			}
			env[e.Name] = v
			continue
		}
		env[e.Name] = substitute(t, tektonVariable, e.Value, values)
	}
	script := substitute(t, tektonVariable, step.Script, values)
	if !strings.HasPrefix(script, "#!/bin/sh\n") {
		t.Fatalf("the script does not start with #!/bin/sh")
	}
	res := runShell(t, []string{"sh"}, script, tmp, env)
	phase, _ := os.ReadFile(values["results.phase.path"])
	return res, string(phase), workspaces
}

// TestTekton runs the Task's step with the TaskRun's params, pointed at the
// test's canaryd: 0 and phase Successful for a healthy namespace, a failure
// and Failed for a failing one, Error when canaryd cannot measure.
func TestTekton(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl", "sed")
	var task tektonTask
	strictYAML(t, "tekton/task.yaml", readExample(t, "tekton/task.yaml"), &task)
	var run tektonTaskRun
	strictYAML(t, "tekton/taskrun.yaml", readExample(t, "tekton/taskrun.yaml"), &run)
	for _, d := range []struct{ apiVersion, kind, wantKind string }{
		{task.APIVersion, task.Kind, "Task"}, {run.APIVersion, run.Kind, "TaskRun"},
	} {
		if d.apiVersion != "tekton.dev/v1" || d.kind != d.wantKind {
			t.Errorf("%s: apiVersion %q kind %q, want tekton.dev/v1", d.wantKind, d.apiVersion, d.kind)
		}
	}
	if run.Spec.TaskRef.Name != task.Metadata.Name {
		t.Errorf("the TaskRun runs %q, the Task is %q", run.Spec.TaskRef.Name, task.Metadata.Name)
	}
	w := newWorld(t)
	secretName := ""
	for _, p := range task.Spec.Params {
		if p.Name == "token-secret" {
			secretName = p.Default
		}
	}
	// The TaskRun's params, with the namespace of its args swapped and
	// canaryd-url given as a TaskRun would give it for another address.
	params := func(ns string) map[string]string {
		out := map[string]string{"canaryd-url": w.authed.URL}
		for _, p := range run.Spec.Params {
			out[p.Name] = p.Value
		}
		var args map[string]string
		if err := json.Unmarshal([]byte(out["args"]), &args); err != nil {
			t.Fatalf("the TaskRun's args are not a JSON object of strings: %v", err)
		}
		if args["namespace"] != exampleNamespace {
			t.Fatalf("the TaskRun's args name namespace %q, want %q", args["namespace"], exampleNamespace)
		}
		args["namespace"] = ns
		b, _ := json.Marshal(args)
		out["args"] = string(b)
		return out
	}
	secrets := func(token string) map[string]string { return map[string]string{secretName + "/token": token} }

	// report checks the workspace report: the analysis' HTML report when
	// one ran (phase), nothing otherwise.
	report := func(t *testing.T, workspaces map[string]string, phase string) {
		t.Helper()
		dir, ok := workspaces["report"]
		if !ok {
			t.Fatalf("the Task has no workspace report")
		}
		checkKeptReport(t, filepath.Join(dir, "canaryd-report.html"), phase)
	}
	for _, tc := range []struct {
		name      string
		namespace string
		token     string
		wantOK    bool
		wantPhase string
		// wantReport is the phase of the report written; "" for none
		wantReport string
	}{
		{"echo-good", harness.EchoGood, w.authed.Token, true, "Successful", "Successful"},
		{"echo-bad", harness.EchoBad, w.authed.Token, false, "Failed", "Failed"},
		{"wrong token", harness.EchoGood, "not-" + w.authed.Token, false, "Error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, phase, workspaces := runTektonStep(t, task, params(tc.namespace), secrets(tc.token), true)
			if (got.code == 0) != tc.wantOK || phase != tc.wantPhase {
				t.Errorf("exit %d, phase %q; want success=%v, phase %q\nlog:\n%s\n%s", got.code, phase, tc.wantOK, tc.wantPhase, got.output, w.logs())
			}
			report(t, workspaces, tc.wantReport)
		})
	}
	t.Run("no workspace bound", func(t *testing.T) {
		got, phase, _ := runTektonStep(t, task, params(harness.EchoGood), secrets(w.authed.Token), false)
		if got.code != 0 || phase != "Successful" {
			t.Errorf("exit %d, phase %q; want success, phase Successful\nlog:\n%s", got.code, phase, got.output)
		}
	})
	t.Run("prometheus down", func(t *testing.T) {
		w.prom.Stop()
		got, phase, workspaces := runTektonStep(t, task, params(harness.EchoGood), secrets(w.authed.Token), true)
		if got.code == 0 || phase != "Error" {
			t.Errorf("exit %d, phase %q; want a failure, phase Error\nlog:\n%s", got.code, phase, got.output)
		}
		report(t, workspaces, "Error")
	})
	t.Run("canaryd unreachable", func(t *testing.T) {
		p := params(harness.EchoGood)
		p["canaryd-url"] = "http://127.0.0.1:1"
		got, phase, workspaces := runTektonStep(t, task, p, secrets(w.authed.Token), true)
		if got.code == 0 || phase != "Error" {
			t.Errorf("exit %d, phase %q; want a failure, phase Error\nlog:\n%s", got.code, phase, got.output)
		}
		report(t, workspaces, "")
	})
}
