package compile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider"
	judgesource "github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/spec"
)

// Compiled is a document made ready to run.
type Compiled struct {
	// Plan is what the engine runs.
	Plan *analysis.Plan
	// Spec is the spec with its arguments resolved.
	Spec *spec.Spec
	// Args are the argument values used.
	Args map[string]string
}

// Compile takes a parsed document as far as it can go before anything runs:
// it resolves the arguments (spec.Spec.Resolve), validates the spec
// (spec.Spec.Validate), compiles every condition (internal/condition) and
// has the provider that providers registers under each metric's provider
// name build its source (a metric naming a provider that none is
// registered for is a problem on provider.<name>). Every problem found is returned, each with
// its field path; a plan is returned only when there is none. Options bound
// what the spec may ask (WithLimits).
//
// The values of secret arguments (see IsSecretArg) and the credentials a
// metric sends are kept out of everything the plan shows: the conditions
// quoted in its messages and the queries in its metadata read ***** in
// their place, and the errors of its sources and conditions, and the
// problems returned, have them replaced by *****.
func Compile(doc *spec.Document, overrides map[string]string, providers Providers, opts ...Option) (*Compiled, []api.FieldError) {
	var o compileOptions
	for _, opt := range opts {
		opt(&o)
	}
	// A spec over the limit of metrics is not looked at further: its size
	// is the problem, and looking would be the work the limit saves.
	if problems := o.limits.checkMetricCount(&doc.Spec); len(problems) > 0 {
		return nil, problems
	}
	res, problems := doc.Spec.Resolve(overrides, o.limits.resolveOptions(doc.APIVersion == spec.APIVersion))
	// Every text shown from here on, problems included, has the values
	// of secret arguments and credentials replaced.
	redact := newRedactor(&doc.Spec, overrides, res)
	if len(problems) > 0 {
		redact.problems(problems)
		return nil, problems
	}
	resolved := res.Spec
	// Validation and compilation both run, so that every problem is
	// reported at once. Validate leaves a provider's configuration to the
	// provider, so each problem is reported once.
	problems = resolved.Validate()
	dryRun := resolved.DryRunMetrics()
	retention := resolved.RetentionLimits()
	plan := &analysis.Plan{Metrics: make([]analysis.Metric, 0, len(resolved.Metrics))}
	if resolved.Scoring != nil {
		cfg := resolved.Scoring.Config()
		plan.Scoring = &cfg
	}
	for i := range resolved.Metrics {
		m := &resolved.Metrics[i]
		path := fmt.Sprintf("metrics[%d].", i)
		am, errs := compileMetric(m, providers, o)
		if redact != nil {
			if res.Display != nil {
				// Shown in the messages that explain a verdict.
				shown := &res.Display.Metrics[i]
				am.SuccessCondition, am.FailureCondition = shown.SuccessCondition, shown.FailureCondition
				if am.Compared && m.SuccessCondition == "" && m.FailureCondition == "" {
					am.SuccessCondition, am.FailureCondition = spec.DefaultJudgeSuccessCondition, spec.DefaultJudgeFailureCondition
				}
			}
			am.Metadata = redact.metadata(am.Metadata)
			if am.Source != nil {
				am.Source = redactingSource{inner: am.Source, r: redact}
			}
			if am.Judge != nil {
				am.Judge = redactingJudge{inner: am.Judge, r: redact}
			}
		}
		for _, e := range errs {
			e.Message += doc.CommentHint(path + e.Field)
			problems = append(problems, api.FieldError{Field: path + e.Field, Message: e.Message})
		}
		am.DryRun = dryRun[m.Name]
		if n, ok := retention[m.Name]; ok {
			am.Retention = n
		}
		plan.Metrics = append(plan.Metrics, am)
	}
	if len(problems) > 0 {
		redact.problems(problems)
		return nil, problems
	}
	return &Compiled{Plan: plan, Spec: resolved, Args: argValues(resolved, overrides)}, nil
}

// ParseAndCompile parses data (spec.Parse) and compiles it, returning every problem of
// both steps: a document whose only problems are unknown fields is still
// compiled, so that a typo and a bad condition are reported together.
func ParseAndCompile(data []byte, overrides map[string]string, providers Providers) (*spec.Document, *Compiled, []api.FieldError) {
	doc, problems := spec.Parse(data)
	if doc == nil {
		return nil, nil, problems
	}
	compiled, more := Compile(doc, overrides, providers)
	problems = append(problems, more...)
	if len(problems) > 0 {
		return doc, nil, problems
	}
	return doc, compiled, nil
}

// WithPrograms makes Compile share the conditions' validation and compiled
// programs through p (see condition.Programs): a service that compiles the
// same spec for every request, or a template for thousands of analyses,
// compiles each condition once rather than twice per request and keeps one
// program for them all.
func WithPrograms(p *condition.Programs) Option {
	return func(o *compileOptions) { o.programs = p }
}

