package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// maxNoRun is how many blocks may be exempt from running: the ones that
// need a Docker engine, a cluster, another tool's CLI, or that run for
// minutes. Keep it small.
const maxNoRun = 6

// exampleTimeout bounds one example; the longest are a whole analysis of
// the demo's templates, three measurements 30 s apart.
const exampleTimeout = 150 * time.Second

// outcome is what running one block gave.
type outcome struct {
	err     error
	skipped string // why it was only syntax-checked
}

// TestExamples runs every fenced block of the documentation's pages as
// docs/developing.md says, all at once (most wait on analyses' schedules),
// then reports each as a subtest named PAGE:LINE.
func TestExamples(t *testing.T) {
	w := startWorld(t)
	type job struct {
		p    *page
		b    block
		done chan outcome
	}
	var jobs []job
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			j := job{p: p, b: b, done: make(chan outcome, 1)}
			jobs = append(jobs, j)
			dir := w.scratch(t)
			go func() { j.done <- runBlock(w, dir, j.b) }()
		}
	}
	noRun := 0
	for _, j := range jobs {
		o := <-j.done
		t.Run(fmt.Sprintf("%s:%d", j.p.path, j.b.line), func(t *testing.T) {
			if o.skipped != "" {
				noRun++
				t.Logf("not run (%s); syntax checked", o.skipped)
			}
			if o.err != nil {
				t.Errorf("```%s %s at %s:%d:\n%v", j.b.lang, j.b.info, j.p.path, j.b.line, o.err)
			}
		})
	}
	t.Logf("%d blocks, %d of them not run", len(jobs), noRun)
	if noRun > maxNoRun {
		t.Errorf("%d blocks are marked no-run, more than %d: make them run", noRun, maxNoRun)
	}
	if t.Failed() {
		t.Logf("canaryd serve's log:\n%s", w.logs())
	}
}

func runBlock(w *world, dir string, b block) outcome {
	switch b.lang {
	case "sh":
		return runShell(w, dir, b)
	case "text":
		if !strings.HasPrefix(b.body, "$ ") && !strings.Contains(b.body, "\n$ ") {
			if b.info != "" {
				return outcome{err: fmt.Errorf("unknown info string %q", b.info)}
			}
			return outcome{} // usage or output quoted, not a command
		}
		return runTranscript(w, dir, b)
	case "yaml":
		return checkYAML(w, dir, b)
	case "json":
		return checkJSON(b)
	case "go":
		if _, err := parser.ParseFile(token.NewFileSet(), "example.go", "package example\n"+b.body, 0); err != nil {
			return outcome{err: err}
		}
		if !strings.Contains(b.body, "\nfunc verify(") {
			return outcome{}
		}
		// The webhook verifier: call it on a real delivery.
		src := goVerifyMain + b.body
		if err := os.WriteFile(filepath.Join(dir, "verify.go"), []byte(src), 0o644); err != nil {
			return outcome{err: err}
		}
		ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
		defer cancel()
		return outcome{err: run(ctx, dir, w.env(), "go", "run", "verify.go", "")}
	case "python":
		// The one Python example verifies a webhook delivery: call it on
		// a real one.
		call := "\nimport os\nverify(open('webhook-secret').read(), " +
			"{'webhook-id': os.environ['id'], 'webhook-timestamp': os.environ['ts'], 'webhook-signature': os.environ['sig']}, " +
			"open('body.json', 'rb').read())\nprint('valid')\n"
		return outcome{err: run(context.Background(), dir, w.env(), "python3", "-", b.body+call)}
	}
	return outcome{err: fmt.Errorf("a block of language %q: the test does not know how to check it", b.lang)}
}

// goVerifyMain calls webhooks.md's Go verifier on the delivery the
// example's directory and environment hold.
const goVerifyMain = `package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	secret, _ := os.ReadFile("webhook-secret")
	body, _ := os.ReadFile("body.json")
	h := http.Header{}
	h.Set("webhook-id", os.Getenv("id"))
	h.Set("webhook-timestamp", os.Getenv("ts"))
	h.Set("webhook-signature", os.Getenv("sig"))
	if err := verify(string(secret), h, body, time.Now()); err != nil {
		fmt.Println("INVALID:", err)
		os.Exit(1)
	}
	fmt.Println("valid")
}

`

