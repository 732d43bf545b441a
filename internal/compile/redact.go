package compile

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/series"
	"github.com/canaryd/canaryd/internal/spec"
)

// minSecretLength is the shortest value scrubbed from a text that canaryd
// did not write itself (an error of Prometheus or of a condition): a
// shorter one would garble every message it occurs in and protect nothing,
// being guessable in a few tries. The texts canaryd writes itself (a
// condition in a message, the query in a metric's metadata) are built with
// every secret value masked, whatever its length.
const minSecretLength = 4

// redactor keeps the values of secret arguments and credentials out of
// every text an analysis shows: it replaces each resolved text that holds
// a secret (a query, a condition) with its display form, in which the
// secret values read *****, and then every secret value left.
type redactor struct {
	replacer *strings.Replacer
}

// newRedactor returns the redactor of a resolved spec, nil when it has
// nothing to hide. overrides are the values the spec was resolved with.
func newRedactor(s *spec.Spec, overrides map[string]string, res *spec.Resolution, providers Providers, langs map[string]spec.Language) *redactor {
	var pairs []string
	if res != nil && res.Display != nil {
		for i := range res.Spec.Metrics {
			real, display := displayTexts(&res.Spec.Metrics[i], langs), displayTexts(&res.Display.Metrics[i], langs)
			for j := range min(len(real), len(display)) {
				if real[j] != display[j] && real[j] != "" {
					pairs = append(pairs, real[j], display[j])
				}
			}
		}
	}
	secrets := secretValues(s, overrides)
	if res != nil {
		secrets = append(secrets, res.Secrets...)
		for i := range res.Spec.Metrics {
			secrets = append(secrets, credentials(&res.Spec.Metrics[i], providers)...)
		}
	}
	// Longest first: a value that holds another ("Bearer xyz", "xyz") is
	// replaced whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	seen := map[string]bool{}
	for _, v := range secrets {
		if len(v) >= minSecretLength && !seen[v] {
			seen[v] = true
			pairs = append(pairs, v, spec.Masked)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return &redactor{replacer: strings.NewReplacer(pairs...)}
}

// displayTexts are the texts of m that are shown resolved: its
// conditions, and its provider's queries and expressions (langs, by their
// paths relative to the metric), in the order of their paths.
func displayTexts(m *spec.Metric, langs map[string]spec.Language) []string {
	texts := []string{m.SuccessCondition, m.FailureCondition}
	names := m.Provider.Names()
	if len(names) != 1 || len(langs) == 0 {
		return texts
	}
	var tree any
	if json.Unmarshal(m.Provider.Config(names[0]), &tree) != nil {
		return texts
	}
	prefix := "provider." + names[0] + "."
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case string:
			if langs[prefix+path] != spec.ValueText {
				texts = append(texts, x)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], strings.TrimPrefix(path+"."+k, "."))
			}
		}
	}
	walk(tree, "")
	return texts
}

// secretValues are the values of s's secret arguments (see IsSecretArg, and
// secretKeyRef), its own and the overrides'.
func secretValues(s *spec.Spec, overrides map[string]string) []string {
	var out []string
	for _, a := range s.Args {
		if !IsSecretArg(a.Name) && (a.ValueFrom == nil || a.ValueFrom.SecretKeyRef == nil) {
			continue
		}
		if a.Value != nil {
			out = append(out, *a.Value)
		}
		if v, ok := overrides[a.Name]; ok {
			out = append(out, v)
		}
	}
	return out
}

// text returns s with every secret replaced.
func (r *redactor) text(s string) string {
	if r == nil || s == "" {
		return s
	}
	return r.replacer.Replace(s)
}

// err returns err with its text redacted; err itself when nothing in it is
// secret, so that its chain is kept.
func (r *redactor) err(err error) error {
	if r == nil || err == nil {
		return err
	}
	msg := err.Error()
	if clean := r.text(msg); clean != msg {
		return errors.New(clean)
	}
	return err
}

// metadata returns md with its values redacted, md itself when nothing in
// it is secret.
func (r *redactor) metadata(md map[string]string) map[string]string {
	if r == nil {
		return md
	}
	var out map[string]string
	for k, v := range md {
		if clean := r.text(v); clean != v {
			if out == nil {
				out = maps.Clone(md)
			}
			out[k] = clean
		}
	}
	if out == nil {
		return md
	}
	return out
}

// problems redacts the messages of problems in place.
func (r *redactor) problems(problems []api.FieldError) {
	if r == nil {
		return
	}
	for i := range problems {
		problems[i].Message = r.text(problems[i].Message)
	}
}

// redactingSource redacts what a source reports: its errors (a Prometheus
// may quote the query it was sent), its metadata and its value's display.
type redactingSource struct {
	inner analysis.Source
	r     *redactor
}

func (s redactingSource) Measure(ctx context.Context, at time.Time) analysis.Observation {
	obs := s.inner.Measure(ctx, at)
	obs.Err = s.r.err(obs.Err)
	obs.Metadata = s.r.metadata(obs.Metadata)
	obs.Display = s.r.text(obs.Display)
	return obs
}

// QuerySeries is the inner source's (series.Source), its labels and its
// error redacted; series.ErrNoQuery when the inner source has none.
func (s redactingSource) QuerySeries(ctx context.Context, q series.Query) (series.Set, error) {
	inner, ok := s.inner.(series.Source)
	if !ok {
		return series.Set{}, series.ErrNoQuery
	}
	set, err := inner.QuerySeries(ctx, q)
	for i := range set.Series {
		set.Series[i].Labels = s.r.text(set.Series[i].Labels)
	}
	return set, s.r.err(err)
}

// BoundByContext is the inner source's (analysis.ContextBound).
func (s redactingSource) BoundByContext() bool {
	b, ok := s.inner.(analysis.ContextBound)
	return ok && b.BoundByContext()
}

// redactingJudge redacts the errors of a metric's conditions, which quote
// the condition.
type redactingJudge struct {
	inner analysis.Judge
	r     *redactor
}

// contextJudge is a judge that can be waited for with a context
// (analysis.ContextJudge).
type contextJudge interface {
	JudgeContext(ctx context.Context, value any) (api.Phase, error)
}

func (j redactingJudge) Judge(value any) (api.Phase, error) {
	phase, err := j.inner.Judge(value)
	return phase, j.r.err(err)
}

// JudgeContext is the inner judge's when it has one, and Judge otherwise.
func (j redactingJudge) JudgeContext(ctx context.Context, value any) (api.Phase, error) {
	cj, ok := j.inner.(contextJudge)
	if !ok {
		return j.Judge(value)
	}
	phase, err := cj.JudgeContext(ctx, value)
	return phase, j.r.err(err)
}
