package analyses

import (
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/store"
)

// listed is an analysis held, as the list's filters see it, with its run.
type listed struct {
	run *Run
	at  store.Analysis
}

// Page returns a page of the analyses held, selected by o.Filter (its
// errors are store.FilterErrors), and the cursor of the next page when
// more follow it.
func (a *Analyses) Page(o ListOptions) (page []api.Analysis, next string, err error) {
	limit, selects, err := o.Filter.Selector()
	if err != nil {
		return nil, "", err
	}
	args := len(o.Filter.Args) > 0
	a.mu.Lock()
	held := make([]listed, 0, len(a.running))
	for _, run := range a.running {
		held = append(held, listed{run: run, at: run.listed(api.PhaseRunning, args)})
	}
	a.held.Each(func(h store.Held, phase api.Phase) {
		if run, ok := h.(*Run); ok {
			held = append(held, listed{run: run, at: run.listed(phase, args)})
		}
	})
	a.mu.Unlock()

	held = slices.DeleteFunc(held, func(l listed) bool { return !selects(&l.at) })
	slices.SortFunc(held, func(x, y listed) int {
		if c := y.at.StartedAt.Compare(x.at.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(x.at.ID, y.at.ID)
	})
	var bytes int64
	for i := range held {
		l := &held[i]
		if len(page) == limit {
			return page, store.CursorAfter(&held[i-1].at), nil
		}
		if o.Measurements {
			size := l.run.ledger.Size()
			if len(page) > 0 && bytes+size > a.pageBytes {
				return page, store.CursorAfter(&held[i-1].at), nil
			}
			bytes += size
		}
		page = append(page, ListView(l.run.Snapshot(), l.run.Plan(), o.Measurements))
	}
	return page, "", nil
}

// listed is the run as the list's filters see it, in phase, with its
// arguments when withArgs is set.
func (r *Run) listed(phase api.Phase, withArgs bool) store.Analysis {
	a := store.Analysis{ID: r.ID(), Template: r.template, Phase: phase, StartedAt: r.startedAt}
	if withArgs {
		a.Args = make([]store.Arg, 0, len(r.args))
		for name, value := range r.args {
			// A secret argument's value never matches (it is masked
			// here).
			a.Args = append(a.Args, store.Arg{Name: name, Value: value, Secret: redact.IsSecretName(name)})
		}
	}
	a.State.Series = r.series
	return a
}

// ListView is an analysis as the list shows it: its report's sentence
// and its metrics' newest phases (Summarize; plan is its own,
// nil when not at hand), without its measurements unless they are asked
// for.
func ListView(a api.Analysis, plan *analysis.Plan, measurements bool) api.Analysis {
	a = Summarize(a, plan)
	if !measurements {
		for i := range a.MetricResults {
			a.MetricResults[i].Measurements = []api.Measurement{}
		}
	}
	return a
}

// PlanOf is the plan of the analysis of this id when this replica holds
// it, for the list of the store's analyses; nil otherwise.
func (a *Analyses) PlanOf(id string) *analysis.Plan {
	a.mu.Lock()
	run, _ := a.getLocked(id)
	a.mu.Unlock()
	if run == nil || run.Run == nil {
		return nil
	}
	return run.Plan()
}

// The bound of a page of the list.
const (
	// maxPageBytes bounds a page with its measurements, as the analyses'
	// sizes are estimated (retained.go); a page has at least one analysis.
	maxPageBytes = 16 << 20
)

// ListOptions select a page of the list.
type ListOptions struct {
	// Filter selects the analyses (phases, template, series, arguments,
	// start) and the page: its size and where it starts (the cursor).
	Filter store.Filter
	// Measurements keeps the analyses' measurements; without it every
	// metric's list is empty (its counters still count them).
	Measurements bool
}
