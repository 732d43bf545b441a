package prometheus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/redact"
)

// source measures one metric. It holds no per-measurement state, so the
// engine may call Measure from any goroutine.
type source struct {
	p  *Provider
	ds *datasource
	// ep sends the queries: the datasource's own, or the metric's when
	// it has round trippers of its own (headers, authentication).
	ep    *endpoint
	query string
	// escapedQuery is the query as the form carries it.
	escapedQuery string
	timeout      time.Duration
	// opts and timeoutParam are the query options: the timeout that lets
	// Prometheus stop evaluating a query nobody waits for.
	opts         []v1.Option
	timeoutParam string
	rng          *rangeQuery
	// secrets are scrubbed from every error text, with the credentials the
	// requests carried (defence in depth: the transports are written not to
	// put them there in the first place, but a server may echo them).
	secrets []string
	// succeeded is the query durations' series of this source's
	// datasource and the outcome success, found on its first success.
	succeededOnce sync.Once
	succeeded     prometheus.Observer
}

type rangeQuery struct {
	start, end *condition.TimeExpr
	step       time.Duration
}

// MaxResultValues is the most values a query's result may have
// (Options.MaxResultValues, --max-result-values), for a caller that sends
// range queries of its own through QuerySeries (the judge's counts) and
// bounds them by it.
func (s *source) MaxResultValues() int { return s.p.maxValues }

// BoundByContext reports that Measure returns when its context is done:
// the request, and the reading of its body, are made with it.
func (*source) BoundByContext() bool { return true }

// Measure runs the query as of at: an instant query at at, or a range query
// whose start and end expressions see now() as at. Argo queries at
// time.Now(); taking the engine's instant instead lets a backtest measure
// the past with the same template.
//
// The request is the one client_golang's v1 API sends (Argo's client): a
// form POST whose fields and order are the same. Its response is read here
// when it is a plain success (decodeFast), and otherwise handed, as it
// came, to client_golang, whose errors, GET fallback and decoding then
// apply unchanged. The body is read on the measurement's goroutine, which
// the request's context bounds: client_golang starts a goroutine per
// request for that.
func (s *source) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if at.IsZero() {
		at = time.Now()
	}
	var r v1.Range
	if s.rng != nil {
		var err error
		if r, err = s.rng.at(at); err != nil {
			return analysis.Observation{Err: err}
		}
	}
	// An explicit timeout of 0 yields a context that is already expired, so
	// that every query fails with "context deadline exceeded": Argo's
	// behaviour, kept so that a template means the same thing in both.
	began := time.Now()
	ctx, cancel := withTimeout(ctx, s.timeout, began)
	defer cancel()
	ctx, sent := withSentCredentials(ctx)

	q := s.p.getQueryBody()
	q.form = s.appendForm(q.form[:0], at, r)
	resp, body, err := s.post(ctx, sent, q)
	if err == nil && resp.StatusCode == http.StatusOK {
		if a, ok := decodeFast(body, s.p.maxValues); ok {
			s.observe(began, nil)
			if a.tooMany {
				n, _ := countValues(body)
				s.p.putQueryBody(q)
				return analysis.Observation{Err: s.p.tooManyValues(n)}
			}
			obs := analysis.Observation{Metadata: annotations(a.warnings, a.infos), Display: a.display()}
			if a.scalar {
				obs.Value = a.value
			} else {
				obs.Value = a.values
			}
			// A 200 is sent once the server has read the whole form,
			// which the transport had read to its end before it sent
			// its last bytes: nothing reads the form any more, and
			// nothing is kept of the answer.
			s.p.putQueryBody(q)
			return obs
		}
	}
	// The answer's buffer is not reused past this point: client_golang's
	// decoding may keep references into the body.
	rp := &replay{Client: s.ep.prom, resp: resp, body: body, err: err, max: s.p.maxValues}
	api := v1.NewAPI(rp)
	var (
		value    model.Value
		warnings v1.Warnings
		infos    v1.Infos
	)
	if s.rng == nil {
		value, warnings, infos, err = api.Query(ctx, s.query, at, s.opts...)
	} else {
		value, warnings, infos, err = api.QueryRange(ctx, s.query, r, s.opts...)
	}
	s.observe(began, err)
	if rp.tooMany > 0 {
		return analysis.Observation{Err: s.p.tooManyValues(rp.tooMany)}
	}

	obs := analysis.Observation{Metadata: annotations(warnings, infos)}
	if err != nil {
		obs.Err = scrub(err, append(sent.list(), s.secrets...))
		return obs
	}
	obs.Value, obs.Display, obs.Err = convert(value)
	return obs
}

