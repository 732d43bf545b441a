package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/canaryd/canaryd/api"
)

// validateScored checks the fields of a metric's provider that need the
// spec's scoring (sc, whose Path is relative to the metric at path):
// critical and group change nothing without it.
func validateScored(path string, sc Scored, scoring bool) []api.FieldError {
	var errs []api.FieldError
	if sc.Critical && !scoring {
		errs = append(errs, api.FieldError{Field: path + "." + sc.Path + ".critical", Message: "critical applies only when the spec declares scoring (without it, any failing metric fails the analysis already): declare scoring, or remove critical"})
	}
	if sc.Group != "" && !scoring {
		errs = append(errs, api.FieldError{Field: path + "." + sc.Path + ".group", Message: "group applies only when the spec declares scoring: declare scoring, or remove group"})
	}
	return errs
}

func positive(f float64) bool { return f > 0 && !math.IsInf(f, 1) }

// validateScoring checks the spec's scoring:
//
//   - pass is above 0 and at most 100, marginal from 0 to 100 and not above
//     pass (the defaults, 95 and 75, count when a threshold is not given);
//   - there is a metric to score (one that is not dry-run);
//   - each weight is positive, and names a group that has a scored metric
//     (a judge metric's provider.judge.group, or "default" for the others):
//     a weighted group without metrics would keep its share of the score
//     from ever being earned;
//   - the weights sum to at most 100; to exactly 100 when every group has
//     one (otherwise no score could reach 100), and to less when a group
//     has none (otherwise that group would count for nothing).
func (s *Spec) validateScoring(groups []Scored) []api.FieldError {
	sc := s.Scoring
	if sc == nil {
		return nil
	}
	var errs []api.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: strings.TrimSuffix(joinPath("scoring", field), "."), Message: fmt.Sprintf(format, args...)})
	}

	pass, passOK := DefaultPass, true
	if sc.Pass != nil {
		if pass = *sc.Pass; !(pass > 0 && pass <= 100) {
			add("pass", "pass must be above 0 and at most 100, got %v", pass)
			passOK = false
		}
	}
	marginal, marginalOK := DefaultMarginal, true
	if sc.Marginal != nil {
		if marginal = *sc.Marginal; !(marginal >= 0 && marginal <= 100) {
			add("marginal", "marginal must be from 0 to 100, got %v", marginal)
			marginalOK = false
		}
	}
	if passOK && marginalOK && marginal > pass {
		if sc.Marginal == nil {
			add("marginal", "the default marginal threshold %v is above pass (%v): give a marginal threshold at or below it", marginal, pass)
		} else {
			add("marginal", "marginal (%v) must not be above pass (%v)", marginal, pass)
		}
	}

	dryRun := s.DryRunMetrics()
	scored, dryOnly := map[string]bool{}, map[string]bool{}
	for i := range s.Metrics {
		m := &s.Metrics[i]
		if dryRun[m.Name] {
			dryOnly[groups[i].group()] = true
		} else {
			scored[groups[i].group()] = true
		}
	}
	if len(scored) == 0 && len(s.Metrics) > 0 {
		add("", "every metric is dry-run: there is nothing to score")
	}

	var sum float64
	weightsOK := true
	for _, g := range slices.Sorted(maps.Keys(sc.Groups)) {
		w := sc.Groups[g]
		field := "groups." + g
		switch {
		case strings.TrimSpace(g) == "":
			add("groups", "a group name must not be empty")
		case !positive(w):
			add(field, "the weight of group %q must be a positive number (a percentage), got %v", g, w)
		case !scored[g] && dryOnly[g]:
			add(field, "only dry-run metrics are in group %q, and dry-run metrics are not scored", g)
		case !scored[g]:
			add(field, "no metric is in group %q (a judge metric names its group with provider.judge.group; the others are in group %q)", g, DefaultGroup)
		default:
			sum += w
			continue
		}
		weightsOK = false
	}
	if weightsOK && len(sc.Groups) > 0 {
		var unweighted []string
		for g := range scored {
			if _, ok := sc.Groups[g]; !ok {
				unweighted = append(unweighted, fmt.Sprintf("%q", g))
			}
		}
		sort.Strings(unweighted)
		const eps = 1e-9
		switch {
		case sum > 100+eps:
			add("groups", "the weights sum to %v, more than 100", sum)
		case len(unweighted) == 0 && sum < 100-eps:
			add("groups", "the weights sum to %v and every group has one, so no score could reach 100: make them sum to 100, or leave a group without a weight to share the rest", sum)
		case len(unweighted) > 0 && sum >= 100-eps:
			which := "group " + unweighted[0] + ", which has no weight: give it one"
			if len(unweighted) > 1 {
				which = "groups " + strings.Join(unweighted, ", ") + ", which have no weight: give them one"
			}
			add("groups", "the weights sum to 100, which leaves nothing for %s, or make the weights sum to less than 100", which)
		}
	}
	return errs
}
