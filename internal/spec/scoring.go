package spec

import "maps"

// Scoring scores an analysis as Kayenta scores a canary run: each group
// scores 100 × the share of its metrics that passed, the groups are
// weighted into a score from 0 to 100, and the score is Pass at or above
// Pass, Marginal at or above Marginal, Fail below. It is an extension for
// bare specs and canaryd templates.
type Scoring struct {
	// Groups weighs groups, in percent; groups without a weight share what
	// is left of 100 equally.
	Groups map[string]float64 `json:"groups,omitempty"`
	// Pass and Marginal are the thresholds; nil means 95 and 75.
	Pass     *float64 `json:"pass,omitempty"`
	Marginal *float64 `json:"marginal,omitempty"`
}

// Scoring's defaults, internal/judge's (spec does not import it; a test of
// internal/compile keeps them equal).
const (
	// DefaultPass and DefaultMarginal are the thresholds that Scoring
	// leaves out.
	DefaultPass     = 95.0
	DefaultMarginal = 75.0
	// DefaultGroup is the scoring group of a metric whose provider names
	// none.
	DefaultGroup = "default"
)

// Scored is what scoring needs to know of a metric, which its provider
// tells (internal/compile asks it): the group the metric is scored in (""
// for DefaultGroup), whether it is critical (its failure fails the whole
// analysis), and the path of the configuration that says so, relative to
// the metric ("provider.judge"), whose group and critical fields only a
// spec with scoring may set. A metric whose provider has no such fields
// has the zero Scored.
type Scored struct {
	Group    string
	Critical bool
	Path     string
}

// group is the metric's scoring group.
func (s Scored) group() string {
	if s.Group == "" {
		return DefaultGroup
	}
	return s.Group
}

// clone copies s; arguments are not substituted into scoring, which holds
// numbers and group names only.
func (s *Scoring) clone() *Scoring {
	if s == nil {
		return nil
	}
	c := *s
	c.Groups = maps.Clone(s.Groups)
	return &c
}