// withTimeout is context.WithTimeout(ctx, timeout), or ctx itself when
// its own deadline comes first (now is the time): WithTimeout would then
// return a context that ends with ctx and its error, at the price of an
// allocation and of registering it with ctx and taking it back. A round
// of /v1/evaluate (8 s by default) ends before a query's default timeout
// (30 s).
func withTimeout(ctx context.Context, timeout time.Duration, now time.Time) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && !d.After(now.Add(timeout)) {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// appendForm appends the request's body to b, byte for byte what
// client_golang's Query and QueryRange encode (url.Values.Encode: keys in
// order, values escaped). Times, digits and a point, and a step, digits,
// a point and a minus sign, need no escaping: an instant query's form
// is written without an allocation.
func (s *source) appendForm(b []byte, at time.Time, r v1.Range) []byte {
	if s.rng == nil {
		b = append(b, "query="...)
		b = append(b, s.escapedQuery...)
		b = append(b, "&time="...)
		b = appendTime(b, at)
		return append(b, s.timeoutParam...)
	}
	b = append(b, "end="...)
	b = appendTime(b, r.End)
	b = append(b, "&query="...)
	b = append(b, s.escapedQuery...)
	b = append(b, "&start="...)
	b = appendTime(b, r.Start)
	b = append(b, "&step="...)
	b = strconv.AppendFloat(b, r.Step.Seconds(), 'f', -1, 64)
	return append(b, s.timeoutParam...)
}

// formatTime is client_golang's.
func formatTime(t time.Time) string {
	var scratch [32]byte
	return string(appendTime(scratch[:0], t))
}

// appendTime appends t as formatTime writes it.
func appendTime(b []byte, t time.Time) []byte {
	return strconv.AppendFloat(b, float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}

// post sends the query whose body is q, its credentials recorded in sent,
// and reads the response into q.answer. It returns what client_golang's
// client would: the transport's error as it is, and when reading the body
// fails, the context's error if it is done and the read's error
// otherwise, with no body.
func (s *source) post(ctx context.Context, sent *sentCredentials, q *queryBody) (*http.Response, []byte, error) {
	proto, header := s.ep.queryRequest, s.p.instantHeader
	if s.rng != nil {
		proto, header = s.ep.rangeRequest, s.p.rangeHeader
	}
	req := newQuery(ctx, proto, header, q)
	sent.plain = req
	resp, err := s.ep.send(req)
	if err != nil {
		return nil, nil, err
	}
	_, err = q.answer.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return resp, nil, err
	}
	return resp, q.answer.Bytes(), nil
}

// newQuery is the request http.NewRequestWithContext(ctx, POST, URL,
// bytes.NewReader(q.form)) makes, with header, made from proto (the
// endpoint's request, whose URL it shares: nothing changes a request's
// URL) in one allocation, the request, the URL not parsed again, the
// body q's.
//
// The body is io.NopCloser of a *bytes.Reader, as NewRequest makes it:
// net/http writes the headers and a body it knows to be in memory in one
// write, and flushes the headers on their own, in a write (a system call
// and a packet) of their own, before any other body.
func newQuery(ctx context.Context, proto *http.Request, header http.Header, q *queryBody) *http.Request {
	req := proto.WithContext(ctx)
	req.Header = header
	req.ContentLength = int64(len(q.form))
	if len(q.form) == 0 {
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
		return req
	}
	q.reader.Reset(q.form)
	q.rewound = false
	req.Body, req.GetBody = q.body, q.getBody
	return req
}

// queryBody is a query's body, kept for the next query once its answer is
// in (Provider.putQueryBody): its form's bytes, the reader the transport
// reads them with, and the request's Body and GetBody, made once; and the
// buffer its answer is read into.
type queryBody struct {
	answer bytes.Buffer
	form   []byte
	reader bytes.Reader
	// body is io.NopCloser(&reader), which net/http knows to be in
	// memory (see newQuery).
	body io.ReadCloser
	// getBody is the request's GetBody: the transport's retry of a
	// request on a connection the server had closed asks for the body
	// again, and so does a redirect that keeps it (307, 308). It gives
	// a copy of the form, and rewound says that it was asked: the
	// first body may then still be read, by the write of the request
	// that failed, and is never reused.
	getBody func() (io.ReadCloser, error)
	rewound bool
}

// maxPooledForm is the longest form kept for the next query: an instant
// query's form is its query and a time, a few hundred bytes, and
// --max-query-length bounds the query, but a pool must not keep a
// careless query's long form for ever.
const maxPooledForm = 2 << 10

// maxPooledAnswer is the largest answer's buffer kept for the next query:
// range queries may return megabytes, and the pool must not hold on to
// them.
const maxPooledAnswer = 64 << 10

func (p *Provider) getQueryBody() *queryBody {
	if q, ok := p.queries.Get().(*queryBody); ok {
		q.answer.Reset()
		return q
	}
	q := &queryBody{}
	q.body = io.NopCloser(&q.reader)
	q.getBody = func() (io.ReadCloser, error) {
		q.rewound = true
		return io.NopCloser(bytes.NewReader(bytes.Clone(q.form))), nil
	}
	return q
}

// putQueryBody keeps q for another query, once the transport has read
// it whole and will not read it again: its query has been answered with
// a 200, which a server sends once it has read the whole form, and the
// transport sends a body's last bytes only after it has read it to its
// end; and once nothing refers to its answer any more. A body asked for
// again (rewound), or not read to its end (a server that answered before
// it read the form), is not kept.
func (p *Provider) putQueryBody(q *queryBody) {
	if q.rewound || q.reader.Len() != 0 || cap(q.form) > maxPooledForm || q.answer.Cap() > maxPooledAnswer {
		return
	}
	q.reader.Reset(nil)
	p.queries.Put(q)
}

// replay is a client_golang client that answers its first request with the
// response the source has already received (the request is the same), and
// sends any further one, client_golang's GET fallback after a 403, 405 or
// 501, for real. It counts the values of every response before
// client_golang decodes it: one with more than max is not handed over, and
// tooMany says how many it had.
type replay struct {
	promapi.Client
	resp    *http.Response
	body    []byte
	err     error
	used    bool
	max     int
	tooMany int
}

// errTooManyValues stops client_golang from decoding a response with too
// many values; Measure reports it with the count instead.
var errTooManyValues = errors.New("too many values")

func (r *replay) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, body, err := r.resp, r.body, r.err
	if r.used {
		resp, body, err = r.Client.Do(ctx, req)
	}
	r.used = true
	if err == nil {
		if n, ok := countValues(body); ok && n > r.max {
			r.tooMany = n
			return resp, nil, errTooManyValues
		}
	}
	return resp, body, err
}

