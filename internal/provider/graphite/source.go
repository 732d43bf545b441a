package graphite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

// pastSlack is how far in the past an instant may be and a query whose
// window is not relative to it (window.fixed) still be sent: the engine's
// instant of a live measurement is a moment ago.
const pastSlack = time.Minute

// Measure queries the render API for the query's window as of at and reads
// the answer as Argo does (see the package documentation).
func (s *source) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if at.IsZero() {
		at = time.Now()
	}
	target := s.plan.url
	if s.plan.window.fixed {
		if time.Since(at) > pastSlack {
			return analysis.Observation{Err: errors.New(notRelative)}
		}
	} else {
		var scratch [256]byte
		target = string(s.plan.window.appendAt(append(scratch[:0], target...), at))
	}

	ctx, cancel := context.WithTimeout(ctx, s.p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return analysis.Observation{Err: errors.New("building the request failed")}
	}
	// As s.p.client.Do, without its copies for redirects.
	resp, err := outbound.Send(s.p.client, req)
	if err != nil {
		return analysis.Observation{Err: fmt.Errorf("GET %s: %s", redact.URL(s.plan.render), s.cause(ctx, s.plan.render, err))}
	}
	buf := s.p.getBuffer()
	defer s.p.putBuffer(buf)
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, s.p.maxBytes+1))
	outbound.DrainAndClose(resp.Body, 4<<10)
	switch {
	case err != nil:
		return analysis.Observation{Err: fmt.Errorf("reading the answer of GET %s: %s", redact.URL(s.plan.render), s.cause(ctx, s.plan.render, err))}
	case int64(buf.Len()) > s.p.maxBytes:
		return analysis.Observation{Err: fmt.Errorf("the answer is longer than the %d bytes canaryd reads of a Graphite answer (%d for each of --max-result-values, and %d); narrow the query or its window",
			s.p.maxBytes, 1<<10, 64<<10)}
	case resp.StatusCode >= 400:
		return analysis.Observation{Err: fmt.Errorf("error response: %s", excerpt(buf.Bytes()))}
	}
	return read(buf.Bytes(), s.p.maxValues)
}

// cause is what of err may be shown: a deadline as the timeout that set
// it, anything else without the URL's query.
func (s *source) cause(ctx context.Context, u *url.URL, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within the request timeout (%s, capped by --max-query-timeout): %v", s.p.timeout, context.DeadlineExceeded)
	}
	return redact.Error(err, u)
}

// excerpt is the start of an error answer, as Argo quotes it whole: at
// most 512 bytes.
func excerpt(body []byte) string {
	const max = 512
	s := string(body)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// read turns an answer into the measurement, as Argo does: the non-null
// values of the first series, in order, are the result, a []float64, and
// the value is written "[v,v]" with six decimals (Argo's %f). An answer
// without series, or whose first series has no datapoints, is Argo's
// "no values found" Error; a series whose datapoints are all null is an
// empty result, which a condition that reads it finds empty.
func read(body []byte, maxValues int) analysis.Observation {
	first, err := decodeAnswer(body, maxValues)
	if err != nil {
		return analysis.Observation{Err: err}
	}
	if first.points == 0 {
		return analysis.Observation{Err: errors.New("no values found")}
	}
	if first.values == nil {
		// Argo's result is an empty list, not nil: len(result) reads it.
		first.values = []float64{}
	}
	var scratch [64]byte
	display := append(scratch[:0], '[')
	for i, v := range first.values {
		if i > 0 {
			display = append(display, ',')
		}
		display = strconv.AppendFloat(display, v, 'f', 6, 64)
	}
	display = append(display, ']')
	return analysis.Observation{Value: first.values, Display: string(display)}
}
