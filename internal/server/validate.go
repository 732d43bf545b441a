package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/spec"
)

// Validation is the body of POST /v1/validate for a document that would
// run: what `canaryd validate` says of it.
type Validation struct {
	Valid bool `json:"valid"`
	// Summary describes the plan in a sentence: its metrics and their
	// schedules.
	Summary string `json:"summary"`
	// Metrics are the names of its metrics, in order.
	Metrics []string `json:"metrics"`
}

// handleValidate checks the posted document as POST /v1/analyses would
// (parse, arguments, limits, conditions compiled, datasources allowed)
// and runs nothing: a 200 Validation when it would run, else the 400
// problem it would get, each error with the line of the body it is on
// (spec.PointerLine), for an editor to mark.
func handleValidate(in *inputReader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, p := bodyMediaType(r); p != nil {
			writeProblem(w, r, *p)
			return
		}
		// The body is read once here, within the same bounds, and given
		// to the reader again: the lines are found in it.
		body, p := in.readBody(w, r)
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		req, input, p := in.readInput(w, r, queryParams{})
		if p != nil {
			// The lines come from the tree the body was parsed into, once
			// whatever the number of errors.
			if root := bodyRoot(p.Errors, input, body); root != nil {
				for i := range p.Errors {
					if ptr := p.Errors[i].Pointer; ptr != nil {
						p.Errors[i].Line = spec.PointerLine(root, *ptr)
					}
				}
			}
			writeProblem(w, r, *p)
			return
		}
		v := Validation{Valid: true, Metrics: analyses.MetricNames(req.compiled.Plan)}
		v.Summary = describe(req)
		writeJSON(w, http.StatusOK, v)
	})
}

// describe is a sentence on what a valid document would run.
func describe(req *specRequest) string {
	plan := req.compiled.Plan
	var parts []string
	for _, m := range plan.Metrics {
		s := m.Name
		switch {
		case m.Count != nil && *m.Count == 1:
			s += " (once)"
		case m.Count != nil:
			s += fmt.Sprintf(" (%d measurements, every %s)", *m.Count, m.Interval)
		case m.Interval > 0:
			s += fmt.Sprintf(" (every %s until stopped)", m.Interval)
		}
		parts = append(parts, s)
	}
	n := len(plan.Metrics)
	noun := "metrics"
	if n == 1 {
		noun = "metric"
	}
	return strconv.Itoa(n) + " " + noun + ": " + strings.Join(parts, ", ") + "."
}

// bodyRoot is the node tree of body (JSON or YAML), aliases unexpanded,
// for the lines of errs; nil when no error has a pointer, or the body
// does not parse (its problem is on the body). It is the tree
// spec.ParseInput read (input), and the body is read again only when it
// was refused before it was parsed, or for a JSON body, which Parse
// decodes as JSON: as spec.Parse reads YAML (spec.NodeTree), within
// spec.MaxYAMLNodes, no alias followed.
func bodyRoot(errs []api.FieldError, input *spec.Input, body []byte) *yaml.Node {
	if !slices.ContainsFunc(errs, func(e api.FieldError) bool { return e.Pointer != nil }) {
		return nil
	}
	if input != nil {
		return input.Tree()
	}
	return spec.NodeTree(body)
}
