package prometheus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
)

// source measures one metric. It holds no per-measurement state, so the
// engine may call Measure from any goroutine.
type source struct {
	p       *Provider
	ds      *datasource
	api     v1.API
	query   string
	timeout time.Duration
	rng     *rangeQuery
	// secrets are scrubbed from every error text, with the credentials the
	// requests carried (defence in depth: the transports are written not to
	// put them there in the first place, but a server may echo them).
	secrets []string
}

type rangeQuery struct {
	start, end *condition.TimeExpr
	step       time.Duration
}

// Measure runs the query as of at: an instant query at at, or a range query
// whose start and end expressions see now() as at. Argo queries at
// time.Now(); taking the engine's instant instead lets a backtest measure
// the past with the same template.
func (s *source) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if at.IsZero() {
		at = time.Now()
	}
	// An explicit timeout of 0 yields a context that is already expired, so
	// that every query fails with "context deadline exceeded": Argo's
	// behaviour, kept so that a template means the same thing in both.
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	sent := &sentCredentials{}
	ctx = context.WithValue(ctx, sentCredentialsKey{}, sent)

	var opts []v1.Option
	if s.timeout >= time.Second {
		// Lets Prometheus stop evaluating a query nobody waits for. Whole
		// seconds only: the client writes Go's "1.5s", which Prometheus'
		// duration parser refuses, while "1m30s" is fine.
		opts = append(opts, v1.WithTimeout(s.timeout.Truncate(time.Second)))
	}

	began := time.Now()
	var (
		value    model.Value
		warnings v1.Warnings
		infos    v1.Infos
		err      error
	)
	if s.rng == nil {
		value, warnings, infos, err = s.api.Query(ctx, s.query, at, opts...)
	} else {
		var r v1.Range
		r, err = s.rng.at(at)
		if err != nil {
			return analysis.Observation{Err: err}
		}
		value, warnings, infos, err = s.api.QueryRange(ctx, s.query, r, opts...)
	}
	s.observe(began, err)

	obs := analysis.Observation{Metadata: annotations(warnings, infos)}
	if err != nil {
		obs.Err = scrub(err, append(sent.list(), s.secrets...))
		return obs
	}
	obs.Value, obs.Display, obs.Err = convert(value)
	return obs
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
		return floats(values), display(values), nil
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
		return floats(values), display(values), nil
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

func display(values []model.SampleValue) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = v.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
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
	clean := msg
	// Longest first, so that "Bearer xyz" goes before "xyz" would split it.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, secret := range secrets {
		// Very short values would mangle the message and protect nothing.
		if len(secret) >= 4 {
			clean = strings.ReplaceAll(clean, secret, "<redacted>")
		}
	}
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
	s.p.durations.WithLabelValues(s.ds.name, outcome(err)).Observe(time.Since(began).Seconds())
}

func outcome(err error) string {
	var apiErr *v1.Error
	var netErr net.Error
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &apiErr):
		return "error"
	case errors.As(err, &netErr):
		return "unreachable"
	default:
		return "error"
	}
}
