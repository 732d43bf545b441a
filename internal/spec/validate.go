package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/canaryd/canaryd/api"
)

// Validate checks a resolved spec (see Resolve) and returns every problem,
// each on the most specific field it concerns.
//
// It applies Argo Rollouts' rules with Argo's messages (utils/analysis
// factory.go ValidateMetric, helpers.go for dryRun and
// measurementRetention), and these stricter rules of canaryd's own, each
// about something Argo would run without a word although the user cannot
// have meant it:
//   - a count or limit given as a string must be an integer (Argo reads
//     "abc" as 0), and count must not be negative;
//   - interval and initialDelay must not be negative;
//   - the metric must name exactly one provider (what its configuration
//     must be is the provider's to check, when internal/compile builds it);
//   - a dryRun or measurementRetention rule must be a valid regular
//     expression (Argo treats an invalid one as matching nothing), and a
//     measurementRetention limit must not be negative (Argo treats it as 0,
//     the default);
//   - names (metric, argument, rule) and header keys must not be empty.
//
// canaryd's extensions are checked too: the spec's scoring (see
// validateScoring), and the fields of a metric's provider that depend on
// it (a judge's critical and group), which scored tells for each metric
// (nil: every metric is in DefaultGroup and sets none); the provider's
// other fields are its own to check.
//
// Conditions and addresses are not checked here.
func (s *Spec) Validate(scored func(m *Metric) Scored) []api.FieldError {
	var errs []api.FieldError
	if len(s.Metrics) == 0 {
		errs = append(errs, api.FieldError{Field: "metrics", Message: "no metrics specified"})
	}
	seen := make(map[string]bool, len(s.Metrics))
	groups := make([]Scored, len(s.Metrics))
	for i := range s.Metrics {
		m := &s.Metrics[i]
		path := indexPath("metrics", i)
		if scored != nil {
			groups[i] = scored(m)
		}
		errs = append(errs, StructRules(path, m)...)
		if m.Name != "" {
			if seen[m.Name] {
				errs = append(errs, api.FieldError{Field: path + ".name", Message: fmt.Sprintf("duplicate name '%s'", m.Name)})
			}
			seen[m.Name] = true
		}
		errs = append(errs, validateMetric(path, m, groups[i], s.Scoring != nil)...)
	}
	for i := range s.Args {
		errs = append(errs, StructRules(indexPath("args", i), &s.Args[i])...)
	}

	dryRun := make([]string, len(s.DryRun))
	for i := range s.DryRun {
		errs = append(errs, StructRules(indexPath("dryRun", i), &s.DryRun[i])...)
		dryRun[i] = s.DryRun[i].MetricName
	}
	errs = append(errs, validateRules("dryRun", dryRun, s.Metrics, "two Dry-Run metric rules have the same name '%s'")...)

	retention := make([]string, len(s.MeasurementRetention))
	for i := range s.MeasurementRetention {
		errs = append(errs, StructRules(indexPath("measurementRetention", i), &s.MeasurementRetention[i])...)
		retention[i] = s.MeasurementRetention[i].MetricName
	}
	errs = append(errs, validateRules("measurementRetention", retention, s.Metrics, "two Measurement Retention metric rules have the same name '%s'")...)
	errs = append(errs, s.validateScoring(groups)...)
	return errs
}

// validateMetric applies Argo's ValidateMetric to one metric. Argo stops at
// the first problem; this reports all of them, but checks a combination of
// fields only when each of them is valid on its own, so that one mistake
// gives one message.
func validateMetric(path string, m *Metric, sc Scored, scoring bool) []api.FieldError {
	var errs []api.FieldError
	add := func(field, msg string) {
		errs = append(errs, api.FieldError{Field: path + "." + field, Message: msg})
	}
	// count reads an int-or-string field, reporting a string that is not an
	// integer. ok is false when the value is unusable.
	count := func(field string, v *IntOrString) (n int, ok bool) {
		if v == nil {
			return 0, true
		}
		i, err := v.Int32()
		if err != nil {
			msg := fmt.Sprintf("%s must be an integer: %v", field, err)
			if errors.Is(err, errNotInteger) {
				msg += " (Argo Rollouts would silently read it as 0)"
			}
			add(field, msg)
			return 0, false
		}
		return int(i), true
	}

	cnt, cntOK := count("count", m.Count)
	fl, flOK := count("failureLimit", m.FailureLimit)
	csl, cslOK := count("consecutiveSuccessLimit", m.ConsecutiveSuccessLimit)
	il, ilOK := count("inconclusiveLimit", m.InconclusiveLimit)
	cel, celOK := count("consecutiveErrorLimit", m.ConsecutiveErrorLimit)

	if cslOK && csl < 0 {
		add("consecutiveSuccessLimit", "consecutiveSuccessLimit must be >= 0")
		cslOK = false
	}
	if flOK && fl < -1 {
		add("failureLimit", "failureLimit must be >= 0, or -1 to be disabled")
		flOK = false
	}
	if cslOK && flOK && csl == 0 && fl == -1 {
		add("failureLimit", "failureLimit and consecutiveSuccessLimit cannot both be disabled")
	}
	if ilOK && il < 0 {
		add("inconclusiveLimit", "inconclusiveLimit must be >= 0")
		ilOK = false
	}
	if celOK && cel < 0 {
		add("consecutiveErrorLimit", "consecutiveErrorLimit must be >= 0")
	}
	if cntOK && cnt < 0 {
		add("count", "count must be >= 0 (0 or no count: one measurement without an interval, indefinitely with one)")
	}
	if cntOK && cnt > 0 {
		switch {
		case cslOK && flOK && fl >= 0:
			if cnt < fl+csl {
				add("count", fmt.Sprintf("count (%d) must be >= failureLimit + consecutiveSuccessLimit (%d + %d) if both >= 0", cnt, fl, csl))
			}
		case cslOK && flOK:
			if cnt < csl {
				add("count", "count must be >= consecutiveSuccessLimit")
			}
		}
		if ilOK && cnt < il {
			add("count", "count must be >= inconclusiveLimit")
		}
	}

	if cntOK && cnt > 1 && m.Interval == "" {
		add("interval", "interval must be specified when count > 1")
	}
	if _, err := m.IntervalDuration(); err != nil {
		add("interval", err.Error())
	}
	if _, err := m.InitialDelayDuration(); err != nil {
		add("initialDelay", err.Error())
	}

	if m.NoData != "" && isSet(m.Provider.Judge) {
		add("noData", `noData does not apply to a judge metric, whose missing data the judge classifies (Nodata, or NodataFailMetric with mustHaveData); `+
			`decide it with the conditions instead, e.g. failureCondition: result.classification != "Pass"`)
	}
	if problems := validateProvider(path+".provider", &m.Provider); len(problems) > 0 {
		return append(errs, problems...)
	}
	return append(errs, validateScored(path, sc, scoring)...)
}

