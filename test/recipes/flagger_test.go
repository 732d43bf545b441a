package recipes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/canaryd/canaryd/test/internal/harness"
)

// flaggerWebhook is a webhook of a Canary's analysis, with the fields of
// Flagger's v1beta1 CanaryWebhook; decoding refuses any other field.
type flaggerWebhook struct {
	Name      string            `json:"name"`
	Type      string            `json:"type"`
	URL       string            `json:"url"`
	Timeout   string            `json:"timeout,omitempty"`
	MuteAlert bool              `json:"muteAlert,omitempty"`
	Retries   int               `json:"retries,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// flaggerPayload is Flagger's CanaryWebhookPayload.
type flaggerPayload struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Phase     string            `json:"phase"`
	Checksum  string            `json:"checksum"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// flaggerDefaultTimeout is what Flagger waits for a hook without timeout.
const flaggerDefaultTimeout = 10 * time.Second

// callFlaggerWebhook does what Flagger's callWebhook does: POST the payload
// as JSON under the hook's timeout (10 s when unset), and count a status
// above 202 as a failure. It returns whether the hook passed, the status
// (0 when there was no answer) and the body.
func callFlaggerWebhook(t *testing.T, hook flaggerWebhook, payload flaggerPayload) (bool, int, string) {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	timeout := flaggerDefaultTimeout
	if hook.Timeout != "" {
		if timeout, err = time.ParseDuration(hook.Timeout); err != nil {
			t.Fatalf("hook %s: timeout %q: %v", hook.Name, hook.Timeout, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode <= 202, resp.StatusCode, string(body)
}

// TestFlagger sends each webhook of the Canary as Flagger would for the
// Canary in a healthy and in a failing namespace: both pass for echo-good
// (200) and fail for echo-bad (412).
func TestFlagger(t *testing.T) {
	t.Parallel()
	doc := readExample(t, "flagger/canary.yaml")
	var canary struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Analysis struct {
				Webhooks json.RawMessage `json:"webhooks"`
			} `json:"analysis"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(doc, &canary); err != nil {
		t.Fatalf("flagger/canary.yaml: %v", err)
	}
	if canary.APIVersion != "flagger.app/v1beta1" || canary.Kind != "Canary" {
		t.Fatalf("apiVersion %q kind %q, want flagger.app/v1beta1 Canary", canary.APIVersion, canary.Kind)
	}
	if canary.Metadata.Namespace != exampleNamespace {
		t.Fatalf("the Canary's namespace is %q, want %q", canary.Metadata.Namespace, exampleNamespace)
	}
	var hooks []flaggerWebhook
	strictJSON(t, "flagger/canary.yaml webhooks", canary.Spec.Analysis.Webhooks, &hooks)
	if len(hooks) == 0 {
		t.Fatal("the Canary has no webhooks")
	}
	w := newWorld(t)

	for _, hook := range hooks {
		// A gate stops its analysis at ?timeout= and answers 503 itself;
		// that must come before Flagger hangs up.
		u, err := url.Parse(hook.URL)
		if err != nil {
			t.Fatal(err)
		}
		flaggerWaits := flaggerDefaultTimeout
		if hook.Timeout != "" {
			flaggerWaits, _ = time.ParseDuration(hook.Timeout)
		}
		gateTimeout, err := time.ParseDuration(u.Query().Get("timeout"))
		if err != nil || gateTimeout >= flaggerWaits {
			t.Errorf("hook %s: ?timeout=%s must be a duration below Flagger's %v", hook.Name, u.Query().Get("timeout"), flaggerWaits)
		}
		// And the template, as shipped (the tests shorten intervals), must
		// be able to finish before ?timeout=.
		if d := templateDuration(t, path.Base(u.Path)); d >= gateTimeout {
			t.Errorf("hook %s: template %s takes at least %v, not less than ?timeout=%v", hook.Name, path.Base(u.Path), d, gateTimeout)
		}
		for _, tc := range []struct {
			namespace  string
			wantPass   bool
			wantStatus int
		}{
			{harness.EchoGood, true, http.StatusOK},
			{harness.EchoBad, false, http.StatusPreconditionFailed},
		} {
			t.Run(hook.Name+"/"+tc.namespace, func(t *testing.T) {
				h := hook
				h.URL = inClusterToTest(t, hook.URL, w.open)
				// The Canary as if it lived in the fixture's namespace:
				// Flagger sends its namespace, and metadata naming the
				// Canary's namespace names this one.
				h.Metadata = map[string]string{}
				for k, v := range hook.Metadata {
					if k == "namespace" && v == canary.Metadata.Namespace {
						v = tc.namespace
					}
					h.Metadata[k] = v
				}
				payload := flaggerPayload{
					Name: canary.Metadata.Name, Namespace: tc.namespace,
					Phase: "Progressing", Checksum: "5f6c7d8e9a", Metadata: h.Metadata,
				}
				pass, status, body := callFlaggerWebhook(t, h, payload)
				if pass != tc.wantPass || status != tc.wantStatus {
					t.Errorf("pass=%v status %d, want pass=%v status %d: %s\n%s", pass, status, tc.wantPass, tc.wantStatus, body, w.logs())
				}
			})
		}
	}
}

// templateDuration is the least time the named template of the base or the
// examples takes to run to its end as shipped: for its slowest metric,
// initialDelay plus (count-1) intervals.
func templateDuration(t *testing.T, name string) time.Duration {
	t.Helper()
	root := harness.RepoRoot(t)
	var longest time.Duration
	found := false
	for _, dir := range []string{harness.BaseTemplatesDir, harness.ExampleTemplatesDir} {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					Metrics []struct {
						Interval     string `json:"interval"`
						InitialDelay string `json:"initialDelay"`
						Count        int    `json:"count"`
					} `json:"metrics"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc.Metadata.Name != name {
				continue
			}
			found = true
			for _, m := range doc.Spec.Metrics {
				var d time.Duration
				if m.InitialDelay != "" {
					d, _ = time.ParseDuration(m.InitialDelay)
				}
				if m.Count > 1 {
					interval, err := time.ParseDuration(m.Interval)
					if err != nil {
						t.Fatalf("%s: interval %q: %v", f, m.Interval, err)
					}
					d += time.Duration(m.Count-1) * interval
				}
				longest = max(longest, d)
			}
		}
	}
	if !found {
		t.Fatalf("no template %q in %s or %s", name, harness.BaseTemplatesDir, harness.ExampleTemplatesDir)
	}
	return longest
}
