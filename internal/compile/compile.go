package compile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/provider"
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
	// Credentials reports whether the spec's metrics carry credentials (a
	// credential header's value, a password, a client secret), as their
	// providers tell them (provider.Credentials): a store keeps such a
	// document sealed only.
	Credentials bool
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
	if problems := checkMetricCount(o.limits, &doc.Spec); len(problems) > 0 {
		return nil, problems
	}
	ro := resolveOptions(o.limits, doc.APIVersion == spec.APIVersion)
	ro.Languages = languages(providers)
	// Resolution goes on past its problems (a missing argument, a value
	// refused), with placeholders where tags could not be substituted, so
	// that validation, conditions, queries and providers are checked in
	// the same pass; only a spec over a bound stops here.
	ro.Continue = true
	res, resolveProblems := doc.Spec.Resolve(overrides, ro)
	// Every text shown from here on, problems included, has the values
	// of secret arguments and credentials replaced.
	redact := newRedactor(&doc.Spec, overrides, res, providers, ro.Languages)
	if res == nil {
		redact.problems(resolveProblems)
		return nil, resolveProblems
	}
	resolved := res.Spec
	// Validation and compilation both run, so that every problem is
	// reported at once. Validate leaves a provider's configuration to the
	// provider, so each problem is reported once.
	problems := resolved.Validate(scored(providers))
	dryRun := resolved.DryRunMetrics()
	retention := resolved.RetentionLimits()
	plan := &analysis.Plan{Metrics: make([]analysis.Metric, 0, len(resolved.Metrics))}
	if resolved.Scoring != nil {
		plan.Scoring = scoreConfig(resolved.Scoring)
	}
	for i := range resolved.Metrics {
		m := &resolved.Metrics[i]
		path := fmt.Sprintf("metrics[%d].", i)
		am, errs := compileMetric(m, providers, o)
		if redact != nil {
			// Shown in the messages that explain a verdict (a judge's
			// default conditions, which hold no argument, as they are).
			if res.Display != nil && (m.SuccessCondition != "" || m.FailureCondition != "") {
				shown := &res.Display.Metrics[i]
				am.SuccessCondition, am.FailureCondition = shown.SuccessCondition, shown.FailureCondition
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
	problems = append(resolveProblems, waiting(problems, res.Unresolved, doc.Pruned())...)
	if o.backtest {
		problems = pastFirst(PastProblems(resolved, providers), problems)
	}
	if len(problems) > 0 {
		redact.problems(problems)
		return nil, problems
	}
	return &Compiled{Plan: plan, Spec: resolved, Args: argValues(resolved, overrides), Credentials: holdsCredentials(resolved, providers)}, nil
}

// ParseAndCompile parses data (spec.Parse) and compiles it, returning every problem of
// both steps: a document whose only problems are unknown fields is still
// compiled, so that a typo and a bad condition are reported together; one
// that cannot be decoded has its providers' configurations checked for
// their shape (ShapeProblems).
func ParseAndCompile(data []byte, overrides map[string]string, providers Providers, opts ...Option) (*spec.Document, *Compiled, []api.FieldError) {
	doc, in, problems := spec.ParseInput(data)
	if doc == nil {
		return nil, nil, append(problems, ShapeProblems(in, providers)...)
	}
	compiled, more := Compile(doc, overrides, providers, opts...)
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
		Group:                   judge.DefaultGroup,
	}
	name, p, config := lookup(m, providers)
	if j, ok := p.(provider.Judged); ok {
		am.Compared = true
		if g := j.Scored(config).Group; g != "" {
			am.Group = g
		}
		if am.SuccessCondition == "" && am.FailureCondition == "" {
			am.SuccessCondition, am.FailureCondition = j.DefaultConditions(config)
		}
	}
	conditions, problems := condition.Compile(am.SuccessCondition, am.FailureCondition,
		append(conditionOptions(limits), condition.WithPrograms(o.programs))...)
	am.Judge = conditions
	problems = append(problems, checkSchedule(limits, &am)...)
	switch {
	case name == "":
		// None or several providers: Validate says so.
	case p == nil:
		problems = append(problems, api.FieldError{Field: "provider." + name, Message: fmt.Sprintf(
			"provider %s is not supported by this canaryd (it runs %s)", name, strings.Join(providers.Names(), ", "))})
	default:
		// Each query's language parses it first (PromQL with Prometheus'
		// parser): a query that does not parse is refused here, with its
		// position, rather than by the backend at the first measurement.
		problems = append(problems, checkLanguages(name, p, config)...)
		source, metadata, errs := p.Source(config)
		problems = append(problems, errs...)
		am.Source, am.Metadata = source, metadata
	}
	return am, problems
}

// waiting drops the problems that a fix elsewhere may change, each already
// said: those of a value that holds a placeholder (unresolved, see
// spec.Resolution.Unresolved; its argument's problem says it is checked
// once the argument has a value) and those of a field whose value is of
// the wrong type (pruned, see spec.Document.Pruned; its type is the
// problem). A field within such a field, or holding one, counts; so do the
// dryRun and measurementRetention rules when a metric's name is one. A
// query or a condition that holds a placeholder is checked with it, and
// its problems are kept.
func waiting(problems []api.FieldError, unresolved map[string]spec.Language, pruned []string) []api.FieldError {
	var held []string
	for field, lang := range unresolved {
		if lang == spec.ValueText {
			held = append(held, field)
		}
	}
	held = append(held, pruned...)
	if len(held) == 0 {
		return problems
	}
	for _, f := range held {
		if strings.HasPrefix(f, "metrics[") && strings.HasSuffix(f, "].name") {
			held = append(held, "dryRun", "measurementRetention")
			break
		}
	}
	out := problems[:0:0]
	for _, e := range problems {
		if !slices.ContainsFunc(held, func(f string) bool { return related(e.Field, f) }) {
			out = append(out, e)
		}
	}
	return out
}

// related reports whether two fields are the same, or one is within the
// other: "metrics[0].count" and "metrics[0]", not "metrics[0].co".
func related(a, b string) bool {
	return a == b || within(a, b) || within(b, a)
}

func within(path, parent string) bool {
	if len(path) <= len(parent) || !strings.HasPrefix(path, parent) {
		return false
	}
	c := path[len(parent)]
	return c == '.' || c == '['
}

// scoreConfig is the judge's configuration of a validated spec's scoring.
func scoreConfig(s *spec.Scoring) *judge.ScoreConfig {
	cfg := judge.ScoreConfig{
		GroupWeights: maps.Clone(s.Groups),
		Pass:         judge.DefaultPassThreshold,
		Marginal:     judge.DefaultMarginalThreshold,
	}
	if cfg.GroupWeights == nil {
		cfg.GroupWeights = map[string]float64{}
	}
	if s.Pass != nil {
		cfg.Pass = *s.Pass
	}
	if s.Marginal != nil {
		cfg.Marginal = *s.Marginal
	}
	return &cfg
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
