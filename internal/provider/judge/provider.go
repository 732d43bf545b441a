package judge

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/provider/prometheus/promql"
	"github.com/canaryd/canaryd/internal/spec"
)

// base is the path of the configuration relative to its metric.
const base = "provider.judge"

// Provider is the provider of provider.judge. It decodes a judge
// configuration (Decode), checks it (Metric.Validate) and builds its
// source from two range queries made by the Prometheus provider it is
// given, so that they reach only what that provider allows, with its
// credentials.
type Provider struct {
	prometheus prometheus.Func
}

// NewProvider returns the judge's provider over a Prometheus provider.
func NewProvider(p prometheus.Func) *Provider { return &Provider{prometheus: p} }

// Decode reads a metric's provider.judge strictly (spec.DecodeStrict):
// every unknown field and value of the wrong type is a problem on its path
// ("provider.judge.lookback").
func Decode(config json.RawMessage) (*Metric, []api.FieldError) {
	var j Metric
	if errs := spec.DecodeStrict(config, &j, base); len(errs) > 0 {
		return nil, errs
	}
	return &j, nil
}

// Source decodes and checks config and builds its source.
func (p *Provider) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	j, errs := Decode(config)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	if errs := j.Validate(base); len(errs) > 0 {
		return nil, nil, errs
	}
	return p.build(j)
}

// Decode checks config's shape (see Decode).
func (*Provider) Decode(config json.RawMessage) []api.FieldError {
	_, errs := Decode(config)
	return errs
}

// Languages are the configuration's PromQL fields: the two queries, and
// the four counters of counts.
func (*Provider) Languages() map[string]lang.Language {
	return map[string]lang.Language{
		"canary": promql.Language{}, "baseline": promql.Language{},
		"counts.canary.bad": promql.Language{}, "counts.canary.total": promql.Language{},
		"counts.baseline.bad": promql.Language{}, "counts.baseline.total": promql.Language{},
	}
}

// CredentialFields are Prometheus' (prometheus.CredentialFields): a
// judge's connection is configured as a Prometheus metric's.
func (*Provider) CredentialFields() []provider.CredentialField { return prometheus.CredentialFields }

// Report declares what the report shows of a judge's metric: its two
// resolved queries and a control's offset. The distributions compared and
// a counts metric's looks are drawn from the measurements' metadata.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{Metadata: []string{ResolvedCanaryQuery, ResolvedBaselineQuery, BaselineOffset}}
}

// Credentials lists the credentials the queries send (see
// prometheus.Credentials).
func (*Provider) Credentials(config json.RawMessage) []string {
	var j Metric
	if json.Unmarshal(config, &j) != nil {
		return nil
	}
	return prometheus.Credentials(j.Headers, j.Authentication)
}

// Scored tells the metric's scoring group and whether it is critical. A
// configuration with a value of the wrong type (reported by Source) tells
// what it can.
func (*Provider) Scored(config json.RawMessage) spec.Scored {
	var j struct {
		Critical bool   `json:"critical"`
		Group    string `json:"group"`
	}
	_ = json.Unmarshal(config, &j)
	return spec.Scored{Group: j.Group, Critical: j.Critical, Path: base}
}

// DefaultConditions are DefaultSuccessCondition and
// DefaultFailureCondition; for counts, DefaultCountsSuccessCondition and
// DefaultCountsFailureCondition.
func (*Provider) DefaultConditions(config json.RawMessage) (success, failure string) {
	var j struct {
		Counts json.RawMessage `json:"counts"`
	}
	if json.Unmarshal(config, &j) == nil && len(j.Counts) > 0 && string(j.Counts) != "null" {
		return DefaultCountsSuccessCondition, DefaultCountsFailureCondition
	}
	return DefaultSuccessCondition, DefaultFailureCondition
}

