package compile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/spec"
)

// Planner compiles the specs of one service the same way wherever they
// come from: a request's body, a named template, or an analysis read back
// from a store to be resumed. It holds what every compilation shares: the
// providers, the limits, the compiled conditions, and the templates served.
// The service builds one (cmd/canaryd) and hands it to the HTTP layer and to
// the analyses alike. It is safe for concurrent use.
type Planner struct {
	providers Providers
	run       []Option
	backtest  []Option
	templates TemplateLookup
}

// TemplateLookup finds the document of the template served under name; nil
// serves none.
type TemplateLookup func(name string) (*spec.Document, bool)

// PlannerOptions configure a Planner.
type PlannerOptions struct {
	// Providers build each metric's source. Required.
	Providers Providers
	// Run are Compile's options for a spec to be run: the service's
	// limits (WithLimits). Backtest are those for a spec to be backtested,
	// which runs in virtual time within its own window: the same limits
	// but for the bound on an analysis' duration (and ForBacktest, always).
	// None bound nothing.
	Run, Backtest []Option
	// Programs shares compiled conditions between specs;
	// condition.DefaultProgramsSize of them when nil.
	Programs *condition.Programs
	// Templates finds a named template's document, for the analyses
	// resumed from one (Stored); none when nil.
	Templates TemplateLookup
}

// NewPlanner returns the planner of o.
func NewPlanner(o PlannerOptions) *Planner {
	if o.Programs == nil {
		o.Programs = condition.NewPrograms(condition.DefaultProgramsSize)
	}
	with := func(opts []Option) []Option {
		return append(slices.Clip(opts), WithPrograms(o.Programs))
	}
	return &Planner{providers: o.Providers, run: with(o.Run), backtest: append(with(o.Backtest), ForBacktest()), templates: o.Templates}
}

// Providers are the planner's providers.
func (p *Planner) Providers() Providers { return p.providers }

// Options are Compile's options for a spec of this planner: its limits
// (those of a backtest when backtest is set), and its shared conditions.
func (p *Planner) Options(backtest bool) []Option {
	if backtest {
		return p.backtest
	}
	return p.run
}

// Compile compiles doc with args (Compile), for a backtest when backtest is
// set.
func (p *Planner) Compile(doc *spec.Document, args map[string]string, backtest bool) (*Compiled, []api.FieldError) {
	return Compile(doc, args, p.providers, p.Options(backtest)...)
}

// Stored compiles an analysis as it was asked for, to resume it or draw its
// report: the posted document when there is one, else the template served
// under that name, with args. Its error says why it cannot be, in a
// sentence for the analysis' message.
func (p *Planner) Stored(template string, document []byte, args map[string]string) (*Compiled, error) {
	var doc *spec.Document
	switch {
	case document != nil:
		d, problems := spec.Parse(document)
		if len(problems) > 0 {
			return nil, fmt.Errorf("its document does not parse: %s", FieldErrors(problems))
		}
		doc = d
	default:
		var ok bool
		if p.templates != nil {
			doc, ok = p.templates(template)
		}
		if !ok || doc == nil {
			return nil, fmt.Errorf("template %q is not served by this replica", template)
		}
	}
	compiled, problems := p.Compile(doc, args, false)
	if len(problems) > 0 {
		return nil, errors.New("it does not compile: " + FieldErrors(problems))
	}
	return compiled, nil
}

// FieldErrors is the first three of errs in one line, with how many more
// there are.
func FieldErrors(errs []api.FieldError) string {
	var b strings.Builder
	for i, e := range errs {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(errs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Field + ": " + e.Message)
	}
	return b.String()
}
