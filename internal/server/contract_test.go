package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/canaryd/canaryd"
)

// contract is openapi.yaml, loaded once per test binary: every response of
// the in-process tests is checked against it (see checkResponse), so the
// document and the handlers cannot drift apart unnoticed.
type contract struct {
	doc    *openapi3.T
	router routers.Router
	// covered records "METHOD /path status" of every response checked,
	// for TestContractCoverage.
	mu      sync.Mutex
	covered map[string]bool
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(canaryd.OpenAPI())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router, covered: map[string]bool{}}, nil
})

func mustContract(t testing.TB) *contract {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return c
}

// checkResponse fails the test unless the response (status, headers, body)
// is one that openapi.yaml documents for the request's operation. Stream
// bodies are checked event by event with checkEvent instead.
func checkResponse(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	c := mustContract(t)
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		// Unknown routes and methods answer with problems that no
		// operation documents; they must still be problems.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			t.Errorf("contract: %s %s: no operation in openapi.yaml (%v), yet answered %d", req.Method, req.URL.Path, err, status)
			return
		}
		checkSchema(t, "Problem", body)
		return
	}
	c.mu.Lock()
	c.covered[route.Method+" "+route.Path+" "+strconv.Itoa(status)] = true
	c.mu.Unlock()
	ct := header.Get("Content-Type")
	stream := strings.HasPrefix(ct, "application/x-ndjson") || strings.HasPrefix(ct, "text/event-stream")
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			ExcludeResponseBody:   stream,
			MultiError:            true,
		},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("contract: %s %s → %d (%s) does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, status, ct, err, truncate(body))
	}
}

// checkSchema fails the test unless data is valid against the named
// component schema.
func checkSchema(t testing.TB, name string, data []byte) {
	t.Helper()
	c := mustContract(t)
	ref, ok := c.doc.Components.Schemas[name]
	if !ok {
		t.Fatalf("contract: no schema %q in openapi.yaml", name)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Errorf("contract: %s is not JSON: %v: %s", name, err, truncate(data))
		return
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		t.Errorf("contract: not a valid %s: %v\n%s", name, err, truncate(data))
	}
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// readAll reads a response body, for callers that then check it.
func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return buf.Bytes()
}
