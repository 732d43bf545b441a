package judge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	stats "github.com/canaryd/canaryd/internal/judge"
)

// Metadata keys of a judge metric's result and measurements.
const (
	// ResolvedCanaryQuery and ResolvedBaselineQuery hold the two queries,
	// arguments substituted, on the metric result (after Argo's
	// ResolvedPrometheusQuery). For a control both are the canary query.
	ResolvedCanaryQuery   = "ResolvedCanaryQuery"
	ResolvedBaselineQuery = "ResolvedBaselineQuery"
	// BaselineOffset holds a control's offset on the metric result.
	BaselineOffset = "BaselineOffset"

	// On each measurement, internal/judge's metadata keys: the judge's
	// reason, its warnings, the two windows compared, and for a report to
	// draw the estimate, its interval and level, the p-value and each
	// side's sample.
	MetadataReason          = stats.MetadataReason
	MetadataWarnings        = stats.MetadataWarnings
	MetadataCanaryWindow    = stats.MetadataCanaryWindow
	MetadataBaselineWindow  = stats.MetadataBaselineWindow
	MetadataEstimate        = stats.MetadataEstimate
	MetadataInterval        = stats.MetadataInterval
	MetadataConfidenceLevel = stats.MetadataConfidenceLevel
	MetadataPValue          = stats.MetadataPValue
	MetadataCanarySample    = stats.MetadataCanarySample
	MetadataBaselineSample  = stats.MetadataBaselineSample
	MetadataCanarySampleN   = stats.MetadataCanarySampleN
	MetadataBaselineSampleN = stats.MetadataBaselineSampleN
)

// MaxSampleValues is the most values of each side's sample a measurement
// keeps (stats.MaxSampleValues).
const MaxSampleValues = stats.MaxSampleValues

// Options make a Source.
type Options struct {
	// Canary and Baseline measure the two sides: Prometheus range queries
	// over [at − Lookback, at] and, for a control, [at − Offset − Lookback,
	// at − Offset]. Their values must be []float64 or float64.
	Canary, Baseline analysis.Source
	// Lookback and Offset describe those windows in the measurement's
	// metadata; they do not move them.
	Lookback, Offset time.Duration
	// Config is how the samples are judged.
	Config stats.Config
}

// Source measures one judge metric. It is safe for concurrent use.
type Source struct {
	o Options
}

// New returns a Source for o.
func New(o Options) *Source { return &Source{o: o} }

// BoundByContext reports whether Measure returns when its context is done:
// when both sides' sources do.
func (s *Source) BoundByContext() bool {
	return bound(s.o.Canary) && bound(s.o.Baseline)
}

func bound(src analysis.Source) bool {
	b, ok := src.(analysis.ContextBound)
	return ok && b.BoundByContext()
}

// Measure queries both sides as of at, concurrently, and judges them.
func (s *Source) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if at.IsZero() {
		at = time.Now()
	}
	if s.o.Canary == nil || s.o.Baseline == nil {
		return analysis.Observation{Err: errors.New("judge metric has no Prometheus source")}
	}
	var canary, baseline analysis.Observation
	var wg sync.WaitGroup
	wg.Add(2)
	// Both end when their source returns; sources honour ctx.
	go func() { defer wg.Done(); canary = s.o.Canary.Measure(ctx, at) }()
	go func() { defer wg.Done(); baseline = s.o.Baseline.Measure(ctx, at) }()
	wg.Wait()

	md := map[string]string{
		MetadataCanaryWindow:   window(at, s.o.Lookback),
		MetadataBaselineWindow: window(at.Add(-s.o.Offset), s.o.Lookback),
	}
	for prefix, o := range map[string]analysis.Observation{"canary": canary, "baseline": baseline} {
		for k, v := range o.Metadata {
			if k != "" {
				md[prefix+strings.ToUpper(k[:1])+k[1:]] = v
			}
		}
	}

	var errs []error
	c, err := sample(canary)
	if err != nil {
		errs = append(errs, fmt.Errorf("canary query: %w", err))
	}
	b, err := sample(baseline)
	if err != nil {
		errs = append(errs, fmt.Errorf("baseline query: %w", err))
	}
	if len(errs) > 0 {
		return analysis.Observation{Metadata: md, Err: errors.Join(errs...)}
	}

	res := stats.Classify(c, b, s.o.Config)
	md[analysis.MetadataClassification] = string(res.Classification)
	if res.Critical {
		md[analysis.MetadataCritical] = "true"
	}
	md[MetadataReason] = res.Reason
	if res.Classification != stats.Error {
		recordSamples(md, res, c, b, s.o.Config.ConfidenceLevel)
	}
	if len(res.Warnings) > 0 {
		md[MetadataWarnings] = strings.Join(res.Warnings, "; ")
	}
	obs := analysis.Observation{Value: Value(res), Display: Display(res), Metadata: md}
	if res.Classification == stats.Error {
		obs.Err = errors.New("judge: " + res.Reason)
	}
	return obs
}

