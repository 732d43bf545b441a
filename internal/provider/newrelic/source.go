package newrelic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
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

// errUnauthorized is Argo's client's error for an invalid key.
//
//lint:ignore ST1005 the client's words, which Argo's users know
var errUnauthorized = errors.New("401 response returned: Invalid credentials provided. Missing API key or an invalid API key was provided.")

// errNoResults is Argo's error for an answer without a result.
var errNoResults = errors.New("no results returned from NRQL query")

// Measure runs the NRQL query through NerdGraph with the credentials read
// now, and reads the answer as Argo does (see the package documentation).
// The query's window is New Relic's present, whatever at is
// (PresentOnly).
func (s *source) Measure(ctx context.Context, _ time.Time) analysis.Observation {
	e, err := s.p.endpoint(s.plan.secret)
	if err != nil {
		return analysis.Observation{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.plan.timeout)
	defer cancel()

	sc := s.p.getScratch()
	defer s.p.putScratch(sc)
	sc.body = append(sc.body[:0], s.plan.bodyHead...)
	sc.body = strconv.AppendInt(sc.body, e.account, 10)
	sc.body = append(sc.body, s.plan.bodyTail...)
	sc.reader.Reset(sc.body)
	sc.req = http.Request{
		Method: http.MethodPost, URL: e.url, Host: e.url.Host, Header: e.header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: sc.rc, ContentLength: int64(len(sc.body)),
	}
	// The transport's own round trip: no redirect is followed (a 3xx is
	// an error status), and the headers are not copied for one.
	resp, err := s.p.transport.RoundTrip(sc.req.WithContext(ctx))
	if err != nil {
		return analysis.Observation{Err: fmt.Errorf("POST %s: %s", redact.URL(e.url), s.cause(ctx, e, err))}
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
		return analysis.Observation{Err: fmt.Errorf("the answer is longer than the %d bytes canaryd reads of a NerdGraph answer (%d for each of --max-result-values, and %d)",
			s.p.maxBytes, 1<<10, 64<<10)}
	}
	results, err := readAnswer(resp.StatusCode, buf.Bytes(), s.p.maxValues, &sc.kept)
	if err != nil {
		return analysis.Observation{Err: errors.New(redact.Scrub(err.Error(), e.secrets...))}
	}
	obs := observe(results)
	// A list of one row is not the result (the row is), and is kept
	// for the next answer; a longer one is.
	sc.kept.rows = nil
	if len(results) <= 1 {
		clear(results[:cap(results)])
		sc.kept.rows = results[:0]
	}
	return obs
}

// cause is what of err may be shown: a deadline as the timeout that set
// it, anything else without the key.
func (s *source) cause(ctx context.Context, e *endpoint, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within the timeout (%s, Argo's; capped by --max-query-timeout): %v", s.plan.timeout, context.DeadlineExceeded)
	}
	return redact.Error(err, e.url, e.secrets...)
}

// answer is NerdGraph's answer, the fields Argo's client reads.
type answer struct {
	Errors []gqlError `json:"errors"`
	Data   struct {
		Actor struct {
			Account struct {
				NRQL struct {
					Results []map[string]any `json:"results"`
				} `json:"nrql"`
			} `json:"account"`
		} `json:"actor"`
	} `json:"data"`
	// keys, when set, are names of values that earlier answers had,
	// which decodeAnswer uses rather than make the same strings again
	// (readKey).
	keys *[]string
}

// gqlError is an error of a GraphQL answer.
type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		ErrorClass string `json:"errorClass"`
		ErrorCode  string `json:"error_code"`
	} `json:"extensions"`
}

