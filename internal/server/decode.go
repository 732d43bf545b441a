package server

import (
	"context"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/spec"
)

// Media types of request bodies. JSON is YAML's subset, but a body sent as
// JSON is held to JSON, so a client's mistake is named as such.
var (
	jsonMediaTypes = []string{"application/json"}
	yamlMediaTypes = []string{"application/yaml", "application/x-yaml", "text/yaml"}
)

// acceptedMediaTypes lists the media types of bodies, for the 415.
var acceptedMediaTypes = strings.Join(append(slices.Clone(jsonMediaTypes), yamlMediaTypes...), ", ")

// argPrefix starts the query parameters that override arguments:
// arg.namespace=echo.
const argPrefix = "arg."

// inputReader turns a request into a compiled spec: media type, size limit,
// strict decoding, argument overrides, validation and the metrics' sources,
// with every problem reported at once.
type inputReader struct {
	maxBody int64
	// decodes bounds the bodies decoded at once (Options.MaxDecodes).
	decodes *decodeGate
	sources compile.Providers
	// checkWebhook says why a webhook URL is refused (analyses.Analyses.CheckWebhook).
	checkWebhook func(rawURL string) error
	// planner compiles the specs, with the service's limits and its
	// shared conditions (Argo's web provider posts the same body at every
	// interval, and every analysis of a template carries the same
	// conditions); sources are its providers.
	planner *compile.Planner
	// now tells the time that backtest windows are relative to.
	now func() time.Time
	// compiled keeps the specs compiled last, by what they were compiled
	// from: a body (or a template's arguments) sent again is answered
	// without parsing, validating or compiling it again.
	compiled *compiledCache
}

// compileOptions are the options of compile.Compile on a route: the limits,
// without the bound on an analysis' duration for a backtest, which runs in
// virtual time within its own window.
func (in *inputReader) compileOptions(params queryParams) []compile.Option {
	return in.planner.Options(params.backtest)
}

// specRequest is a request to run or evaluate a spec, decoded and checked.
type specRequest struct {
	compiled *compile.Compiled
	// template is the document's name when it is a template.
	template string
	// round makes the plan a round runs, once per compiled spec; nil
	// until roundPlan is called, unless the spec came from the cache.
	round *roundPlan
	// wait asks for the finished analysis in the response.
	wait bool
	// webhook is where the caller asked the events to be sent, checked;
	// nil for none.
	webhook *analyses.WebhookRequest
	// timeout is the caller's deadline (?timeout=, Request-Timeout); 0
	// when it set none.
	timeout time.Duration
	// caller describes the caller for the log, when it said who it is (a
	// Flagger webhook payload); nil otherwise.
	caller []zap.Field
	// window is a backtest's start, end and every, as given in the query
	// (rawWindow) and then read (see readWindow).
	rawWindow map[string]string
	window    backtestWindow
	// document is the posted document as received (nil for a named
	// template), and args the arguments the caller gave: what a store
	// keeps of the analysis (analyses.AnalysesOptions.Store).
	document []byte
	args     map[string]string
}

// queryParams says which query parameters, besides arg.NAME, a route takes.
type queryParams struct {
	wait, webhook, timeout bool
	// backtest takes start, end and every.
	backtest bool
}

// requestReader turns a request into a specRequest, or into the problem to
// answer with, having started nothing. Each route that runs a spec has one:
// read for a posted document, readTemplate for a named template.
type requestReader func(w http.ResponseWriter, r *http.Request) (*specRequest, *api.Problem)

// admit reads a request to run a spec with read. When the service is
// shutting down or the request is refused, it answers with the problem and
// returns false, having started nothing.
func admit(svc *analyses.Analyses, read requestReader, w http.ResponseWriter, r *http.Request) (*specRequest, bool) {
	if svc.Draining() {
		writeProblem(w, r, shuttingDown())
		return nil, false
	}
	req, p := read(w, r)
	if p != nil {
		writeProblem(w, r, *p)
		return nil, false
	}
	return req, true
}

