package server

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/store"
)

// The list of analyses (GET /v1/analyses) comes in pages: newest first
// (by start, then by id), at most ?limit= analyses a page, each page's
// `next` the cursor of the one after it. The analyses come without their
// measurements unless ?measurements=true, and a page with them is cut at
// maxPageBytes as well, so that no answer is larger than a few pages'
// worth of results whatever is held.

// Filters, cursors and the order are the store's (store.Filter,
// store.Filter.Selector): the same list, with the same cursors, answers
// from a replica's own analyses and from a store's.

// Bounds of a page of the list.
const (
	// DefaultListLimit is the analyses of a page without ?limit=.
	DefaultListLimit = store.DefaultListLimit
	// MaxListLimit is the most ?limit= may ask for.
	MaxListLimit = store.MaxListLimit
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

// maxTemplateFilter bounds ?template=: a template's name is a Kubernetes
// object's, at most 253 characters.
const maxTemplateFilter = 253

// listParams are the query parameters of the list; any other is a 400.
var listParams = []string{"phase", "template", "series", "arg", "startedAfter", "startedBefore", "limit", "cursor", "measurements"}

// listQuery reads the list's query: ?phase=, ?template=, ?series=,
// ?arg=NAME=VALUE, ?startedAfter=, ?startedBefore=, ?limit=, ?cursor= and
// ?measurements=. Each bad one, and each unknown one, is a field error.
func listQuery(q url.Values) (ListOptions, []api.FieldError) {
	var o ListOptions
	f := &o.Filter
	var errs []api.FieldError
	for _, key := range sortedKeys(q) {
		if !slices.Contains(listParams, key) {
			errs = append(errs, api.FieldError{Field: key, Message: "unknown query parameter; this endpoint takes " + strings.Join(listParams, ", ")})
		}
	}
	for _, v := range q["phase"] {
		p := api.Phase(v)
		if !p.Completed() && p != api.PhaseRunning {
			errs = append(errs, api.FieldError{Field: "phase", Message: "must be Running, Successful, Failed, Inconclusive or Error, got " + quote(v)})
			continue
		}
		f.Phases = append(f.Phases, p)
	}
	if vs := q["template"]; len(vs) > 0 {
		if len(vs) > 1 || vs[0] == "" || len(vs[0]) > maxTemplateFilter {
			errs = append(errs, api.FieldError{Field: "template", Message: "must be given once, a template's name (at most " +
				strconv.Itoa(maxTemplateFilter) + " characters)"})
		} else {
			f.Template = vs[0]
		}
	}
	if vs := q["series"]; len(vs) > 0 {
		if len(vs) > 1 || !checkSeries(vs[0]) {
			errs = append(errs, api.FieldError{Field: "series", Message: "must be given once, the `series` of a round or gate as the list shows it (" +
				strconv.Itoa(seriesLength) + " characters, a-z and 2-7), got " + quote(strings.Join(vs, ","))})
		} else {
			f.Series = vs[0]
		}
	}
	f.Limit = DefaultListLimit
	if vs := q["limit"]; len(vs) > 0 {
		n, err := strconv.Atoi(vs[0])
		if len(vs) > 1 || err != nil || n < 1 || n > MaxListLimit {
			errs = append(errs, api.FieldError{Field: "limit", Message: "must be given once, a number from 1 to " + strconv.Itoa(MaxListLimit) +
				" (the most analyses a page has here), got " + quote(strings.Join(vs, ","))})
		} else {
			f.Limit = n
		}
	}
	// An empty cursor is the first page, for callers that always send one.
	// The cursor itself is checked where it is read (store.Filter).
	if vs := q["cursor"]; len(vs) > 0 && (len(vs) > 1 || vs[0] != "") {
		if len(vs) > 1 {
			errs = append(errs, api.FieldError{Field: "cursor", Message: "must be given once, as the `next` of a page of this list; start again without it"})
		} else {
			f.Cursor = vs[0]
		}
	}
	if vs := q["measurements"]; len(vs) > 0 {
		b, err := strconv.ParseBool(vs[0])
		if len(vs) > 1 || err != nil {
			errs = append(errs, api.FieldError{Field: "measurements", Message: "must be given once, true or false, got " + quote(strings.Join(vs, ","))})
		} else {
			o.Measurements = b
		}
	}
	return o, append(errs, filterQuery(q, f)...)
}

// filterQuery reads ?arg=NAME=VALUE, ?startedAfter= and ?startedBefore=
// into f.
func filterQuery(q url.Values, f *store.Filter) []api.FieldError {
	var errs []api.FieldError
	if vs := q["arg"]; len(vs) > 0 {
		if len(vs) > store.MaxArgFilters {
			errs = append(errs, api.FieldError{Field: "arg", Message: fmt.Sprintf("at most %d argument filters", store.MaxArgFilters)})
		}
		f.Args = map[string]string{}
		for _, v := range vs[:min(len(vs), store.MaxArgFilters)] {
			name, value, ok := strings.Cut(v, "=")
			if !ok || name == "" {
				errs = append(errs, api.FieldError{Field: "arg", Message: "must be NAME=VALUE, got " + quote(v)})
				continue
			}
			f.Args[name] = value
		}
	}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"startedAfter", &f.StartedAfter}, {"startedBefore", &f.StartedBefore}} {
		vs := q[p.name]
		if len(vs) == 0 {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, vs[0])
		if len(vs) > 1 || err != nil {
			errs = append(errs, api.FieldError{Field: p.name, Message: "must be given once, an RFC 3339 time such as 2026-01-02T15:04:05Z, got " + quote(strings.Join(vs, ","))})
			continue
		}
		*p.to = t
	}
	return errs
}

// sizeOfAnalysis is an analysis' size as the page counts it: as the
// analyses' ledgers estimate it (analyses.SizeOfAnalysis).
func sizeOfAnalysis(a *api.Analysis) int64 { return analyses.SizeOfAnalysis(a) }

// filterErrors are the field errors of the list's refusal of its filter
// (a store.FilterError); nil for any other error.
func filterErrors(err error) []api.FieldError {
	var fe *store.FilterError
	if !errors.As(err, &fe) {
		return nil
	}
	return []api.FieldError{{Field: fe.Field, Message: fe.Message}}
}

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
	a.pruneLocked()
	held := make([]listed, 0, len(a.byID))
	for _, run := range a.running {
		held = append(held, listed{run: run, at: run.listed(api.PhaseRunning, args)})
	}
	for _, f := range a.finished {
		held = append(held, listed{run: f.run, at: f.run.listed(f.phase, args)})
	}
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
		page = append(page, listView(l.run.Snapshot(), l.run.Plan(), o.Measurements))
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

// listView is an analysis as the list shows it: its report's sentence
// and its metrics' newest phases (analyses.Summarize; plan is its own,
// nil when not at hand), without its measurements unless they are asked
// for.
func listView(a api.Analysis, plan *analysis.Plan, measurements bool) api.Analysis {
	a = analyses.Summarize(a, plan)
	if !measurements {
		for i := range a.MetricResults {
			a.MetricResults[i].Measurements = []api.Measurement{}
		}
	}
	return a
}

// planOf is the plan of the analysis of this id when this replica holds
// it, for the list of the store's analyses; nil otherwise.
func (a *Analyses) planOf(id string) *analysis.Plan {
	a.mu.Lock()
	run := a.byID[id]
	a.mu.Unlock()
	if run == nil || run.Run == nil {
		return nil
	}
	return run.Plan()
}
