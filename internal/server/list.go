package server

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
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
	DefaultListLimit = analyses.DefaultListLimit
	// MaxListLimit is the most ?limit= may ask for.
	MaxListLimit = analyses.MaxListLimit
)

// ListOptions select a page of the list (analyses.ListOptions).
type ListOptions = analyses.ListOptions

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
	for _, key := range slices.Sorted(maps.Keys(q)) {
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
		if len(vs) > 1 || !analyses.CheckSeries(vs[0]) {
			errs = append(errs, api.FieldError{Field: "series", Message: "must be given once, the `series` of a round or gate as the list shows it (" +
				strconv.Itoa(analyses.SeriesLength) + " characters, a-z and 2-7), got " + quote(strings.Join(vs, ","))})
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
func filterQuery(q url.Values, f *analyses.Filter) []api.FieldError {
	var errs []api.FieldError
	if vs := q["arg"]; len(vs) > 0 {
		if len(vs) > analyses.MaxArgFilters {
			errs = append(errs, api.FieldError{Field: "arg", Message: fmt.Sprintf("at most %d argument filters", analyses.MaxArgFilters)})
		}
		f.Args = map[string]string{}
		for _, v := range vs[:min(len(vs), analyses.MaxArgFilters)] {
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

// filterErrors are the field errors of the list's refusal of its filter
// (an analyses.FilterError); nil for any other error.
func filterErrors(err error) []api.FieldError {
	var fe *analyses.FilterError
	if !errors.As(err, &fe) {
		return nil
	}
	return []api.FieldError{{Field: fe.Field, Message: fe.Message}}
}