// document returns the reader of routes whose body is the document to run.
func (in *inputReader) document(params queryParams) requestReader {
	return func(w http.ResponseWriter, r *http.Request) (*specRequest, *api.Problem) {
		return in.read(w, r, params)
	}
}

// read decodes and compiles the spec in r's body. On failure it returns the
// problem to answer with; nothing has been started.
func (in *inputReader) read(w http.ResponseWriter, r *http.Request, params queryParams) (*specRequest, *api.Problem) {
	req, _, p := in.readInput(w, r, params)
	return req, p
}

// readInput is read, and the body as spec.ParseInput read it, when it was
// parsed (not when a compiled spec was cached for it, nor when it was
// refused before), for what is said of its problems: it is not read
// again for them.
func (in *inputReader) readInput(w http.ResponseWriter, r *http.Request, params queryParams) (*specRequest, *spec.Input, *api.Problem) {
	isJSON, p := bodyMediaType(r)
	if p != nil {
		return nil, nil, p
	}
	body, p := in.readBody(w, r)
	if p != nil {
		return nil, nil, p
	}

	req := &specRequest{document: body}
	overrides, errs := req.query(r.URL.RawQuery, params, in.checkWebhook)
	req.args = overrides
	errs = append(errs, req.timeoutHeader(r, params)...)
	if params.backtest {
		errs = append(errs, req.readWindow(params, in.now())...)
	}

	var key []byte
	var keyBytes [1024]byte // the key of a body of up to about a kilobyte, without an allocation
	cacheable := len(body) <= maxCachedBody
	if cacheable {
		mediaType := []byte("yaml")
		if isJSON {
			mediaType = []byte("json")
		}
		key = appendKey(keyBytes[:0], params, overrides, mediaType, body)
		if e, ok := in.compiled.Get(nil, key); ok && len(errs) == 0 {
			// Nothing is decoded: no decode slot is taken.
			req.compiled, req.template, req.round = e.compiled, e.template, e.round
			return req, nil, nil
		}
	}

	if p := in.acquireDecode(r.Context()); p != nil {
		return nil, nil, p
	}
	defer in.decodes.release()
	if isJSON {
		if err := spec.CheckJSON(body); err != nil {
			errs = append(errs, inBody(api.FieldError{Field: fieldBody, Message: err.Error()}))
			return nil, nil, ptr(invalidInput(errs))
		}
	}
	// The body is read once: its problems' pointers, its providers'
	// configurations and, for /v1/validate, its lines come from input.
	doc, input, problems := spec.ParseInput(body)
	if doc == nil {
		problems = append(problems, compile.ShapeProblems(input, in.sources)...)
		return nil, input, ptr(invalidInput(append(errs, input.Locate(problems)...)))
	}
	// A document whose only problems are unknown fields is compiled still,
	// as compile.ParseAndCompile does: a provider's configuration is its
	// provider's to decode, and its typos are listed with the document's.
	compiled, more := compile.Compile(doc, overrides, in.sources, in.compileOptions(params)...)
	errs = append(errs, input.Locate(append(problems, more...))...)
	if len(errs) > 0 {
		return nil, input, ptr(invalidInput(errs))
	}
	req.compiled = compiled
	if doc.Kind == spec.KindAnalysisTemplate || doc.Kind == spec.KindClusterAnalysisTemplate {
		req.template = doc.Metadata.Name
	}
	if cacheable {
		req.round = &roundPlan{}
		in.compiled.Add(nil, key, compiledEntry{compiled: req.compiled, template: req.template, round: req.round})
	}
	return req, input, nil
}

func ptr[T any](v T) *T { return &v }

// acquireDecode takes one of the MaxDecodes slots for decoding a body
// that has been read, waiting for one as decodeGate allows, or returns the
// 429: a burst of costly bodies holds no more memory than the bound's
// worth, and no more requests wait than MaxDecodeWaiters. When it returns
// no problem, the caller releases the slot (in.decodes.release) once.
func (in *inputReader) acquireDecode(ctx context.Context) *api.Problem {
	if !in.decodes.acquire(ctx) {
		return ptr(tooManyDecodes(int64(cap(in.decodes.slots))))
	}
	return nil
}

