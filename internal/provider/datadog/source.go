package datadog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/redact"
)

// source measures one metric. It holds no per-measurement state, so the
// engine may call Measure from any goroutine.
type source struct {
	p    *Provider
	plan *plan
}

// BoundByContext: the request, and the reading of its body, are made with
// the measurement's context.
func (*source) BoundByContext() bool { return true }

// Measure queries the window of the metric's interval that ends at at
// (whole seconds, as Argo's), with the credentials read now, and reads the
// answer as Argo does (see the package documentation). Argo queries the
// window ending now; taking the engine's instant lets a backtest measure
// the past with the same template.
func (s *source) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if at.IsZero() {
		at = time.Now()
	}
	e, err := s.p.endpoint(s.plan.secret)
	if err != nil {
		return analysis.Observation{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.plan.timeout)
	defer cancel()
	to := at.Unix()
	from := to - int64(s.plan.interval/time.Second)

	var (
		req *http.Request
		b   *body
	)
	if s.plan.v2 {
		b = s.p.getBody()
		req = s.v2Request(ctx, e, b, from, to)
	} else {
		req = s.v1Request(ctx, e, from, to)
	}
	// The transport itself: no redirect is followed, so http.Client
	// would only copy the headers for redirects that never come.
	resp, err := s.p.transport.RoundTrip(req)
	if err != nil {
		return analysis.Observation{Err: s.requestError(ctx, e, err)}
	}
	outbound.Inflate(resp)
	buf := s.p.getBuffer()
	defer s.p.putBuffer(buf)
	over, err := readBounded(buf, resp.Body, s.p.maxBytes)
	if over {
		outbound.DrainAndClose(resp.Body, 4<<10)
	} else {
		resp.Body.Close()
	}
	switch {
	case err != nil:
		return analysis.Observation{Err: fmt.Errorf("%s: %s", argoNoBytes, s.cause(ctx, e, err))}
	case over:
		return analysis.Observation{Err: fmt.Errorf("the answer is longer than the %d bytes canaryd reads of a Datadog answer (%d for each of --max-result-values, and %d)",
			s.p.maxBytes, 1<<10, 64<<10)}
	}
	body := buf.Bytes()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return analysis.Observation{Err: fmt.Errorf("received authentication error response code: %d %s", resp.StatusCode, excerpt(body, e.secrets))}
	case resp.StatusCode != http.StatusOK:
		return analysis.Observation{Err: fmt.Errorf("received non 2xx response code: %d %s", resp.StatusCode, excerpt(body, e.secrets))}
	}
	if b != nil {
		// A 200 read whole: the server has read the request (putBody
		// checks that the transport read its body to the end), and
		// nothing reads it any more.
		s.p.putBody(b)
		return readV2(body, s.p.maxValues)
	}
	return readV1(body, s.p.maxValues)
}

// v1Request is the GET of a v1 query over [from, to], in seconds, with
// Argo's parameters in url.Values.Encode's order.
func (s *source) v1Request(ctx context.Context, e *endpoint, from, to int64) *http.Request {
	// The query string is written once, in its own bytes: two times of
	// at most 20 digits, and the query.
	var q strings.Builder
	q.Grow(len("from=&query=&to=") + 2*20 + len(s.plan.query))
	var scratch [20]byte
	q.WriteString("from=")
	q.Write(strconv.AppendInt(scratch[:0], from, 10))
	q.WriteString("&query=")
	q.WriteString(s.plan.query)
	q.WriteString("&to=")
	q.Write(strconv.AppendInt(scratch[:0], to, 10))
	u := *e.v1URL
	u.RawQuery = q.String()
	r := e.v1Request.WithContext(ctx)
	r.URL = &u
	return r
}

// v2Request is the POST of a v2 scalar query over [from, to], in
// milliseconds.
func (s *source) v2Request(ctx context.Context, e *endpoint, b *body, from, to int64) *http.Request {
	data := append(b.data[:0], s.plan.bodyHead...)
	data = strconv.AppendInt(data, from*1000, 10)
	data = append(data, `,"to":`...)
	data = strconv.AppendInt(data, to*1000, 10)
	data = append(data, s.plan.bodyTail...)
	b.reader.Reset(data)
	b.data, b.rewound = data, false
	r := e.v2Request.WithContext(ctx)
	r.Body, r.GetBody, r.ContentLength = b.rc, b.getBody, int64(len(data))
	return r
}