// build makes a judge metric's source from two Prometheus range queries,
// one per side, so that both go through the Prometheus provider's
// datasources and credentials. Their problems are reported on the judge's
// fields: provider.prometheus.query on canary or baseline, the other
// provider.prometheus fields on provider.judge's.
func (p *Provider) build(j *Metric) (analysis.Source, map[string]string, []api.FieldError) {
	if j.Counts != nil {
		return p.buildCounts(j)
	}
	lookback, step, offset := j.Window()
	side := func(query string, offset time.Duration) *prometheus.Metric {
		start := fmt.Sprintf("now() - duration(%q)", (offset + lookback).String())
		end := "now()"
		if offset > 0 {
			end = fmt.Sprintf("now() - duration(%q)", offset.String())
		}
		return &prometheus.Metric{
			Address:        j.Address,
			Query:          query,
			Authentication: j.Authentication,
			Timeout:        j.Timeout,
			Insecure:       j.Insecure,
			Headers:        slices.Clone(j.Headers),
			RangeQuery:     &prometheus.RangeQuery{Start: start, End: end, Step: step.String()},
		}
	}
	baselineQuery, baselineField := j.Baseline, "baseline"
	if j.Control != nil {
		baselineQuery, baselineField = j.Canary, "canary"
	}
	canary, _, canaryErrs := p.prometheus(side(j.Canary, 0))
	baseline, _, baselineErrs := p.prometheus(side(baselineQuery, offset))

	var problems []api.FieldError
	seen := map[api.FieldError]bool{}
	for _, e := range slices.Concat(judgeFields(canaryErrs, "canary"), judgeFields(baselineErrs, baselineField)) {
		if !seen[e] {
			seen[e] = true
			problems = append(problems, e)
		}
	}
	if len(problems) > 0 {
		return nil, nil, problems
	}
	source := New(Options{
		Canary: canary, Baseline: baseline, Lookback: lookback, Offset: offset, Config: j.Config(),
	})
	metadata := map[string]string{
		ResolvedCanaryQuery:   j.Canary,
		ResolvedBaselineQuery: baselineQuery,
	}
	if j.Control != nil {
		metadata[BaselineOffset] = j.Control.Offset
	}
	return source, metadata, nil
}

// Metadata keys of a counts metric's result: its four counters, arguments
// substituted.
const (
	ResolvedCanaryBadQuery     = "ResolvedCanaryBadQuery"
	ResolvedCanaryTotalQuery   = "ResolvedCanaryTotalQuery"
	ResolvedBaselineBadQuery   = "ResolvedBaselineBadQuery"
	ResolvedBaselineTotalQuery = "ResolvedBaselineTotalQuery"
)

// buildCounts makes a counts metric's source from four Prometheus sources,
// one per counter, which it range-queries (series.Source) itself.
func (p *Provider) buildCounts(j *Metric) (analysis.Source, map[string]string, []api.FieldError) {
	c := j.Counts
	queries := [4]string{c.Canary.Bad, c.Canary.Total, c.Baseline.Bad, c.Baseline.Total}
	var sources [4]analysis.Source
	var problems []api.FieldError
	seen := map[api.FieldError]bool{}
	for i, q := range queries {
		src, _, errs := p.prometheus(&prometheus.Metric{
			Address:        j.Address,
			Query:          q,
			Authentication: j.Authentication,
			Timeout:        j.Timeout,
			Insecure:       j.Insecure,
			Headers:        slices.Clone(j.Headers),
		})
		sources[i] = src
		for _, e := range judgeFields(errs, "counts."+counterFields[i]) {
			if !seen[e] {
				seen[e] = true
				problems = append(problems, e)
			}
		}
	}
	if len(problems) > 0 {
		return nil, nil, problems
	}
	maxValues := 0
	if m, ok := sources[0].(interface{ MaxResultValues() int }); ok {
		maxValues = m.MaxResultValues()
	}
	lookback, step := j.HistoryWindow()
	if lookback > 0 && maxValues > 0 && int64(lookback/step)+1 > int64(maxValues) {
		h := j.Counts.History
		stepText := cmp.Or(h.Step, DefaultHistoryStep.String()+" (the default)")
		return nil, nil, []api.FieldError{{Field: base + ".counts.history.step", Message: fmt.Sprintf(
			"a history of %s at a step of %s is %d points a series, more than the %d values a query may return (--max-result-values): make step longer or lookback shorter",
			h.Lookback, stepText, lookback/step+1, maxValues)}}
	}
	source := NewCountSource(CountOptions{
		CanaryBad: sources[0], CanaryTotal: sources[1], BaselineBad: sources[2], BaselineTotal: sources[3],
		Config: j.CountConfig(), Critical: j.Critical, MaxValues: maxValues,
		HistoryLookback: lookback, HistoryStep: step,
	})
	metadata := map[string]string{
		ResolvedCanaryBadQuery: queries[0], ResolvedCanaryTotalQuery: queries[1],
		ResolvedBaselineBadQuery: queries[2], ResolvedBaselineTotalQuery: queries[3],
	}
	return source, metadata, nil
}

// judgeFields moves the Prometheus provider's problems with one side's
// query onto the judge's fields.
func judgeFields(errs []api.FieldError, queryField string) []api.FieldError {
	const prom = "provider.prometheus"
	out := make([]api.FieldError, 0, len(errs))
	for _, e := range errs {
		switch rest, ok := strings.CutPrefix(e.Field, prom); {
		case !ok:
		case rest == ".query":
			e.Field = base + "." + queryField
		case strings.HasPrefix(rest, ".rangeQuery"):
			e.Field = base + ".lookback"
		default:
			e.Field = base + rest
		}
		out = append(out, e)
	}
	return out
}
