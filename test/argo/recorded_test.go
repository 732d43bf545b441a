package argo

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/utils/defaults"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/test/internal/harness"
)

// answer is one recorded backend answer of a provider's tests: a file of
// internal/provider/NAME/testdata, served with a status and a
// Content-Type.
type answer struct {
	file   string
	status int
	// ctype is the Content-Type; the file's extension's when empty.
	ctype string
}

func (a answer) String() string {
	s := a.file + " " + strconv.Itoa(a.status)
	if a.ctype != "" {
		s += " " + a.ctype
	}
	return s
}

// recorded lists every recorded answer of the provider name's tests: each
// file of its testdata, served with the status its name starts with
// (error_401.json: 401) or 200, and the extra answers its tests serve
// from the same files with another status or Content-Type.
func recorded(t *testing.T, name string, extra ...answer) []answer {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(harness.RepoRoot(t), "internal", "provider", name, "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	var as []answer
	for _, e := range entries {
		if e.IsDir() { // fuzz corpora
			continue
		}
		a := answer{file: e.Name(), status: 200}
		if rest, ok := strings.CutPrefix(e.Name(), "error_"); ok && len(rest) >= 3 {
			if n, err := strconv.Atoi(rest[:3]); err == nil { // error_table.csv is a 200
				a.status = n
			}
		}
		as = append(as, a)
	}
	if len(as) == 0 {
		t.Fatalf("no recorded answers for %s", name)
	}
	return append(as, extra...)
}

// standIn serves recorded answers, each at an address of its own
// (/PROVIDER/N/), so that measurements running at once are answered each
// from its own file whatever path the client appends.
type standIn struct {
	srv  *httptest.Server
	root string
	mu   sync.Mutex
	as   []answer
	dirs []string
}

func newStandIn(t testing.TB) *standIn {
	s := &standIn{root: harness.RepoRoot(t)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// address is the address at which a, of the provider name's testdata, is
// answered.
func (s *standIn) address(name string, a answer) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.as = append(s.as, a)
	s.dirs = append(s.dirs, name)
	return s.srv.URL + "/" + name + "/" + strconv.Itoa(len(s.as)-1)
}

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	i := -1
	if len(parts) >= 2 {
		i, _ = strconv.Atoi(parts[1])
	}
	s.mu.Lock()
	if i < 0 || i >= len(s.as) || s.dirs[i] != parts[0] {
		s.mu.Unlock()
		http.Error(w, "no such answer: "+r.URL.Path, http.StatusTeapot)
		return
	}
	a, name := s.as[i], s.dirs[i]
	s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(s.root, "internal", "provider", name, "testdata", a.file))
	if err != nil {
		http.Error(w, err.Error(), http.StatusTeapot)
		return
	}
	ctype := a.ctype
	if ctype == "" {
		switch filepath.Ext(a.file) {
		case ".csv":
			ctype = "text/csv; charset=utf-8"
		case ".json":
			ctype = "application/json; charset=utf-8"
		case ".html":
			ctype = "text/html"
		default:
			ctype = "text/plain"
		}
	}
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(a.status)
	_, _ = w.Write(data)
}

// secrets holds the same Secrets twice: as Kubernetes has them, for
// Argo's providers (a fake clientset, in the controller's namespace), and
// as --credentials-dir mounts them, for canaryd's.
type secrets struct {
	root string
	mu   sync.Mutex
	objs []*corev1.Secret
}

func newSecrets(t testing.TB) *secrets { return &secrets{root: t.TempDir()} }