// body is a v2 request's body, held inline when it is short, kept for the
// next measurement once a 200 answers it (getBody, putBody). It is read
// through rc, io.NopCloser(&reader), a body the transport knows to be in
// memory: it writes the request's headers and body in one write, where it
// sends the headers of another body apart, first, and copies the body
// through a buffer of its own.
type body struct {
	inline [256]byte
	// data are the request's bytes: inline's, or an array of their
	// own, kept with the body, for a longer one.
	data   []byte
	reader bytes.Reader
	rc     io.ReadCloser
	// getBody is the request's GetBody, made once: the transport sends
	// a request again, on another connection, when the connection it
	// took had been closed by the server before a byte was written (as
	// it does Argo's, whose body http.NewRequest can give again). It
	// gives a copy of the bytes, and rewound says that it was asked:
	// the first body may then still be read, by the write that failed,
	// and is never reused.
	getBody func() (io.ReadCloser, error)
	rewound bool
}

// maxPooledRequest is the longest body kept for the next measurement. The
// transport reads a body this short into its write buffer (4 KiB), with
// the headers, before it sends a byte of either: the server cannot
// answer, and the measurement end, while the body is still being read. A
// longer one is sent as it is read, and its end may be read after the
// answer is in (a server may answer before it reads the whole request):
// it is left to the garbage collector, never reused under that read.
const maxPooledRequest = 2 << 10

func (p *Provider) getBody() *body {
	if b, ok := p.requests.Get().(*body); ok {
		return b
	}
	b := &body{}
	b.data = b.inline[:0]
	b.rc = io.NopCloser(&b.reader)
	b.getBody = func() (io.ReadCloser, error) {
		b.rewound = true
		return io.NopCloser(bytes.NewReader(bytes.Clone(b.data))), nil
	}
	return b
}

// putBody keeps b for another measurement once its request has been
// answered with a 200, which a server sends once it has read the whole
// request, and the transport sends a body's last bytes only after it has
// read it to its end. A body asked for again (rewound), not read to its
// end (a server that answered before it read it all), or long, is not
// kept.
func (p *Provider) putBody(b *body) {
	if b.rewound || b.reader.Len() != 0 || cap(b.data) > maxPooledRequest {
		return
	}
	b.reader.Reset(nil)
	p.requests.Put(b)
}

// readBounded reads r into buf up to limit bytes; over reports a body
// longer than that, found at the first byte over the bound.
func readBounded(buf *bytes.Buffer, r io.Reader, limit int64) (over bool, err error) {
	for {
		if buf.Available() < 512 {
			buf.Grow(max(buf.Cap(), 4<<10))
		}
		room := buf.AvailableBuffer()
		room = room[:cap(room)]
		if left := limit + 1 - int64(buf.Len()); int64(len(room)) > left {
			room = room[:left]
		}
		n, err := r.Read(room)
		buf.Write(room[:n])
		switch {
		case int64(buf.Len()) > limit:
			return true, nil
		case err == io.EOF:
			return false, nil
		case err != nil:
			return false, err
		}
	}
}

// requestError is a failed request's error: the method and the address
// without its query (the query may hold what the template's author
// considers private), the cause, and the keys scrubbed.
func (s *source) requestError(ctx context.Context, e *endpoint, err error) error {
	method, path := http.MethodGet, "/api/v1/query"
	if s.plan.v2 {
		method, path = http.MethodPost, "/api/v2/query/scalar"
	}
	return fmt.Errorf("%s %s%s: %s", method, redact.URL(e.u), path, s.cause(ctx, e, err))
}

// cause is what of err may be shown: a deadline as the requestTimeout
// that set it, anything else without its URL and keys.
func (s *source) cause(ctx context.Context, e *endpoint, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within the request timeout (%s; requestTimeout, capped by --max-query-timeout): %v", s.plan.timeout, context.DeadlineExceeded)
	}
	return redact.Error(err, e.u, e.secrets...)
}

// excerpt is the start of an error answer, as Argo quotes it whole:
// at most 512 bytes, the keys scrubbed.
func excerpt(body []byte, secrets []string) string {
	const max = 512
	s := string(body)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return redact.Scrub(s, secrets...)
}

func (p *Provider) getBuffer() *bytes.Buffer {
	if b, ok := p.bodies.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (p *Provider) putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		p.bodies.Put(b)
	}
}

// queryEscape escapes v1's query for the URL's query string, as
// url.Values.Encode does (Argo's).
func queryEscape(q string) string { return url.QueryEscape(q) }

// Argo's messages, which its users know (and which start with a capital,
// as Argo writes them).
const (
	argoNoBytes     = "Received no bytes in response"
	argoParse       = "Could not parse JSON body"
	argoMarshal     = "Failed to marshall JSON empty series"
	argoDatapoint   = "Datapoint does not have 2 values"
	argoQueryErrors = "There were errors in your query"
)

// parseError is Argo's error for a body that does not decode.
func parseError(err error) error {
	return fmt.Errorf("%s: %v", argoParse, err)
}

