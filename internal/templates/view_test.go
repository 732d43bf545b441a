package templates

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/web"
)

// vault is a provider other than Prometheus whose credentials are in
// fields of its own: the view masks them because it declares them.
type vault struct{}

func (vault) Source(json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	return nil, nil, nil
}
func (vault) Languages() map[string]lang.Language { return map[string]lang.Language{} }
func (vault) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{}
}
func (vault) CredentialFields() []provider.CredentialField {
	return []provider.CredentialField{{Path: "auth.token"}, {Path: "keys[].secret"}}
}

// TestViewMasksDeclaredCredentials: the template view masks the fields
// each provider declares credentials, whatever they are called (web's
// headers and url, a test provider's own fields), leaves the rest, and
// masks every string of a provider the store does not know.
func TestViewMasksDeclaredCredentials(t *testing.T) {
	w, err := web.New(web.Options{CheckOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	providers := provider.NewRegistry().Register("web", w).Register("datadog", vault{})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.yaml": `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: view}
spec:
  metrics:
  - name: health
    successCondition: result == true
    provider:
      web:
        url: https://user:hunter2@status.example.com/health
        jsonPath: "{$.ok}"
        headers:
        - {key: Authorization, value: Bearer s3cr3t-web}
        - {key: Accept, value: application/json}
  - name: stored
    provider:
      datadog:
        address: https://vault.example.com
        auth: {token: s3cr3t-vault, user: ci}
        keys: [{name: a, secret: s3cr3t-key}]
`})
	s := load(t, dir, Options{Providers: providers})
	tmpl, ok := s.Get("view")
	if !ok {
		t.Fatalf("not loaded: %+v", s.List())
	}
	raw, err := json.Marshal(tmpl.View())
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	for _, secret := range []string{"hunter2", "s3cr3t-web", "s3cr3t-vault", "s3cr3t-key"} {
		if strings.Contains(got, secret) {
			t.Errorf("the view shows %q: %s", secret, got)
		}
	}
	for _, shown := range []string{"status.example.com/health", `"value":"application/json"`, `"user":"ci"`, `"name":"a"`, "https://vault.example.com"} {
		if !strings.Contains(got, shown) {
			t.Errorf("the view lacks %s: %s", shown, got)
		}
	}

	// A provider the store's providers do not know declares nothing: all
	// of its strings are masked.
	unknown := &Template{Document: tmpl.Document, providers: provider.NewRegistry().Register("web", w)}
	raw, _ = json.Marshal(unknown.View())
	if strings.Contains(string(raw), "vault.example.com") || strings.Contains(string(raw), "s3cr3t-key") {
		t.Errorf("an unknown provider's configuration is shown: %s", raw)
	}
}