var exitRE = regexp.MustCompile(`^exit=(\d+)$`)

func runShell(w *world, dir string, b block) outcome {
	if reason, ok := strings.CutPrefix(b.info, "no-run:"); ok {
		if strings.TrimSpace(reason) == "" {
			return outcome{err: errors.New("no-run needs a reason: ```sh no-run: needs a Docker engine")}
		}
		err := run(context.Background(), dir, nil, "bash", "-n", b.body)
		return outcome{skipped: strings.TrimSpace(reason), err: err}
	}
	want := 0
	script, env := w.substitute(b.body), w.env()
	switch {
	case b.info == "serve":
		var err error
		if script, env, err = w.serving(dir, b.body); err != nil {
			return outcome{err: err}
		}
	case b.info != "":
		m := exitRE.FindStringSubmatch(b.info)
		if m == nil {
			return outcome{err: fmt.Errorf("unknown info string %q (want exit=N, serve or no-run: REASON)", b.info)}
		}
		want, _ = strconv.Atoi(m[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &out
	// Its own process group, so that what it left running (a serve
	// block's canaryd) is stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		stopGroup(cmd.Process.Pid)
	}
	if err != nil && b.info == "serve" {
		if log, rerr := os.ReadFile(filepath.Join(dir, "serve.log")); rerr == nil {
			out.WriteString("\ncanaryd serve's log:\n" + string(log))
		}
	}
	got := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		return outcome{err: err}
	}
	if ctx.Err() != nil {
		return outcome{err: fmt.Errorf("still running after %s; output:\n%s", exampleTimeout, out.String())}
	}
	if got != want {
		return outcome{err: fmt.Errorf("exit status %d, want %d; output:\n%s", got, want, out.String())}
	}
	return outcome{}
}

// run runs a command with stdin, failing with its output.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	stdin := args[len(args)-1]
	cmd := exec.CommandContext(ctx, name, args[:len(args)-1]...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	if env != nil {
		cmd.Env = env
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}

// A transcript: `$ command` lines (continued by a trailing backslash) and
// what each printed.
type step struct {
	command string
	output  []string
}

func transcript(body string) []step {
	var steps []step
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
			}
			steps = append(steps, step{command: cmd})
			continue
		}
		if len(steps) > 0 {
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, l)
		}
	}
	return steps
}

const marker = "\x1e--- canaryd docs step ---\x1e"

func runTranscript(w *world, dir string, b block) outcome {
	if b.info != "" {
		return outcome{err: fmt.Errorf("unknown info string %q", b.info)}
	}
	steps := transcript(b.body)
	var script strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&script, "printf '%%s\\n' '%s'\n%s\n", marker, w.substitute(s.command))
	}
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, w.env(), &out, &out
	_ = cmd.Run() // each step's exit status is what `echo $?` shows
	if ctx.Err() != nil {
		return outcome{err: fmt.Errorf("still running after %s; output:\n%s", exampleTimeout, out.String())}
	}
	parts := strings.Split(out.String(), marker+"\n")
	if len(parts) != len(steps)+1 {
		return outcome{err: fmt.Errorf("%d steps, %d outputs:\n%s", len(steps), len(parts)-1, out.String())}
	}
	var errs []error
	for i, s := range steps {
		if err := sameShape(s.output, strings.Split(strings.TrimRight(parts[i+1], "\n"), "\n")); err != nil {
			errs = append(errs, fmt.Errorf("$ %s\n%v\ngot:\n%s", s.command, err, parts[i+1]))
		}
	}
	return outcome{err: errors.Join(errs...)}
}