// noData is the result of an answer without data: a nil *float64, which
// the conditions see as nil (default() and isNil() are for it), and the
// measurement's value as Argo writes it.
func noData(display []byte, err error) analysis.Observation {
	if err != nil {
		return analysis.Observation{Err: fmt.Errorf("%s: %v", argoMarshal, err)}
	}
	return analysis.Observation{Value: (*float64)(nil), Display: string(display)}
}

// value is the result of an answer with data: the number, written as
// Argo writes it.
func value(v float64) analysis.Observation {
	var b [32]byte
	return analysis.Observation{Value: v, Display: string(strconv.AppendFloat(b[:0], v, 'f', -1, 64))}
}

// argoV1 and argoV2 are the shapes Argo decodes answers into, used to
// write the value of an answer without data as Argo writes it.
type argoV1 struct {
	Series []struct {
		Pointlist [][]float64 `json:"pointlist"`
	}
}

type argoV2 struct {
	Data struct {
		Attributes struct {
			Columns []struct {
				Values []*float64
			}
		}
	}
}

// readV1 reads a v1 answer (GET /api/v1/query): the last point of the
// first series is the result; no series, or a first series without points,
// is no data.
func readV1(body []byte, maxValues int) analysis.Observation {
	if json.Valid(body) {
		if first, _, n, ok := fastV1(body); ok {
			if n > maxValues {
				return analysis.Observation{Err: tooManyValues(n, maxValues, "points")}
			}
			if first.n > 0 {
				return lastPoint(first)
			}
		}
	}
	var r responseV1
	if err := json.Unmarshal(body, &r); err != nil {
		return analysis.Observation{Err: parseError(err)}
	}
	n := 0
	for i := range r.Series {
		n += r.Series[i].Pointlist.n
	}
	if n > maxValues {
		return analysis.Observation{Err: tooManyValues(n, maxValues, "points")}
	}
	if len(r.Series) == 0 || r.Series[0].Pointlist.n == 0 {
		var a argoV1
		if err := json.Unmarshal(body, &a); err != nil {
			return analysis.Observation{Err: parseError(err)}
		}
		b, err := json.Marshal(a.Series)
		return noData(b, err)
	}
	return lastPoint(r.Series[0].Pointlist)
}

// lastPoint is the result of a first series with points: its last
// point's value.
func lastPoint(last points) analysis.Observation {
	switch {
	case last.lastLen != 2:
		return analysis.Observation{Err: fmt.Errorf("%s", argoDatapoint)}
	case last.lastNull:
		// Argo reads a null value as 0; canaryd as no data (see the
		// package documentation).
		return analysis.Observation{Value: (*float64)(nil), Display: "null"}
	}
	return value(last.lastValue)
}

// readV2 reads a v2 answer (POST /api/v2/query/scalar): the first value of
// the first column is the result; errors in the answer are an Error; no
// column, no value or a null first value is no data.
func readV2(body []byte, maxValues int) analysis.Observation {
	if json.Valid(body) {
		if first, _, n, errs, ok := fastV2(body); ok && errs == "" {
			if n > maxValues {
				return analysis.Observation{Err: tooManyValues(n, maxValues, "values")}
			}
			if first.n > 0 && !first.firstNull {
				return value(first.first)
			}
		}
	}
	var r responseV2
	if err := json.Unmarshal(body, &r); err != nil {
		return analysis.Observation{Err: parseError(err)}
	}
	n := 0
	for i := range r.Data.Attributes.Columns {
		n += r.Data.Attributes.Columns[i].Values.n
	}
	if n > maxValues {
		return analysis.Observation{Err: tooManyValues(n, maxValues, "values")}
	}
	if r.Data.Errors != "" {
		return analysis.Observation{Err: fmt.Errorf("%s: %v", argoQueryErrors, r.Data.Errors)}
	}
	cols := r.Data.Attributes.Columns
	if len(cols) == 0 || cols[0].Values.n == 0 || cols[0].Values.firstNull {
		var a argoV2
		if err := json.Unmarshal(body, &a); err != nil {
			return analysis.Observation{Err: parseError(err)}
		}
		if len(a.Data.Attributes.Columns) == 1 {
			b, err := json.Marshal(a.Data.Attributes.Columns[0].Values)
			return noData(b, err)
		}
		b, err := json.Marshal(a.Data.Attributes)
		return noData(b, err)
	}
	return value(cols[0].Values.first)
}

// tooManyValues is the error of an answer of more than max values.
func tooManyValues(n, max int, what string) error {
	return fmt.Errorf("the answer has %d %s, more than the %d a measurement may have (--max-result-values); narrow the query or its interval", n, what, max)
}
