package main

import (
	"strings"
	"testing"
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

// validate checks a web metric's configuration, not its url, which the
// --web-allow of the canaryd serving it decides; run, which would send
// the request, refuses it naming that flag.
func TestWebMetricOnTheCommandLine(t *testing.T) {
	if got := runCLI(t, webSpec, "validate", "-f", "-"); got.code != 0 {
		t.Errorf("validate: exit %d\n%s", got.code, got.stderr)
	}
	bad := strings.Replace(webSpec, "method: POST", "method: DELETE", 1)
	if got := runCLI(t, bad, "validate", "-f", "-"); got.code != exitUsage || !strings.Contains(got.stderr, "metrics[0].provider.web.method") {
		t.Errorf("validate of a DELETE: exit %d\n%s", got.code, got.stderr)
	}
	got := runCLI(t, webSpec, "run", "-f", "-")
	if got.code != exitUsage || !strings.Contains(got.stderr, "metrics[0].provider.web.url") || !strings.Contains(got.stderr, "--web-allow") {
		t.Errorf("run: exit %d\n%s", got.code, got.stderr)
	}
}