var (
	timeRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	numberRE = regexp.MustCompile(`[-+]?\d+(\.\d+)?(e[-+]?\d+)?`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

// mask hides what changes from run to run: times, figures, alignment.
func mask(s string) string {
	s = timeRE.ReplaceAllString(s, "T")
	s = numberRE.ReplaceAllString(s, "N")
	return strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
}

// sameShape checks that every documented line of output appears, masked,
// in the output, in order. Lines with … elide, and JSON lines written
// compactly in the page (an object opened and closed on one line) are
// printed indented by canaryd: both are skipped. Measurement lines (those
// starting with a time) may come in any order.
func sameShape(doc, got []string) error {
	var masked []string
	for _, g := range got {
		masked = append(masked, mask(g))
	}
	j := 0
	for _, d := range doc {
		if strings.Contains(d, "…") || strings.TrimSpace(d) == "" {
			continue
		}
		if t := strings.TrimSpace(d); strings.Contains(t, "{") && strings.Contains(t, "}") && !strings.HasPrefix(t, "{") {
			continue
		}
		want := mask(d)
		if timeRE.MatchString(strings.Fields(d)[0]) {
			// A measurement: metrics measured at the same instant print
			// in any order.
			if !slices.Contains(masked, want) {
				return fmt.Errorf("the documented measurement %q (%q masked) was not printed", d, want)
			}
			continue
		}
		for j < len(masked) && masked[j] != want {
			j++
		}
		if j == len(masked) {
			return fmt.Errorf("the documented line %q (%q masked) was not printed, or not in this order", d, want)
		}
		j++
	}
	return nil
}

// canarydKinds are the documents canaryd runs.
var canarydKinds = map[string]bool{"AnalysisTemplate": true, "ClusterAnalysisTemplate": true, "AnalysisRun": true}

func checkYAML(w *world, dir string, b block) outcome {
	switch b.info {
	case "", "fragment":
	default:
		return outcome{err: fmt.Errorf("unknown info string %q (want fragment)", b.info)}
	}
	dec := yamlv3.NewDecoder(strings.NewReader(b.body))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return outcome{err: fmt.Errorf("not YAML: %v", err)}
		}
		docs = append(docs, doc)
	}
	if b.info == "fragment" || len(docs) != 1 {
		return outcome{}
	}
	doc := docs[0]
	kind, _ := doc["kind"].(string)
	apiVersion, _ := doc["apiVersion"].(string)
	_, bare := doc["metrics"]
	switch {
	case canarydKinds[kind] && strings.HasPrefix(apiVersion, "argoproj.io/") && strings.Contains(b.body, "web:"):
		// A template for Argo's controller, which calls canaryd: Argo's
		// own types must take it, field for field.
		var at v1alpha1.AnalysisTemplate
		if err := yaml.UnmarshalStrict([]byte(b.body), &at); err != nil {
			return outcome{err: fmt.Errorf("Argo Rollouts would not read it: %v", err)}
		}
		if len(at.Spec.Metrics) == 0 || at.Spec.Metrics[0].Provider.Web == nil {
			return outcome{err: errors.New("Argo Rollouts reads no web provider in it")}
		}
		return outcome{}
	case canarydKinds[kind] || kind == "" && bare:
		path := filepath.Join(dir, "example.yaml")
		if err := os.WriteFile(path, []byte(b.body), 0o644); err != nil {
			return outcome{err: err}
		}
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(w.bin, "canaryd"), "validate", "-f", path)
		cmd.Env, cmd.Stdout, cmd.Stderr = w.env(), &out, &out
		if err := cmd.Run(); err != nil {
			return outcome{err: fmt.Errorf("canaryd validate: %v\n%s", err, out.String())}
		}
	}
	return outcome{}
}

var (
	elidedObject = regexp.MustCompile(`\{…\}`)
	elidedItems  = regexp.MustCompile(`,\s*…\s*([\]}])`)
)

func checkJSON(b block) outcome {
	body := elidedObject.ReplaceAllString(b.body, "{}")
	body = elidedItems.ReplaceAllString(body, "$1")
	switch b.info {
	case "":
	case "fragment":
		body = "{" + body + "}"
	default:
		return outcome{err: fmt.Errorf("unknown info string %q (want fragment)", b.info)}
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return outcome{err: fmt.Errorf("not JSON: %v", err)}
	}
	return outcome{}
}
