package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/canaryd/canaryd/api"
)

// Problem types. A URN names each kind of problem without claiming a web
// address that would have to be kept alive; openapi.yaml lists them.
const (
	typePrefix              = "urn:canaryd:problem:"
	ProblemInvalidInput     = typePrefix + "invalid-input"
	ProblemUnsupportedMedia = typePrefix + "unsupported-media-type"
	ProblemTooLarge         = typePrefix + "payload-too-large"
	ProblemNotFound         = typePrefix + "not-found"
	ProblemMethodNotAllowed = typePrefix + "method-not-allowed"
	ProblemUnauthorized     = typePrefix + "unauthorized"
	ProblemTooManyAnalyses  = typePrefix + "too-many-analyses"
	ProblemTooManyStreams   = typePrefix + "too-many-streams"
	ProblemTooManyReports   = typePrefix + "too-many-reports"
	ProblemTooManyDecodes   = typePrefix + "too-many-decodes"
	ProblemShuttingDown     = typePrefix + "shutting-down"
	ProblemInternal         = typePrefix + "internal"
)

const (
	problemContentType = "application/problem+json"
	jsonContentType    = "application/json"
	// retryAfterTooMany is the Retry-After of a 429, in seconds: analyses
	// last minutes, and a pipeline that retries every few seconds is fine.
	retryAfterTooMany = 5
	// retryAfterShuttingDown is the Retry-After of a 503 while draining:
	// long enough for a load balancer to route to another replica.
	retryAfterShuttingDown = 10
)

// problem builds a problem document; title is the status' text.
func problem(status int, typ, detail string) api.Problem {
	return api.Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail}
}

// invalid is the 400 for bad input, with every field error.
func invalid(detail string, errs []api.FieldError) api.Problem {
	p := problem(http.StatusBadRequest, ProblemInvalidInput, detail)
	p.Errors = errs
	return p
}

func invalidInput(errs []api.FieldError) api.Problem {
	noun := "problems"
	if len(errs) == 1 {
		noun = "problem"
	}
	return invalid(fmt.Sprintf("the request has %d %s; see errors", len(errs), noun), errs)
}

// writeProblem writes p as the response. It is the one place error
// responses are written.
func writeProblem(w http.ResponseWriter, r *http.Request, p api.Problem) {
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	p.Errors = withDetails(p.Errors)
	h := w.Header()
	h.Set("Content-Type", problemContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	switch p.Status {
	case http.StatusTooManyRequests:
		h.Set("Retry-After", strconv.Itoa(retryAfterTooMany))
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", strconv.Itoa(retryAfterShuttingDown))
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="canaryd"`)
	}
	w.WriteHeader(p.Status)
	// The client may be gone; there is no one left to tell.
	_ = api.NewEncoder(w).Encode(p)
}

// writeJSON writes v as a JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = api.NewEncoder(w).Encode(v)
}

// withDetails gives each field error RFC 9457's detail, the message again.
// The errors are copied: they may be shared (a template's load errors).
func withDetails(errs []api.FieldError) []api.FieldError {
	if len(errs) == 0 {
		return errs
	}
	out := make([]api.FieldError, len(errs))
	for i, e := range errs {
		e.Detail = e.Message
		out[i] = e
	}
	return out
}

// bodyPointer is the JSON Pointer of the request body as a whole.
const bodyPointer = ""

// inBody returns e pointing at the request body as a whole.
func inBody(e api.FieldError) api.FieldError {
	e.Pointer = ptr(bodyPointer)
	return e
}
