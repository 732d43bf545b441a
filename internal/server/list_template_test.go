package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// TestListTemplateFilter checks ?template= on the list of the analyses
// held in memory.
func TestListTemplateFilter(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}})
	named := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo", yamlType, seed(t)).analysis(t)
	bare := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo")).analysis(t)
	if named.Template != "success-rate-args" || bare.Template != "" {
		t.Fatalf("templates %q and %q", named.Template, bare.Template)
	}
	ids := func(path string) []string {
		var l server.AnalysisList
		r := s.do(http.MethodGet, path, "", "")
		if err := json.Unmarshal(r.body, &l); err != nil || r.status != http.StatusOK {
			t.Fatalf("%s: %d %v", path, r.status, err)
		}
		var out []string
		for _, a := range l.Analyses {
			out = append(out, a.ID)
		}
		return out
	}
	if got := ids("/v1/analyses?template=success-rate-args"); len(got) != 1 || got[0] != named.ID {
		t.Errorf("?template=success-rate-args: %q, want [%s]", got, named.ID)
	}
	if got := ids("/v1/analyses?template=other"); len(got) != 0 {
		t.Errorf("?template=other: %q", got)
	}
	if got := ids("/v1/analyses"); len(got) != 2 {
		t.Errorf("no filter: %q", got)
	}
	for _, q := range []string{"template=", "template=a&template=b", "template=" + strings.Repeat("t", 254)} {
		r := s.do(http.MethodGet, "/v1/analyses?"+q, "", "")
		p := r.problem(t)
		if r.status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "template" {
			t.Errorf("?%s: %d %+v", q[:min(len(q), 40)], r.status, p.Errors)
		}
	}
}