// sample is one side's points: a flattened range query ([]float64), or a
// scalar.
func sample(o analysis.Observation) ([]float64, error) {
	if o.Err != nil {
		return nil, o.Err
	}
	switch v := o.Value.(type) {
	case []float64:
		return v, nil
	case float64:
		return []float64{v}, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected result of type %T", o.Value)
}

func window(end time.Time, lookback time.Duration) string {
	const layout = time.RFC3339
	return end.Add(-lookback).UTC().Format(layout) + "/" + end.UTC().Format(layout)
}

// Value is the result the conditions see: a map, so that
// `result.classification == "Pass"` and `result.canary.n >= 50` work, and
// its JSON is what a reader expects. NaN and ±Inf become nil, and so do the
// statistics of an empty sample.
func Value(r stats.Result) map[string]any {
	warnings := r.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	return map[string]any{
		"classification":     string(r.Classification),
		"reason":             r.Reason,
		"pValue":             number(r.PValue),
		"estimate":           number(r.Estimate),
		"confidenceInterval": []any{number(r.ConfidenceInterval[0]), number(r.ConfidenceInterval[1])},
		"effectSize":         number(r.EffectSize),
		"meanRatio":          number(r.MeanRatio),
		"critical":           r.Critical,
		"warnings":           warnings,
		"canary":             sampleValue(r.Canary),
		"baseline":           sampleValue(r.Baseline),
	}
}

func sampleValue(s stats.SampleStats) map[string]any {
	v := map[string]any{"n": s.N, "nan": s.NaN, "outliers": s.Outliers}
	for k, f := range map[string]float64{"mean": s.Mean, "median": s.Median, "min": s.Min, "max": s.Max, "stdDev": s.StdDev} {
		if s.N == 0 {
			v[k] = nil
			continue
		}
		v[k] = number(f)
	}
	return v
}

// number is f, or nil when it is not finite.
func number(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// Display is the measurement's value in one line: the classification and
// the p-value, the estimated shift canary − baseline and the mean ratio;
// for missing data, the size of each sample.
func Display(r stats.Result) string {
	switch r.Classification {
	case stats.Nodata, stats.NodataFailMetric:
		return fmt.Sprintf("%s (canary n=%d, baseline n=%d)", r.Classification, r.Canary.N, r.Baseline.N)
	case stats.Error:
		return string(r.Classification)
	}
	if r.Canary.N == 0 || r.Baseline.N == 0 {
		// Pass under nanStrategy replace with a side left empty.
		return fmt.Sprintf("%s (canary n=%d, baseline n=%d)", r.Classification, r.Canary.N, r.Baseline.N)
	}
	ratio := "n/a"
	if !math.IsNaN(r.MeanRatio) && !math.IsInf(r.MeanRatio, 0) {
		ratio = strconv.FormatFloat(r.MeanRatio, 'f', 2, 64)
	}
	return fmt.Sprintf("%s (p=%s, shift=%s, ratio=%s)", r.Classification,
		strconv.FormatFloat(r.PValue, 'g', 2, 64), fmt.Sprintf("%+.4g", r.Estimate), ratio)
}

// recordSamples keeps, in a measurement's metadata, what a report draws of
// a comparison: each side's sample (at most MaxSampleValues values), and
// the estimate of the shift with its interval when they are numbers.
func recordSamples(md map[string]string, res stats.Result, canary, baseline []float64, level float64) {
	for _, side := range []struct {
		key, nKey string
		values    []float64
	}{{MetadataCanarySample, MetadataCanarySampleN, canary}, {MetadataBaselineSample, MetadataBaselineSampleN, baseline}} {
		kept, n := sampleValues(side.values)
		if n == 0 {
			continue
		}
		md[side.key] = kept
		md[side.nKey] = strconv.Itoa(n)
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	if finite(res.Estimate) {
		md[MetadataEstimate] = formatFloat(res.Estimate)
	}
	if lo, hi := res.ConfidenceInterval[0], res.ConfidenceInterval[1]; finite(lo) && finite(hi) {
		md[MetadataInterval] = formatFloat(lo) + "," + formatFloat(hi)
		if level <= 0 || level >= 1 {
			level = stats.DefaultConfidenceLevel
		}
		md[MetadataConfidenceLevel] = formatFloat(level)
	}
	if finite(res.PValue) {
		md[MetadataPValue] = strconv.FormatFloat(res.PValue, 'g', 3, 64)
	}
}

// sampleValues is a sample's finite values, sorted, as at most
// MaxSampleValues evenly spaced order statistics joined by ",", and how
// many finite values it had.
func sampleValues(values []float64) (string, int) {
	finite := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			finite = append(finite, v)
		}
	}
	slices.Sort(finite)
	n := len(finite)
	k := min(n, MaxSampleValues)
	var b strings.Builder
	for i := range k {
		j := i
		if n > k {
			j = int(math.Round(float64(i) * float64(n-1) / float64(k-1)))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(formatFloat(finite[j]))
	}
	return b.String(), n
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
