package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// webSpec is a bare spec with a web metric.
const webSpec = `metrics:
- name: budget
  successCondition: result > 0.2
  provider:
    web:
      url: https://slo.example.com/api/budget
      method: POST
      jsonBody: {window: 1h}
      jsonPath: "{$.remaining}"
`

// validate checks a web metric's configuration, and its url only
// against the --web-allow prefixes it is given; run, whose operator is the
// person running it, requests any http or https url unless --web-allow
// narrows it.
func TestWebMetricOnTheCommandLine(t *testing.T) {
	if got := runCLI(t, webSpec, "validate", "-f", "-"); got.code != 0 {
		t.Errorf("validate: exit %d\n%s", got.code, got.stderr)
	}
	bad := strings.Replace(webSpec, "method: POST", "method: DELETE", 1)
	if got := runCLI(t, bad, "validate", "-f", "-"); got.code != exitUsage || !strings.Contains(got.stderr, "metrics[0].provider.web.method") {
		t.Errorf("validate of a DELETE: exit %d\n%s", got.code, got.stderr)
	}
	if got := runCLI(t, webSpec, "validate", "-f", "-", "--web-allow", "https://other.example.com/"); got.code != exitUsage || !strings.Contains(got.stderr, "metrics[0].provider.web.url") {
		t.Errorf("validate outside --web-allow: exit %d\n%s", got.code, got.stderr)
	}
	got := runCLI(t, webSpec, "run", "-f", "-", "--web-allow", "https://other.example.com/")
	if got.code != exitUsage || !strings.Contains(got.stderr, "metrics[0].provider.web.url") || !strings.Contains(got.stderr, "--web-allow") {
		t.Errorf("run outside --web-allow: exit %d\n%s", got.code, got.stderr)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"remaining": 0.5}`)
	}))
	defer srv.Close()
	local := strings.Replace(webSpec, "https://slo.example.com", srv.URL, 1)
	if got := runCLI(t, local, "run", "-f", "-"); got.code != 0 || got.analysis.Phase != api.PhaseSuccessful {
		t.Errorf("run, no --web-allow: exit %d %s\n%s", got.code, got.analysis.Phase, got.stderr)
	}
	if got := runCLI(t, local, "run", "-f", "-", "--web-allow", srv.URL+"/api/"); got.code != 0 || got.analysis.Phase != api.PhaseSuccessful {
		t.Errorf("run within --web-allow: exit %d %s\n%s", got.code, got.analysis.Phase, got.stderr)
	}
}