// decodeGate bounds the bodies decoded at once to its slots' capacity. A
// request that finds every slot taken waits for one, at most wait, unless
// maxWaiters requests wait already.
type decodeGate struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiters int64
	wait       time.Duration
	// gauge shows waiting (canaryd_decodes_waiting).
	gauge prometheus.Gauge
}

func newDecodeGate(slots, maxWaiters int, wait time.Duration, gauge prometheus.Gauge) *decodeGate {
	return &decodeGate{slots: make(chan struct{}, slots), maxWaiters: int64(maxWaiters), wait: wait, gauge: gauge}
}

// acquire takes a slot, waiting as the gate allows, and reports whether it
// did; a slot taken is given back with release, once.
func (g *decodeGate) acquire(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if g.waiting.Add(1) > g.maxWaiters {
		g.waiting.Add(-1)
		return false
	}
	g.gauge.Inc()
	defer func() {
		g.gauge.Dec()
		g.waiting.Add(-1)
	}()
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// release gives back a slot acquire took.
func (g *decodeGate) release() { <-g.slots }

// tooManyDecodes is the 429 beyond MaxDecodes.
func tooManyDecodes(max int64) api.Problem {
	return problem(http.StatusTooManyRequests, ProblemTooManyDecodes, fmt.Sprintf(
		"%d request bodies are being decoded, the most this canaryd decodes at once (limits.MaxDecodes); retry later", max))
}

// bodyMediaType checks the request's Content-Type and reports whether it
// is JSON.
func bodyMediaType(r *http.Request) (isJSON bool, p *api.Problem) {
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" {
		// What Argo Rollouts' web provider and most clients send, read
		// without mime's parser.
		return true, nil
	}
	accepted := acceptedMediaTypes
	if ct == "" {
		return false, ptr(problem(http.StatusUnsupportedMediaType, ProblemUnsupportedMedia,
			"the request has no Content-Type; send the document as one of "+accepted))
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
	case slices.Contains(jsonMediaTypes, mt):
		return true, nil
	case slices.Contains(yamlMediaTypes, mt):
		return false, nil
	}
	return false, ptr(problem(http.StatusUnsupportedMediaType, ProblemUnsupportedMedia,
		fmt.Sprintf("Content-Type %q is not accepted; send the document as one of %s", ct, accepted)))
}

// fieldBody is the field of a problem with the request body as a whole.
const fieldBody = "body"

// readBody reads the whole body within the size limit and a deadline of
// its own, and refuses a body that is not UTF-8 (RFC 8259 requires it of
// JSON, and canaryd of YAML too) before anything decodes it: decoders
// would quietly turn the bytes into U+FFFD, and the analysis would run on
// something the caller did not send.
func (in *inputReader) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *api.Problem) {
	tooLarge := func() *api.Problem {
		msg := fmt.Sprintf("the request body is larger than the limit of %d bytes", in.maxBody)
		p := problem(http.StatusRequestEntityTooLarge, ProblemTooLarge, msg)
		p.Errors = []api.FieldError{inBody(api.FieldError{Field: fieldBody, Message: msg})}
		return &p
	}
	if r.ContentLength > in.maxBody {
		return nil, tooLarge()
	}
	// A slow body must not hold a connection for ever; the deadline is
	// lifted afterwards, since waits and streams read nothing for as long
	// as their analysis lasts. Not every ResponseWriter supports it
	// (httptest's recorder does not); then the server's limits apply.
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	body, err := readAtMost(r.Body, in.maxBody+1, r.ContentLength)
	if err != nil {
		return nil, ptr(invalidInput([]api.FieldError{inBody(api.FieldError{Field: fieldBody,
			Message: "the request body could not be read: " + err.Error()})}))
	}
	if int64(len(body)) > in.maxBody {
		return nil, tooLarge()
	}
	if at := invalidUTF8(body); at >= 0 {
		line, col := spec.ByteLine(body, int64(at)+1)
		return nil, ptr(invalidInput([]api.FieldError{inBody(api.FieldError{Field: fieldBody, Message: fmt.Sprintf(
			"the request body is not valid UTF-8 (line %d, column %d, byte %d): JSON and YAML bodies must be UTF-8 text (RFC 8259)",
			line, col, at+1)})}))
	}
	return body, nil
}