// validateProvider applies Argo's one-provider rule. Which providers
// canaryd runs, and what each one's configuration must be, is for the
// provider the registry finds (see internal/compile): each reports its own
// problems, once.
func validateProvider(path string, p *MetricProvider) []api.FieldError {
	switch names := p.Names(); {
	case len(names) == 0:
		return []api.FieldError{{Field: path, Message: "no provider specified"}}
	case len(names) > 1:
		return []api.FieldError{{Field: path, Message: "multiple providers specified"}}
	}
	return nil
}

// Names lists the providers that are set, by their JSON names, as Argo
// counts them: each entry of plugin is one provider.
func (p *MetricProvider) Names() []string {
	var names []string
	for _, o := range p.raw() {
		if isSet(o.raw) {
			names = append(names, o.name)
		}
	}
	if isSet(p.Plugin) {
		var plugins map[string]json.RawMessage
		if err := json.Unmarshal(p.Plugin, &plugins); err != nil {
			names = append(names, "plugin") // not a map: still a provider named
		}
		for range plugins {
			names = append(names, "plugin")
		}
	}
	return names
}

// isSet reports whether a provider's raw configuration is present: JSON
// null is absence, as it is for Argo's pointer fields.
func isSet(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// validateRules checks dryRun or measurementRetention metric names: Argo's
// duplicate and no-match rules, and that each is a regular expression.
func validateRules(kind string, rules []string, metrics []Metric, duplicate string) []api.FieldError {
	var errs []api.FieldError
	seen := make(map[string]bool, len(rules))
	for i, rule := range rules {
		field := indexPath(kind, i) + ".metricName"
		if rule == "" {
			continue // reported as missing
		}
		if seen[rule] {
			errs = append(errs, api.FieldError{Field: field, Message: fmt.Sprintf(duplicate, rule)})
			continue
		}
		seen[rule] = true
		re, err := regexp.Compile(rule)
		if err != nil {
			msg := "invalid regular expression: " + err.Error()
			if strings.Contains(rule, "*") {
				msg += `; metric names are matched by unanchored Go regular expressions, so a bare "*" must be written ".*"`
			}
			errs = append(errs, api.FieldError{Field: field, Message: msg})
			continue
		}
		if !matchesAny(re, metrics) {
			errs = append(errs, api.FieldError{Field: field, Message: "Rule didn't match any metric name(s)"})
		}
	}
	return errs
}

func matchesAny(re *regexp.Regexp, metrics []Metric) bool {
	for i := range metrics {
		if re.MatchString(metrics[i].Name) {
			return true
		}
	}
	return false
}

// shape checks the `validate` tags of the spec types. It is built once: a
// validator caches what it learns of each type, and is safe for concurrent
// use.
var shape = newShapeValidator()

func newShapeValidator() *validator.Validate {
	v := validator.New()
	// Paths in JSON names, as the input spells them.
	v.RegisterTagNameFunc(jsonName)
	return v
}

// shapeErrors validates one element of the spec (a metric, an argument, a
// rule) whose path is prefix.
func StructRules(prefix string, v any) []api.FieldError {
	err := shape.Struct(v)
	if err == nil {
		return nil
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return []api.FieldError{{Field: prefix, Message: err.Error()}}
	}
	out := make([]api.FieldError, 0, len(ves))
	for _, fe := range ves {
		// The namespace starts with the Go type's name: "Metric.name".
		_, rel, _ := strings.Cut(fe.Namespace(), ".")
		out = append(out, api.FieldError{Field: joinPath(prefix, rel), Message: shapeMessage(fe)})
	}
	return out
}

func shapeMessage(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return fe.Field() + " must be specified"
	case "gte":
		msg := fmt.Sprintf("%s must be >= %s", fe.Field(), fe.Param())
		if fe.StructNamespace() == "MeasurementRetention.Limit" {
			msg += " (0 keeps the default of 10 measurements)"
		}
		return msg
	case "oneof":
		return fmt.Sprintf("%s must be one of %s, got %q", fe.Field(), strings.Join(strings.Fields(fe.Param()), ", "), fe.Value())
	}
	return fmt.Sprintf("%s fails the %q rule", fe.Field(), fe.Tag())
}
