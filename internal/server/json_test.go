package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestJSONAsWritten checks that the JSON canaryd writes has <, > and & as
// they are, not as \u003c, \u003e and \u0026: a Failed analysis' message
// in a response, a stream and a webhook delivery, and a problem's.
func TestJSONAsWritten(t *testing.T) {
	prom := promtest.Start(t)
	rc := newReceiver(t, nil)
	s := start(t, options{prometheus: []string{prom.URL}, webhookAllow: []string{rc.prefix()}})
	const message = `failed (2) > failureLimit (1)`
	escaped := []string{`\u003c`, `\u003e`, `\u0026`}
	check := func(what string, data []byte, want string) {
		t.Helper()
		if !strings.Contains(string(data), want) {
			t.Errorf("%s does not read %s: %s", what, want, truncate(data))
		}
		for _, e := range escaped {
			if strings.Contains(string(data), e) {
				t.Errorf("%s has %s: %s", what, e, truncate(data))
			}
		}
	}

	resp := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, seed(t))
	if a := resp.analysis(t); a.Phase != api.PhaseFailed {
		t.Fatalf("phase %s, want Failed", a.Phase)
	}
	check("the response", resp.body, message)
	check("the analysis read again", s.do(http.MethodGet, "/v1/analyses/"+resp.analysis(t).ID, "", "").body, message)

	for _, accept := range []string{"application/x-ndjson", "text/event-stream"} {
		_, stream := s.openStream(context.Background(), http.MethodPost, "/v1/analyses?arg.namespace=echo-bad", yamlType, seed(t), accept)
		data := readAll(t, stream.Body)
		stream.Body.Close()
		check("the "+accept+" stream", data, message)
	}

	started := s.do(http.MethodPost, "/v1/analyses?arg.namespace=echo-bad&webhook="+url.QueryEscape(rc.prefix()+"/ci"), yamlType, seed(t))
	if started.status != http.StatusAccepted {
		t.Fatalf("with a webhook: status %d: %s", started.status, started.body)
	}
	check("the webhook's completed event", rc.wait(t, 1)[0].body, message)

	bad := s.do(http.MethodPost, "/v1/evaluate", jsonType, `{"metrics": [{"name": "m", "successCondition": "result[0] >>= 1 && <", "provider": {"prometheus": {"query": "up"}}}]}`)
	if bad.status != http.StatusBadRequest {
		t.Fatalf("a condition that does not compile: status %d: %s", bad.status, bad.body)
	}
	check("the problem", bad.body, `Operator(\">`)
}