// readAtMost reads r to its end, or up to limit bytes, as
// io.ReadAll(io.LimitReader(r, limit)) does, into a buffer the size of the
// length the request declared (when it declared one): a body is read in
// one allocation rather than grown into. A declared length is believed up
// to maxPresized only: a caller that declares a large body and sends it
// slowly makes canaryd hold no more than the bytes it has sent.
func readAtMost(r io.Reader, limit, declared int64) ([]byte, error) {
	size := int64(512)
	if declared >= 0 {
		size = min(declared+1, maxPresized) // room to read the end without growing
	}
	b := make([]byte, 0, min(size, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := min(int64(cap(b)-len(b)), limit-int64(len(b)))
		n, err := r.Read(b[len(b) : len(b)+int(room)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// maxPresized is the largest buffer readAtMost makes before a body's
// bytes arrive: the largest body whose compiled spec is cached, larger
// than the documents callers send again and again.
const maxPresized = maxCachedBody

// invalidUTF8 returns the offset of the first byte of data that is not
// part of valid UTF-8, or -1 when all of it is.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1 // cannot happen: utf8.Valid said otherwise
}

// query reads the query parameters: arg.NAME overrides, and wait, timeout,
// webhook and webhook.events where the route takes them. Unknown parameters
// are errors, as unknown fields are: a misspelt one must not be silently
// ignored.
func (req *specRequest) query(raw string, params queryParams, checkWebhook func(string) error) (map[string]string, []api.FieldError) {
	if raw == "" {
		// No parameters (a round's, mostly): nothing to parse or sort,
		// and no overrides (nil, read as the empty map it stands for).
		return nil, nil
	}
	var errs []api.FieldError
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, []api.FieldError{{Field: "query", Message: "malformed query string: " + err.Error()}}
	}
	overrides := map[string]string{}
	var events []string
	eventsGiven := false
	for _, key := range slices.Sorted(maps.Keys(values)) {
		vs := values[key]
		one := func() (string, bool) {
			if len(vs) > 1 && slices.ContainsFunc(vs[1:], func(v string) bool { return v != vs[0] }) {
				errs = append(errs, api.FieldError{Field: key, Message: fmt.Sprintf("given %d times with different values", len(vs))})
				return "", false
			}
			return vs[0], true
		}
		switch name, isArg := strings.CutPrefix(key, argPrefix); {
		case key == "":
			// "?=x" or "?&=": a problem needs a field to be on.
			errs = append(errs, api.FieldError{Field: "query", Message: "a query parameter without a name; this endpoint takes " + knownParams(params)})
		case isArg:
			if name == "" {
				errs = append(errs, api.FieldError{Field: key, Message: "an argument override is arg.NAME=VALUE; the name is missing"})
				continue
			}
			if v, ok := one(); ok {
				overrides[name] = v
			}
		case key == "wait" && params.wait:
			if v, ok := one(); ok {
				errs = req.setWait(key, v, errs)
			}
		case key == "timeout" && params.timeout:
			if v, ok := one(); ok {
				errs = req.setTimeout(key, v, errs)
			}
		case params.backtest && (key == paramStart || key == paramEnd || key == paramEvery):
			if req.rawWindow == nil {
				req.rawWindow = map[string]string{}
			}
			if v, ok := one(); ok {
				req.rawWindow[key] = v
			} else {
				req.rawWindow[key] = reportedParam
			}
		case (key == fieldWebhook || key == fieldWebhookEvents) && !params.webhook:
			errs = append(errs, api.FieldError{Field: key, Message: noWebhookHere})
		case key == fieldWebhook:
			v, ok := one()
			if !ok {
				continue
			}
			if err := checkWebhook(v); err != nil {
				errs = append(errs, api.FieldError{Field: key, Message: err.Error()})
				continue
			}
			req.webhook = &analyses.WebhookRequest{URL: v}
		case key == fieldWebhookEvents:
			eventsGiven = true
			events, errs = webhookEvents(key, vs, events, errs)
		default:
			errs = append(errs, api.FieldError{Field: key, Message: "unknown query parameter; this endpoint takes " + knownParams(params)})
		}
	}
	switch {
	case !eventsGiven:
	case req.webhook != nil:
		req.webhook.Events = events
	case !slices.ContainsFunc(errs, func(e api.FieldError) bool { return e.Field == fieldWebhook }):
		errs = append(errs, api.FieldError{Field: fieldWebhookEvents, Message: "the events of the query's webhook, given without webhook=URL; " +
			"give both in the query, or (on a template endpoint) both in the body's webhook"})
	}
	return overrides, errs
}

// setWait sets the request's wait from the query's value v of key: ?wait
// alone reads as a yes.
func (req *specRequest) setWait(key, v string, errs []api.FieldError) []api.FieldError {
	if v == "" {
		req.wait = true
		return errs
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return append(errs, api.FieldError{Field: key, Message: fmt.Sprintf("must be true or false, got %q", v)})
	}
	req.wait = b
	return errs
}

// setTimeout lowers the request's timeout to the query's value v of key.
func (req *specRequest) setTimeout(key, v string, errs []api.FieldError) []api.FieldError {
	d, msg := parseTimeout(v)
	if msg != "" {
		return append(errs, api.FieldError{Field: key, Message: msg})
	}
	req.timeout = shorter(req.timeout, d)
	return errs
}

// webhookEvents appends to events the webhook's events that the values vs
// of key list: key is repeatable, and each value a comma-separated list
// (webhook.events=measurement,completed). An unknown event is a problem on
// its index.
func webhookEvents(key string, vs, events []string, errs []api.FieldError) ([]string, []api.FieldError) {
	for _, v := range vs {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			if err := analyses.CheckWebhookEvents([]string{e}); err != nil {
				errs = append(errs, api.FieldError{Field: fmt.Sprintf("%s[%d]", key, len(events)), Message: err.Error()})
			}
			events = append(events, e)
		}
	}
	return events, errs
}

// noWebhookHere is the field error of a webhook asked of an endpoint that
// sends none.
const noWebhookHere = "this endpoint answers with its result and sends no webhook; " +
	"ask for one when starting an analysis (POST /v1/analyses or POST /v1/templates/{name}/analyses)"

func knownParams(p queryParams) string {
	known := []string{"arg.NAME=VALUE"}
	if p.wait {
		known = append(known, "wait=true")
	}
	if p.webhook {
		known = append(known, "webhook=URL", "webhook.events=measurement,completed")
	}
	if p.timeout {
		known = append(known, "timeout=DURATION")
	}
	if p.backtest {
		known = append(known, "start=TIME", "end=TIME", "every=DURATION")
	}
	return strings.Join(known, ", ")
}

// responseMode is how an analysis is returned: one JSON document, or a
// stream of events.
type responseMode int

const (
	modeJSON responseMode = iota
	modeNDJSON
	modeSSE
)

const (
	ndjsonContentType = "application/x-ndjson"
	sseContentType    = "text/event-stream"
)

// negotiate picks the response mode from Accept: the first streaming type
// listed (with a non-zero q) wins; anything else gets JSON.
func negotiate(r *http.Request) responseMode {
	for _, header := range r.Header.Values("Accept") {
		for _, part := range strings.Split(header, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					continue
				}
			}
			switch mt {
			case ndjsonContentType:
				return modeNDJSON
			case sseContentType:
				return modeSSE
			}
		}
	}
	return modeJSON
}
