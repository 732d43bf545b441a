package server

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/ids"
)

const (
	requestIDHeader    = "X-Request-Id"
	maxRequestIDLength = 128
	// maxLoggedPath and maxLoggedMethod bound what the access log copies
	// of a request line: a caller chooses both, and a path may be as long
	// as the header limit (1 MiB) allows.
	maxLoggedPath   = 256
	maxLoggedMethod = 16
)

// otherLabel is the label value of a method, route or status code outside
// the fixed set of its label.
const otherLabel = "other"

// methodLabel is a request's method as a label value: one of HTTP's own
// methods, else otherLabel. The method is whatever token the caller sends,
// so a label that copied it would let any caller grow /metrics without
// bound.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return otherLabel
}

// codeLabel is a status code as a label value: the statuses canaryd
// answers with (its own, and those of a peer it relays), else otherLabel.
func codeLabel(status int) string {
	if label, ok := codeLabels[status]; ok {
		return label
	}
	return otherLabel
}

// codeLabels are the label values of the statuses of codeLabel, written
// once.
var codeLabels = func() map[int]string {
	labels := map[int]string{}
	for _, status := range []int{http.StatusOK, http.StatusAccepted, http.StatusNoContent,
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusGone, http.StatusPreconditionFailed,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		labels[status] = strconv.Itoa(status)
	}
	return labels
}()

// cutLogged shortens a value the caller chose, for a log line.
func cutLogged(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// requestInfo travels with a request so that the access log line can name
// what the handler learnt: the analysis id, once there is one.
type requestInfo struct {
	id         string
	analysisID string
	// caller is who the bearer token says the caller is (analyses.CallerOf), ""
	// on an open API: a round's or gate's series is the caller's.
	caller string
	// round is what the line tells of an evaluated round, the only line
	// of it (setRound).
	round roundInfo
}

// roundInfo is an evaluated round as its request's log line tells it.
type roundInfo struct {
	evaluated bool
	kept      bool
	phase     api.Phase
	message   string
	series    string
}

type requestInfoKey struct{}

// observed is what observe keeps of a request, in one allocation: its
// info, the context that carries it, its response's recorder and the
// value of its X-Request-Id header.
type observed struct {
	info     requestInfo
	ctx      infoContext
	rec      recorder
	idHeader [1]string
}

// infoContext is context.WithValue(Context, requestInfoKey{}, info) and
// context.WithValue(…, chi.RouteCtxKey, route) in one: the router finds
// its routing context in it, and adds no context of its own.
type infoContext struct {
	context.Context
	info  *requestInfo
	route *chi.Context
}

func (c *infoContext) Value(key any) any {
	switch key {
	case requestInfoKey{}:
		return c.info
	case chi.RouteCtxKey:
		return c.route
	}
	return c.Context.Value(key)
}

// routeContexts are the routing contexts of requests, kept for the next
// request as the router keeps its own.
var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// newObserved gives r its id, and w the X-Request-Id header that names it.
func newObserved(w http.ResponseWriter, r *http.Request) *observed {
	o := &observed{info: requestInfo{id: requestID(r)}, rec: recorder{ResponseWriter: w}}
	o.ctx = infoContext{Context: r.Context(), info: &o.info}
	o.idHeader[0] = o.info.id
	w.Header()[requestIDHeader] = o.idHeader[:]
	return o
}

func infoOf(r *http.Request) *requestInfo {
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// setAnalysisID records the analysis a request concerns, for its log line.
func setAnalysisID(r *http.Request, id string) { infoOf(r).analysisID = id }

// setRound records the round a request evaluated, for its log line: its
// id, phase, message and series, and whether it was kept.
func setRound(r *http.Request, a *api.Analysis, series string, kept bool) {
	info := infoOf(r)
	info.analysisID = a.ID
	info.round = roundInfo{evaluated: true, kept: kept, phase: a.Phase, message: a.Message, series: series}
}

// requestID returns the caller's X-Request-Id when it is a sane token, so a
// caller can follow its request through our logs, and a fresh one
// otherwise (a header that could forge log fields is not echoed).
func requestID(r *http.Request) string {
	if v := r.Header[requestIDHeader]; len(v) > 0 { // Header.Get, without canonicalising a canonical key
		if id := v[0]; id != "" && len(id) <= maxRequestIDLength && isToken(id) {
			return id
		}
	}
	var b [12]byte
	ids.Random(b[:])
	return hex.EncodeToString(b[:])
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:/+=", c) >= 0) {
			return false
		}
	}
	return true
}

