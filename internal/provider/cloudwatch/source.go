package cloudwatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/redact"
)

// MetadataMessages is the key of a measurement's metadata that holds the
// messages of GetMetricData's answer, when it has any (Argo's key).
const MetadataMessages = "messages"

// source measures one metric. It holds no per-measurement state, so the
// engine may call Measure from any goroutine.
type source struct {
	p    *Provider
	api  *getMetricData
	plan *plan
}

// BoundByContext: the request, and the reading of its answer, are made
// with the measurement's context.
func (*source) BoundByContext() bool { return true }

// Measure queries the window of the metric's interval that ends at at, one
// GetMetricData request (its first page, as Argo's), and returns its
// results as Argo gives them to the conditions: the MetricDataResults,
// each with Id, Label, StatusCode, Messages, Timestamps and Values (newest
// first, CloudWatch's order). Argo queries the window ending now; taking
// the engine's instant lets a backtest measure the past with the same
// template.
func (s *source) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if at.IsZero() {
		at = time.Now()
	}
	ctx, cancel := context.WithTimeout(ctx, s.p.timeout)
	defer cancel()
	sc := s.p.getScratch(s.api)
	defer s.p.putScratch(sc)
	sc.body = appendBody(sc.body[:0], s.plan.body, at.Add(-s.plan.interval), at)
	out := &sc.out
	*out = cloudwatch.GetMetricDataOutput{}
	req, err := s.api.request(ctx, sc, time.Now())
	if err == nil {
		err = s.api.do(ctx, sc, req, s.p.maxBytes, s.plan.known, out)
	}
	if err != nil {
		return analysis.Observation{Err: s.requestError(ctx, err)}
	}
	n := 0
	for i := range out.MetricDataResults {
		n += len(out.MetricDataResults[i].Values)
	}
	if n > s.p.maxValues {
		return analysis.Observation{Err: fmt.Errorf("the answer has %d values, more than the %d a measurement may have (--max-result-values); narrow the queries or their interval", n, s.p.maxValues)}
	}
	obs := analysis.Observation{Value: out.MetricDataResults, Display: display(out.MetricDataResults)}
	if len(out.Messages) > 0 {
		obs.Metadata = map[string]string{MetadataMessages: messages(out.Messages)}
	}
	return obs
}

// requestError is a failed request's error: the AWS SDK's, as Argo shows
// it, but for canaryd's own bounds, which say what they are, and without
// the credentials' secret key and session token, which an answer may
// quote (a SignatureDoesNotMatch quotes the signed headers).
func (s *source) requestError(ctx context.Context, err error) error {
	var tooLarge *outbound.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Errorf("the answer is longer than the %d bytes canaryd reads of a CloudWatch answer (%d for each of --max-result-values, and %d)",
			tooLarge.Max, 1<<10, 64<<10)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("GetMetricData: no answer within the timeout (%s, capped by --max-query-timeout): %v", s.p.timeout, context.DeadlineExceeded)
	}
	msg := err.Error()
	if creds := s.api.creds; creds != nil {
		// Cached: no request is made unless the credentials expired.
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if c, cerr := creds.Retrieve(rctx); cerr == nil {
			if scrubbed := redact.Scrub(msg, c.SecretAccessKey, c.SessionToken); scrubbed != msg {
				return errors.New(scrubbed)
			}
		}
	}
	return err
}

// display is the measurement's value as Argo writes it: each result's
// values, as fmt's %+v writes a [][]float64 ("[[0.1 0.2] []]").
func display(results []types.MetricDataResult) string {
	var stack [64]byte // most measurements' values fit
	b := stack[:0]
	b = append(b, '[')
	for i := range results {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, '[')
		for j, v := range results[i].Values {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
		b = append(b, ']')
	}
	b = append(b, ']')
	return string(b)
}

// messages writes the answer's messages, "[Code: Value …]". Argo writes
// them with %+v, which shows the addresses of their strings.
func messages(ms []types.MessageData) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, m := range ms {
		if i > 0 {
			b.WriteString("; ")
		}
		if m.Code != nil {
			b.WriteString(*m.Code)
		}
		if m.Value != nil {
			b.WriteString(": ")
			b.WriteString(*m.Value)
		}
	}
	b.WriteByte(']')
	return b.String()
}