// add writes the Secret name with its keys.
func (s *secrets) add(t testing.TB, name string, keys map[string]string) {
	t.Helper()
	dir := filepath.Join(s.root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{}
	for k, v := range keys {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		data[k] = []byte(v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs = append(s.objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: defaults.Namespace()}, Data: data})
}

// kube is a clientset holding the Secrets, as Argo's tests make one.
func (s *secrets) kube() kubernetes.Interface {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs := make([]runtime.Object, len(s.objs))
	for i, o := range s.objs {
		objs[i] = o
	}
	return k8sfake.NewClientset(objs...)
}

// dir is the Secrets as --credentials-dir reads them.
func (s *secrets) dir(t testing.TB) *credentials.Dir {
	t.Helper()
	d, err := credentials.New(s.root, credentials.Options{MaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// quiet is the logger Argo's providers are given: their warnings (v1's
// deprecation at every Datadog measurement) are not the test's output.
func quiet() log.Entry {
	l := log.New()
	l.SetOutput(io.Discard)
	return *log.NewEntry(l)
}

// outcome is what a measurement shows: its phase, its value and, for an
// Error, its message.
type outcome struct {
	phase, value, message string
}

func argoOutcome(m v1alpha1.Measurement) outcome {
	return outcome{phase: string(m.Phase), value: m.Value, message: m.Message}
}

// measureOnce measures src once and judges the result with the conditions,
// as canaryd's engine does: an error is an Error measurement.
func measureOnce(t *testing.T, src analysis.Source, success, failure string) outcome {
	t.Helper()
	judge, errs := condition.Compile(success, failure)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	obs := src.Measure(context.Background(), time.Now())
	if obs.Err != nil {
		return outcome{phase: string(api.PhaseError), message: obs.Err.Error()}
	}
	phase, err := judge.Judge(obs.Value)
	o := outcome{phase: string(phase), value: obs.Display}
	if err != nil {
		o.phase, o.message = string(api.PhaseError), err.Error()
	}
	return o
}

// differs says which row of docs/differences.md (its first column's
// start) an outcome of canaryd follows rather than Argo's, "" for none,
// and whether canaryd's outcome is the one the row describes.
type differs func(a answer, conds [2]string, got, want outcome) (row string, ok bool)

// evaluatedRow is the row of docs/differences.md by which canaryd keeps
// the value of a measurement whose condition could not be evaluated.
const evaluatedRow = "a measurement whose condition could not be evaluated has an empty `value`"

// compare holds canaryd's outcome of an answer to Argo's: the same phase,
// value and message. Where they differ, the difference must be a row of
// docs/differences.md, and canaryd's outcome the row's.
func compare(t *testing.T, a answer, conds [2]string, got, want outcome, d differs) {
	t.Helper()
	if got == want {
		return
	}
	// Argo drops the value of a measurement whose condition could not be
	// evaluated; canaryd keeps it.
	if want.phase == string(api.PhaseError) && want.value == "" && got.phase == want.phase && got.value != "" &&
		strings.HasPrefix(got.message, "could not evaluate ") {
		if !documented(t, evaluatedRow) {
			t.Errorf("no row of docs/differences.md starts %q", evaluatedRow)
		}
		got.value = ""
		if got == want {
			return
		}
	}
	row, ok := "", false
	if d != nil {
		row, ok = d(a, conds, got, want)
	}
	switch {
	case row == "":
		t.Errorf("%s, %q / %q:\ncanaryd %s %q %q\nArgo    %s %q %q", a, conds[0], conds[1],
			got.phase, got.value, got.message, want.phase, want.value, want.message)
	case !documented(t, row):
		t.Errorf("%s: no row of docs/differences.md starts %q", a, row)
	case !ok:
		t.Errorf("%s, %q / %q: canaryd differs from Argo, but not as docs/differences.md's row %q says:\ncanaryd %s %q %q\nArgo    %s %q %q",
			a, conds[0], conds[1], row, got.phase, got.value, got.message, want.phase, want.value, want.message)
	}
}

// typesRow is the row of docs/differences.md by which canaryd's messages
// name its own Go types, not those of Argo's source.
const typesRow = "a message about an answer that does not decode"

// sameButTypes tells whether got and want are the same Error but for the
// Go types encoding/json names after "cannot unmarshal" (Argo's
// datadogResponseV1, nrdb.NRDBResult; canaryd's own).
func sameButTypes(got, want outcome) bool {
	const words = "cannot unmarshal"
	g, _, okG := strings.Cut(got.message, words)
	w, _, okW := strings.Cut(want.message, words)
	return okG && okW && g == w && got.phase == want.phase && got.value == want.value
}

var differences struct {
	once sync.Once
	rows []string
	err  error
}

// documented tells whether docs/differences.md has a row whose first
// column starts with row.
func documented(t *testing.T, row string) bool {
	t.Helper()
	differences.once.Do(func() {
		var b []byte
		b, differences.err = os.ReadFile(filepath.Join(harness.RepoRoot(t), "docs", "differences.md"))
		for _, line := range strings.Split(string(b), "\n") {
			if first, ok := strings.CutPrefix(line, "| "); ok {
				differences.rows = append(differences.rows, first)
			}
		}
	})
	if differences.err != nil {
		t.Fatal(differences.err)
	}
	for _, r := range differences.rows {
		if strings.HasPrefix(r, row) {
			return true
		}
	}
	return false
}
