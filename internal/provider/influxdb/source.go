package influxdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
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

// errNoResults is Argo's error for an answer without records.
var errNoResults = errors.New("no results returned from flux query")

// Measure runs the query as of at, InfluxDB's "now" for it (so that
// range(start: -5m) is the five minutes before at), with the credentials
// read now, and reads the answer as Argo does (see the package
// documentation). Argo runs the query as of InfluxDB's own now; taking
// the engine's instant lets a backtest query the past with the same
// template.
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

	sc := s.p.getScratch()
	defer s.p.putScratch(sc)
	sc.body = append(sc.body[:0], s.plan.bodyHead...)
	sc.body = at.UTC().AppendFormat(sc.body, time.RFC3339Nano)
	sc.body = append(sc.body, `"}`...)
	sc.reader.Reset(sc.body)
	sc.req = http.Request{
		Method: http.MethodPost, URL: e.url, Host: e.url.Host, Header: e.header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: sc.rc, ContentLength: int64(len(sc.body)),
	}
	req := sc.req.WithContext(ctx)
	// The transport's own round trip: no redirect is followed (a 3xx is
	// an error status), and the headers are not copied for one.
	resp, err := s.p.transport.RoundTrip(req)
	if err != nil {
		return analysis.Observation{Err: fmt.Errorf("POST %s/api/v2/query: %s", redact.URL(e.u), s.cause(ctx, e, err))}
	}
	outbound.Inflate(resp)
	buf := &sc.answer
	sc.limit = io.LimitedReader{R: resp.Body, N: s.p.maxBytes + 1}
	_, err = buf.ReadFrom(&sc.limit)
	// What is left of a short answer is read, so that its connection is
	// reused; a server that sends more is not worth reading.
	sc.limit = io.LimitedReader{R: resp.Body, N: 4 << 10}
	_, _ = io.Copy(io.Discard, &sc.limit)
	_ = resp.Body.Close()
	sc.limit = io.LimitedReader{}
	switch {
	case err != nil:
		return analysis.Observation{Err: fmt.Errorf("reading the answer failed: %s", s.cause(ctx, e, err))}
	case int64(buf.Len()) > s.p.maxBytes:
		return analysis.Observation{Err: fmt.Errorf("the answer is longer than the %d bytes canaryd reads of an InfluxDB answer (%d for each of --max-result-values, and %d)",
			s.p.maxBytes, 1<<10, 64<<10)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return analysis.Observation{Err: errors.New(redact.Scrub(statusError(resp, buf.Bytes()), e.secrets...))}
	}
	values, err := sc.read(buf.Bytes(), s.p.maxValues)
	switch {
	case err != nil:
		return analysis.Observation{Err: errors.New(redact.Scrub(err.Error(), e.secrets...))}
	case values.len() == 0:
		return analysis.Observation{Err: errNoResults}
	}
	return analysis.Observation{Value: values.list(), Display: values.display()}
}

// cause is what of err may be shown: a deadline as the timeout that set
// it, anything else without its URL and token.
func (s *source) cause(ctx context.Context, e *endpoint, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within the timeout (%s, Argo's; capped by --max-query-timeout): %v", s.plan.timeout, context.DeadlineExceeded)
	}
	return redact.Error(err, e.u, e.secrets...)
}

// statusError is the error of an answer whose status is not 2xx, as Argo's
// client writes it: "code: message" from a JSON body, the status and the
// body from another, else a word on the status; at most 512 bytes of the
// body.
func statusError(resp *http.Response, body []byte) string {
	var code, msg string
	if ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ctype == "application/json" {
		var e struct{ Code, Message string }
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&e); err != nil {
			return err.Error()
		}
		code, msg = e.Code, e.Message
	} else {
		code, msg = resp.Status, string(body)
	}
	if code == "" && msg == "" {
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			code, msg = "too many requests", "exceeded rate limit"
		case http.StatusServiceUnavailable:
			code, msg = "unavailable", "service temporarily unavailable"
		default:
			code, msg = resp.Status, resp.Header.Get("X-Influxdb-Error")
		}
	}
	if code == "" || msg == "" {
		return "Unexpected status code " + strconv.Itoa(resp.StatusCode)
	}
	return clip(code + ": " + msg)
}

// display is the measurement's value as Argo writes it (fmt.Sprint of
// the list: "[0.5 1]").
func (r *result) display() string {
	if len(r.floats) == 1 {
		var b [40]byte
		out := append(b[:0], '[')
		out = strconv.AppendFloat(out, r.floats[0], 'g', -1, 64)
		return string(append(out, ']'))
	}
	return fmt.Sprint(r.list())
}

// scratch is what one measurement writes and reads, kept for the next
// one: the request's body, the answer, the rows' fields and the table's
// annotations.
type scratch struct {
	req    http.Request
	body   []byte
	reader bytes.Reader
	// rc is io.NopCloser(&reader), made with the scratch: a body the
	// transport knows to be in memory, whose request it writes in one go,
	// where it sends the headers of another body apart, first (a write,
	// and an allocation, of their own).
	rc     io.ReadCloser
	limit  io.LimitedReader
	answer bytes.Buffer
	csv    csvReader
	table  table
	// values are the answer's values as read (read returns them).
	values result
}

func (p *Provider) getScratch() *scratch {
	if sc, ok := p.scratch.Get().(*scratch); ok {
		sc.answer.Reset()
		return sc
	}
	sc := &scratch{}
	sc.rc = io.NopCloser(&sc.reader)
	return sc
}

// putScratch keeps sc for the next measurement unless its answer was
// large, which is left to the garbage collector; what it holds of the
// answer is dropped.
func (p *Provider) putScratch(sc *scratch) {
	if sc.answer.Cap() > maxPooledBody || cap(sc.body) > maxPooledBody {
		return
	}
	sc.reader.Reset(nil)
	sc.req = http.Request{}
	clear(sc.csv.fields[:cap(sc.csv.fields)])
	clear(sc.table.datatypes[:cap(sc.table.datatypes)])
	clear(sc.table.defaults[:cap(sc.table.defaults)])
	sc.csv.b = nil
	sc.values = result{}
	p.scratch.Put(sc)
}