// readAnswer reads an answer of status status as Argo's client does
// (newrelic-client-go's Do): the results, or its error.
func readAnswer(status int, body []byte, maxValues int, k *kept) ([]map[string]any, error) {
	if status == http.StatusNotFound {
		return nil, errors.New("resource not found")
	}
	var a answer
	a.Data.Actor.Account.NRQL.Results = k.rows[:0]
	a.keys = &k.keys
	var decodeErr error
	if !decodeAnswer(body, &a) {
		// Apart, so that a stays on the stack when decodeAnswer reads it.
		slow := &answer{}
		if decodeErr = json.Unmarshal(body, slow); decodeErr != nil {
			*slow = answer{} // the client reads no error from a body that does not decode
		}
		a = *slow
	}
	var messages []string
	deprecated, unauthorized := false, false
	for _, e := range a.Errors {
		if e.Message != "" {
			messages = append(messages, e.Message)
		}
		deprecated = deprecated || strings.HasPrefix(e.Message, "This field is deprecated!")
		unauthorized = unauthorized || e.Extensions.ErrorCode == "BAD_API_KEY"
	}
	joined := clip(strings.Join(messages, ", "))
	switch {
	case status < 200 || status > 299:
		switch {
		case len(a.Errors) > 0 && (status == http.StatusUnauthorized || unauthorized):
			return nil, errUnauthorized
		case status == http.StatusPaymentRequired:
			return nil, errors.New(http.StatusText(http.StatusPaymentRequired))
		case joined != "":
			return nil, fmt.Errorf("%d response returned: %s", status, joined)
		}
		return nil, fmt.Errorf("%d response returned", status)
	case joined != "" && !deprecated:
		return nil, errors.New(joined)
	case decodeErr != nil:
		return nil, decodeErr
	}
	results := a.Data.Actor.Account.NRQL.Results
	if n := countValues(results, maxValues); n > maxValues {
		return nil, fmt.Errorf("the answer has more than the %d values a measurement may have (--max-result-values); narrow the query, or its FACET's LIMIT", maxValues)
	}
	return results, nil
}

// countValues counts the values of results, a row's values and those
// nested in them, up to more than max.
func countValues(results []map[string]any, max int) int {
	n := 0
	var count func(v any)
	count = func(v any) {
		n++
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				if n > max {
					return
				}
				count(e)
			}
		case []any:
			for _, e := range x {
				if n > max {
					return
				}
				count(e)
			}
		}
	}
	for _, r := range results {
		if n > max {
			break
		}
		for _, v := range r {
			count(v)
		}
	}
	return n
}

// observe makes the result as Argo's processResponse does: one row is the
// result itself (result.count), several the list of them (result[0].count);
// none, or one that is empty, is an Error. The measurement's value is the
// result as JSON.
func observe(results []map[string]any) analysis.Observation {
	var value any
	switch {
	case len(results) == 1 && len(results[0]) == 0, len(results) == 0:
		return analysis.Observation{Err: errNoResults}
	case len(results) == 1:
		value = results[0]
	default:
		value = results
	}
	if len(results) == 1 {
		if d, ok := displayRow(results[0]); ok {
			return analysis.Observation{Value: value, Display: d}
		}
	}
	display, err := json.Marshal(value)
	if err != nil {
		return analysis.Observation{Err: fmt.Errorf("could not marshal results: %w", err)}
	}
	return analysis.Observation{Value: value, Display: string(display)}
}

// displayRow writes a row of a few numbers under plain names as
// json.Marshal does (its keys sorted), without its allocations: the
// usual answer of one row. ok is false for any other row, which
// json.Marshal writes.
func displayRow(row map[string]any) (string, bool) {
	var keysBuf [8]string
	keys := keysBuf[:0]
	if len(row) > len(keysBuf) {
		return "", false
	}
	for k, v := range row {
		if _, isFloat := v.(float64); !isFloat || !plainKey(k) {
			return "", false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf [256]byte
	b := append(buf[:0], '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		var ok bool
		if b, ok = appendJSONFloat(b, row[k].(float64)); !ok {
			return "", false
		}
	}
	return string(append(b, '}')), true
}

// plainKey: a name that JSON writes as it is (no quote, backslash,
// control character, or what json.Marshal escapes for HTML).
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return len(k) <= 64
}

// appendJSONFloat writes f as encoding/json does; not ok for NaN and the
// infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// clip keeps a quoted message short.
func clip(s string) string {
	const max = 512
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// scratch is what one measurement writes and reads, kept for the next
// one: the request and its body, and the answer.
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
	kept   kept
}

// kept is what one answer's reading leaves for the next: the list the
// rows are read into, when an answer of one row left it (see Measure),
// and the names of the rows' values (readKey).
type kept struct {
	rows []map[string]any
	keys []string
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
// large, which is left to the garbage collector.
func (p *Provider) putScratch(sc *scratch) {
	if sc.answer.Cap() > maxPooledBody || cap(sc.body) > maxPooledBody {
		return
	}
	sc.reader.Reset(nil)
	sc.req = http.Request{}
	if cap(sc.kept.rows) > 1 {
		sc.kept.rows = nil
	}
	clear(sc.kept.rows[:cap(sc.kept.rows)]) // an answer that failed may have left a row
	p.scratch.Put(sc)
}