// compileMetric turns one validated metric into the engine's form.
func compileMetric(m *spec.Metric, providers Providers, o compileOptions) (analysis.Metric, []api.FieldError) {
	limits := o.limits
	// Validate has already rejected durations and limits that do not
	// parse, so the errors below cannot happen.
	interval, _ := m.IntervalDuration()
	initialDelay, _ := m.InitialDelayDuration()
	am := analysis.Metric{
		Name:                    m.Name,
		Interval:                interval,
		InitialDelay:            initialDelay,
		Count:                   analysis.EffectiveCount(m.CountValue(), interval),
		FailureLimit:            m.FailureLimitValue(),
		InconclusiveLimit:       m.InconclusiveLimitValue(),
		ConsecutiveErrorLimit:   m.ConsecutiveErrorLimitValue(),
		ConsecutiveSuccessLimit: m.ConsecutiveSuccessLimitValue(),
		Retention:               analysis.DefaultMeasurementRetention,
		SuccessCondition:        m.SuccessCondition,
		FailureCondition:        m.FailureCondition,
		NoData:                  api.Phase(m.NoData),
		Group:                   m.ScoringGroup(),
		Compared:                m.Provider.Judge != nil,
	}
	if am.Compared && am.SuccessCondition == "" && am.FailureCondition == "" {
		am.SuccessCondition, am.FailureCondition = spec.DefaultJudgeSuccessCondition, spec.DefaultJudgeFailureCondition
	}
	conditions, problems := condition.Compile(am.SuccessCondition, am.FailureCondition,
		append(limits.conditionOptions(), condition.WithPrograms(o.programs))...)
	am.Judge = conditions
	problems = append(problems, limits.checkSchedule(&am)...)
	// None or several providers: Validate says so.
	if names := m.Provider.Names(); len(names) == 1 {
		name := names[0]
		p, ok := providers.Lookup(name)
		if !ok {
			problems = append(problems, api.FieldError{Field: "provider." + name, Message: fmt.Sprintf(
				"provider %s is not supported by this canaryd (it runs %s)", name, strings.Join(providers.Names(), ", "))})
			return am, problems
		}
		source, metadata, errs := p.Source(m.Provider.Config(name))
		problems = append(problems, errs...)
		am.Source, am.Metadata = source, metadata
	}
	return am, problems
}

// compileJudge builds a judge metric's source from two Prometheus
// range queries, one per side, so that both go through the Prometheus
// provider's datasources and credentials. Their problems are reported on
// the judge's fields: provider.prometheus.query on canary or baseline, the
// other provider.prometheus fields on provider.judge's.
func compileJudge(j *spec.JudgeMetric, prometheus provider.Provider) (analysis.Source, map[string]string, []api.FieldError) {
	lookback, step, offset := j.Window()
	side := func(query string, offset time.Duration) *spec.PrometheusMetric {
		start := fmt.Sprintf("now() - duration(%q)", (offset + lookback).String())
		end := "now()"
		if offset > 0 {
			end = fmt.Sprintf("now() - duration(%q)", offset.String())
		}
		return &spec.PrometheusMetric{
			Address:        j.Address,
			Query:          query,
			Authentication: j.Authentication,
			Timeout:        j.Timeout,
			Insecure:       j.Insecure,
			Headers:        slices.Clone(j.Headers),
			RangeQuery:     &spec.PrometheusRangeQueryArgs{Start: start, End: end, Step: step.String()},
		}
	}
	baselineQuery, baselineField := j.Baseline, "baseline"
	if j.Control != nil {
		baselineQuery, baselineField = j.Canary, "canary"
	}
	canary, _, canaryErrs := prometheus.Source(side(j.Canary, 0))
	baseline, _, baselineErrs := prometheus.Source(side(baselineQuery, offset))

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
	source := judgesource.New(judgesource.Options{
		Canary: canary, Baseline: baseline, Lookback: lookback, Offset: offset, Config: j.Config(),
	})
	metadata := map[string]string{
		judgesource.ResolvedCanaryQuery:   j.Canary,
		judgesource.ResolvedBaselineQuery: baselineQuery,
	}
	if j.Control != nil {
		metadata[judgesource.BaselineOffset] = j.Control.Offset
	}
	return source, metadata, nil
}

// judgeFields moves the Prometheus provider's problems with one side's
// query onto the judge's fields.
func judgeFields(errs []api.FieldError, queryField string) []api.FieldError {
	const prom, judge = "provider.prometheus", "provider.judge"
	out := make([]api.FieldError, 0, len(errs))
	for _, e := range errs {
		switch rest, ok := strings.CutPrefix(e.Field, prom); {
		case !ok:
		case rest == ".query":
			e.Field = judge + "." + queryField
		case strings.HasPrefix(rest, ".rangeQuery"):
			e.Field = judge + ".lookback"
		default:
			e.Field = judge + rest
		}
		out = append(out, e)
	}
	return out
}

// argValues lists the argument values an analysis runs with, for its
// resource. Values that look like credentials are masked.
func argValues(s *spec.Spec, overrides map[string]string) map[string]string {
	if len(s.Args) == 0 {
		return nil
	}
	out := make(map[string]string, len(s.Args))
	for _, a := range s.Args {
		v := ""
		if a.Value != nil {
			v = *a.Value
		}
		if o, ok := overrides[a.Name]; ok {
			v = o
		}
		if IsSecretArg(a.Name) || (a.ValueFrom != nil && a.ValueFrom.SecretKeyRef != nil) {
			v = spec.Masked
		}
		out[a.Name] = v
	}
	return out
}

// IsSecretArg reports whether an argument's value is masked in resources,
// logs and messages: its name holds one of redact's secret words.
func IsSecretArg(name string) bool { return redact.IsSecretName(name) }
