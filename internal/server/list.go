package server

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// The list of analyses (GET /v1/analyses) comes in pages: newest first
// (by start, then by id), at most ?limit= analyses a page, each page's
// `next` the cursor of the one after it. The analyses come without their
// measurements unless ?measurements=true, and a page with them is cut at
// maxPageBytes as well, so that no answer is larger than a few pages'
// worth of results whatever is held.

// Bounds of a page of the list.
const (
	// DefaultListLimit is the analyses of a page without ?limit=.
	DefaultListLimit = 100
	// MaxListLimit is the most ?limit= may ask for.
	MaxListLimit = 1000
	// maxPageBytes bounds a page with its measurements, as the analyses'
	// sizes are estimated (retained.go); a page has at least one analysis.
	maxPageBytes = 16 << 20
)

// ListOptions select a page of the list.
type ListOptions struct {
	// Phases, when any, keep the analyses in these phases only.
	Phases []api.Phase
	// Template, when set, keeps the analyses of the template of this
	// name only.
	Template string
	// Series, when set, keeps the rounds and gates of this series only
	// (series.go): one analysis over time, its calls newest first.
	Series string
	// Limit is the most analyses of the page; DefaultListLimit when 0.
	Limit int
	// After, when set, starts the page after this place in the list.
	After *Cursor
	// Measurements keeps the analyses' measurements; without it every
	// metric's list is empty (its counters still count them).
	Measurements bool
}

// Cursor is a place in the list: the analysis a page ended with. Its text
// form (String, ParseCursor) is opaque to callers.
type Cursor struct {
	StartedAt time.Time
	ID        string
}

// cursorOf is the place of a in the list.
func cursorOf(a api.Analysis) Cursor {
	c := Cursor{ID: a.ID}
	if a.StartedAt != nil {
		c.StartedAt = *a.StartedAt
	}
	return c
}

// atOrBefore reports whether the analysis at (started, id) is c or comes
// before it in the list: it started later, or at the same time with a
// smaller id.
func (c Cursor) atOrBefore(started time.Time, id string) bool {
	if !started.Equal(c.StartedAt) {
		return started.After(c.StartedAt)
	}
	return id <= c.ID
}

// String is the cursor as ?cursor= takes it.
func (c Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.StartedAt.UnixNano(), 10) + "." + c.ID))
}

// maxCursorLength bounds ?cursor=: the time and the longest id.
const maxCursorLength = 200

// maxTemplateFilter bounds ?template=: a template's name is a Kubernetes
// object's, at most 253 characters.
const maxTemplateFilter = 253

// ParseCursor reads a cursor that String wrote; false for anything else.
func ParseCursor(s string) (Cursor, bool) {
	if len(s) > maxCursorLength {
		return Cursor{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, false
	}
	nanos, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || id == "" {
		return Cursor{}, false
	}
	return Cursor{StartedAt: time.Unix(0, n), ID: id}, true
}

// listQuery reads the list's query: ?phase=, ?template=, ?series=,
// ?limit=, ?cursor= and ?measurements=. Each bad one is a field error.
func listQuery(q url.Values) (ListOptions, []api.FieldError) {
	var o ListOptions
	var errs []api.FieldError
	for _, v := range q["phase"] {
		p := api.Phase(v)
		if !p.Completed() && p != api.PhaseRunning {
			errs = append(errs, api.FieldError{Field: "phase", Message: "must be Running, Successful, Failed, Inconclusive or Error, got " + quote(v)})
			continue
		}
		o.Phases = append(o.Phases, p)
	}
	if vs := q["template"]; len(vs) > 0 {
		if len(vs) > 1 || vs[0] == "" || len(vs[0]) > maxTemplateFilter {
			errs = append(errs, api.FieldError{Field: "template", Message: "must be given once, a template's name (at most " +
				strconv.Itoa(maxTemplateFilter) + " characters)"})
		} else {
			o.Template = vs[0]
		}
	}
	if vs := q["series"]; len(vs) > 0 {
		if len(vs) > 1 || !checkSeries(vs[0]) {
			errs = append(errs, api.FieldError{Field: "series", Message: "must be given once, the `series` of a round or gate as the list shows it (" +
				strconv.Itoa(seriesLength) + " characters, a-z and 2-7), got " + quote(strings.Join(vs, ","))})
		} else {
			o.Series = vs[0]
		}
	}
	o.Limit = DefaultListLimit
	if vs := q["limit"]; len(vs) > 0 {
		n, err := strconv.Atoi(vs[0])
		if len(vs) > 1 || err != nil || n < 1 || n > MaxListLimit {
			errs = append(errs, api.FieldError{Field: "limit", Message: "must be given once, a number from 1 to " + strconv.Itoa(MaxListLimit) +
				" (the most analyses a page has here), got " + quote(strings.Join(vs, ","))})
		} else {
			o.Limit = n
		}
	}
	// An empty cursor is the first page, for callers that always send one.
	if vs := q["cursor"]; len(vs) > 0 && (len(vs) > 1 || vs[0] != "") {
		c, ok := ParseCursor(vs[0])
		if len(vs) > 1 || !ok {
			errs = append(errs, api.FieldError{Field: "cursor", Message: "must be given once, as the `next` of a page of this list; start again without it"})
		} else {
			o.After = &c
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
	return o, errs
}

// listed is an analysis held, with what the list needs to place and
// filter it before its state is copied.
type listed struct {
	run   *Run
	phase api.Phase
}

// Page returns a page of the analyses held, and whether more follow it
// (the page's last analysis is then the cursor of the next).
func (a *Analyses) Page(o ListOptions) (page []api.Analysis, more bool) {
	if o.Limit <= 0 {
		o.Limit = DefaultListLimit
	}
	a.mu.Lock()
	a.pruneLocked()
	held := make([]listed, 0, len(a.byID))
	for _, run := range a.running {
		held = append(held, listed{run: run, phase: api.PhaseRunning})
	}
	for _, f := range a.finished {
		held = append(held, listed{run: f.run, phase: f.phase})
	}
	a.mu.Unlock()

	held = slices.DeleteFunc(held, func(l listed) bool {
		return (o.After != nil && o.After.atOrBefore(l.run.startedAt, l.run.ID())) ||
			(len(o.Phases) > 0 && !slices.Contains(o.Phases, l.phase)) ||
			(o.Template != "" && l.run.template != o.Template) ||
			(o.Series != "" && l.run.series != o.Series)
	})
	slices.SortFunc(held, func(x, y listed) int {
		if c := y.run.startedAt.Compare(x.run.startedAt); c != 0 {
			return c
		}
		return strings.Compare(x.run.ID(), y.run.ID())
	})
	var bytes int64
	for _, l := range held {
		if len(page) == o.Limit {
			return page, true
		}
		if o.Measurements {
			size := l.run.ledger.size.Load()
			if len(page) > 0 && bytes+size > a.pageBytes {
				return page, true
			}
			bytes += size
		}
		page = append(page, listView(l.run.Snapshot(), l.run.Plan(), o.Measurements))
	}
	return page, false
}

// listView is an analysis as the list shows it: its report's sentence
// and its metrics' newest phases (listed.go; plan is its own, nil when not
// at hand), without its measurements unless they are asked for.
func listView(a api.Analysis, plan *analysis.Plan, measurements bool) api.Analysis {
	a = summarize(a, plan)
	if !measurements {
		for i := range a.MetricResults {
			a.MetricResults[i].Measurements = []api.Measurement{}
		}
	}
	return a
}