// tooManyValues is the error of a result with n values, more than the
// provider takes.
func (p *Provider) tooManyValues(n int) error {
	return fmt.Errorf("the query returned %d values, more than the %d a measurement may have (--max-result-values); ask for fewer series, a shorter range or a larger step",
		n, p.maxValues)
}

func (r *rangeQuery) at(now time.Time) (v1.Range, error) {
	start, err := r.start.Eval(now)
	if err != nil {
		return v1.Range{}, fmt.Errorf("failed to parse rangeQuery.start as time: %w", err)
	}
	end, err := r.end.Eval(now)
	if err != nil {
		return v1.Range{}, fmt.Errorf("failed to parse rangeQuery.end as time: %w", err)
	}
	return v1.Range{Start: start, End: end, Step: r.step}, nil
}

// convert turns a query result into the result the conditions see and the
// value the measurement shows, as Argo's processResponse does.
func convert(value model.Value) (any, string, error) {
	switch v := value.(type) {
	case *model.Scalar:
		return float64(v.Value), v.Value.String(), nil
	case model.Vector:
		values := make([]model.SampleValue, 0, len(v))
		for _, s := range v {
			if s != nil {
				values = append(values, s.Value)
			}
		}
		out := floats(values)
		return out, string(appendDisplay(nil, out, nil)), nil
	case model.Matrix:
		values := []model.SampleValue{}
		for _, series := range v {
			if series == nil {
				continue
			}
			for _, pair := range series.Values {
				values = append(values, pair.Value)
			}
		}
		out := floats(values)
		return out, string(appendDisplay(nil, out, nil)), nil
	default:
		//lint:ignore ST1005 Argo Rollouts' message, kept so its users recognise it
		return nil, "", errors.New("Prometheus metric type not supported")
	}
}