// recorder notes the status and size of a response. It unwraps, so
// http.ResponseController reaches the connection to flush streams.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// quietRoute reports the routes logged at debug level when they succeed:
// probes and scrapes would drown the log.
func quietRoute(route string) bool {
	switch route {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// observe gives every request its id, recovers a panic into a 500 problem,
// and logs and counts the request by its route pattern. It serves mux, the
// whole surface, with mux's routing context in the request's context
// (infoContext), as mux would have put it there itself.
func (s *server) observe(mux *chi.Mux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		o := newObserved(w, r)
		info, rec := &o.info, &o.rec
		route := routeContexts.Get().(*chi.Context)
		route.Reset()
		route.Routes = mux
		o.ctx.route = route
		r = r.WithContext(&o.ctx)
		s.metrics.inFlight.Inc()

		defer func() {
			v := recover()
			abort := v == http.ErrAbortHandler //nolint:errorlint // net/http compares it so too
			if v != nil && !abort {
				s.log.Error("panic while handling a request", zap.String("request_id", info.id),
					zap.String("method", cutLogged(r.Method, maxLoggedMethod)), zap.String("path", cutLogged(r.URL.Path, maxLoggedPath)),
					zap.String("panic", fmt.Sprint(v)), zap.Stack("stack"))
				if rec.status == 0 {
					writeProblem(rec, r, internalProblem(info.id))
				} else {
					// Too late for a problem document: cut the response
					// short so the client cannot take it for complete.
					abort = true
				}
			}
			s.metrics.inFlight.Dec()
			s.logRequest(r, rec, info, start)
			routeContexts.Put(route)
			if abort {
				panic(http.ErrAbortHandler)
			}
		}()
		mux.ServeHTTP(rec, r)
	})
}

func (s *server) logRequest(r *http.Request, rec *recorder, info *requestInfo, start time.Time) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http sends 200
	}
	route := unmatchedRoute
	if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePattern() != "" {
		route = rctx.RoutePattern()
		if !s.routeLabels[route] {
			route = otherLabel
		}
	}
	elapsed := time.Since(start)
	series := s.metrics.of(requestLabels{route: route, method: methodLabel(r.Method), code: codeLabel(status)})
	series.requests.Inc()
	series.duration.Observe(elapsed.Seconds())

	level := zapcore.InfoLevel
	switch {
	case status >= 500:
		level = zapcore.ErrorLevel
	case quietRoute(route) && status < 400:
		level = zapcore.DebugLevel
	}
	ce := s.log.Check(level, "request")
	if ce == nil {
		return
	}
	fp := logFields.Get().(*[]zap.Field)
	defer putLogFields(fp)
	fields := append((*fp)[:0],
		zap.String("request_id", info.id),
		zap.String("method", cutLogged(r.Method, maxLoggedMethod)),
		zap.String("path", cutLogged(r.URL.Path, maxLoggedPath)),
		zap.String("route", route),
		zap.Int("status", status),
		zap.Int64("bytes", rec.bytes),
		zap.Duration("duration", elapsed),
		zap.String("remote", r.RemoteAddr),
	)
	if info.analysisID != "" {
		fields = append(fields, zap.String("analysis_id", info.analysisID))
	}
	if rd := &info.round; rd.evaluated {
		fields = append(fields, zap.String("phase", string(rd.phase)), zap.String("message", rd.message),
			zap.String("series", rd.series), zap.Bool("kept", rd.kept))
	}
	ce.Write(fields...)
	*fp = fields
}

// logFields are the fields of request log lines, kept for the next line:
// a line is encoded before ce.Write returns, and nothing keeps its fields.
var logFields = sync.Pool{New: func() any { f := make([]zap.Field, 0, 16); return &f }}

// putLogFields clears the fields of *fp (they hold the request's strings)
// and gives it back to logFields.
func putLogFields(fp *[]zap.Field) {
	clear((*fp)[:cap(*fp)])
	logFields.Put(fp)
}

func internalProblem(requestID string) api.Problem {
	return problem(http.StatusInternalServerError, ProblemInternal,
		"an internal error occurred; it has been logged with request id "+requestID)
}