// floats is never nil: an empty result is `[]`, which conditions such as
// len(result) == 0 rely on.
func floats(values []model.SampleValue) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = float64(v)
	}
	return out
}

// annotations is the measurement's metadata: Prometheus' warnings joined as
// Argo joins them (`"w1", "w2"`), and its info annotations (newer servers)
// the same way.
func annotations(warnings v1.Warnings, infos v1.Infos) map[string]string {
	if len(warnings) == 0 && len(infos) == 0 {
		return nil
	}
	md := map[string]string{}
	if len(warnings) > 0 {
		md["warnings"] = quoteJoin(warnings)
	}
	if len(infos) > 0 {
		md["infos"] = quoteJoin(infos)
	}
	return md
}

func quoteJoin(items []string) string {
	quoted := make([]string, len(items))
	for i, w := range items {
		quoted[i] = `"` + w + `"`
	}
	return strings.Join(quoted, ", ")
}

// scrub removes credentials from an error's text. The error is returned
// unchanged (and keeps its chain) when there is nothing to remove.
func scrub(err error, secrets []string) error {
	// net/http reports a refused redirect with the Location as the server
	// sent it, userinfo and all.
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.User != nil {
			u.User = nil
			err = &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	msg := err.Error()
	// Very short values would mangle the message and protect nothing.
	long := slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < 4 })
	clean := redact.Scrub(msg, long...)
	if clean == msg {
		return err
	}
	return errors.New(clean)
}

// observe records the query's latency by outcome.
func (s *source) observe(began time.Time, err error) {
	if s.p.durations == nil {
		return
	}
	if err == nil {
		// The usual outcome's series, found once per source.
		s.succeededOnce.Do(func() { s.succeeded = s.p.durations.WithLabelValues(s.ds.name, outcomeSuccess) })
		s.succeeded.Observe(time.Since(began).Seconds())
		return
	}
	s.p.durations.WithLabelValues(s.ds.name, outcome(err)).Observe(time.Since(began).Seconds())
}

// The outcome label values of the query latency histogram.
const (
	outcomeSuccess     = "success"
	outcomeError       = "error"
	outcomeTimeout     = "timeout"
	outcomeCanceled    = "canceled"
	outcomeUnreachable = "unreachable"
)

func outcome(err error) string {
	var apiErr *v1.Error
	var netErr net.Error
	switch {
	case err == nil:
		return outcomeSuccess
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	case errors.As(err, &apiErr):
		return outcomeError
	case errors.As(err, &netErr):
		return outcomeUnreachable
	default:
		return outcomeError
	}
}
