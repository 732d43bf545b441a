package countjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
)

// The fields of POST /v1/judge's body, and the field of a problem with the
// body as a whole.
const (
	fieldAlpha     = "alpha"
	fieldTolerance = "tolerance"
	fieldDirection = "direction"
	fieldAll       = "all"
	fieldHistory   = "history"
	fieldLooks     = "looks"
	fieldBody      = "body"
)

var requestFields = []string{fieldAlpha, fieldTolerance, fieldDirection, fieldAll, fieldHistory, fieldLooks}

// Request is the body of POST /v1/judge, checked: the count test's
// configuration (defaults filled, the baseline's history in
// Config.History) and its looks.
type Request struct {
	Config judge.CountConfig
	// All asks for the result of every look, past the first decision.
	All   bool
	Looks []judge.CountLook
}

// ParseRequest reads and checks the body of POST /v1/judge, a JSON object
// {"alpha": …, "tolerance": …, "direction": …, "all": …,
// "history": [{"bad": N, "total": N}, …], "looks": [look, …]}: every
// problem of its fields, of each look's shape (ParseLook) and of the
// baseline's history (ParseCounts, and its counts as the test checks
// them), and the bound on looks and on the history's intervals, maxLooks
// (--max-judge-looks) each. Each problem names its field, looks and
// intervals by index (looks[6].canary.bad, history[2].bad), with its JSON
// Pointer into the body. The body is to be valid JSON (spec.CheckJSON says where it is
// not); the counts are the test's to check, look by look
// (Request.AppendResults).
func ParseRequest(body []byte, maxLooks int) (Request, []api.FieldError) {
	var req Request
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return req, []api.FieldError{{Field: fieldBody, Pointer: ptr(pointer(fieldBody)),
			Message: "must be an object {\"looks\": [{\"canary\": {\"bad\": N, \"total\": N}, \"baseline\": {…}}, …]}"}}
	}
	var errs []api.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, api.FieldError{Field: field, Message: fmt.Sprintf(format, a...), Pointer: ptr(pointer(field))})
	}
	cfg := judge.CountConfig{Alpha: judge.DefaultCountAlpha, Tolerance: judge.DefaultCountTolerance, Direction: judge.DirectionIncrease}
	number := func(field string, raw json.RawMessage, into *float64) {
		if jsonKind(raw) != "a number" {
			add(field, "must be a number, got %s", jsonKind(raw))
			return
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsInf(v, 0) {
			add(field, "must be a finite number, got %s (beyond a float64)", raw)
			return
		}
		*into = v
	}
	var looks, history []json.RawMessage
	for _, key := range slices.Sorted(maps.Keys(top)) {
		raw := top[key]
		switch key {
		case fieldAlpha:
			number(key, raw, &cfg.Alpha)
		case fieldTolerance:
			number(key, raw, &cfg.Tolerance)
		case fieldDirection:
			var s string
			if err := json.Unmarshal(raw, &s); err != nil || raw[0] != '"' {
				add(key, "must be a string, increase or decrease, got %s", jsonKind(raw))
				continue
			}
			cfg.Direction = judge.Direction(s)
		case fieldAll:
			if err := json.Unmarshal(raw, &req.All); err != nil || raw[0] == 'n' {
				add(key, "must be true or false, got %s", jsonKind(raw))
			}
		case fieldHistory:
			if err := json.Unmarshal(raw, &history); err != nil || raw[0] != '[' {
				add(key, "must be an array of the baseline's counts at each interval, got %s", jsonKind(raw))
			}
		case fieldLooks:
			if err := json.Unmarshal(raw, &looks); err != nil || raw[0] != '[' {
				add(key, "must be an array of looks, got %s", jsonKind(raw))
			}
		default:
			add(key, "unknown field; the body takes %s", strings.Join(requestFields, ", "))
		}
	}
	if err := cfg.Validate(); err != nil && !hasField(errs, fieldError("", err).Field) {
		errs = append(errs, fieldError("", err))
	}
	req.Config = cfg
	if !hasField(errs, fieldHistory) {
		var herrs []api.FieldError
		req.Config.History, herrs = parseHistory(history, maxLooks)
		errs = append(errs, herrs...)
	}
	switch _, given := top[fieldLooks]; {
	case !given:
		add(fieldLooks, "is required: the looks' cumulative counts, [{\"canary\": {\"bad\": N, \"total\": N}, \"baseline\": {…}}, …]")
	case hasField(errs, fieldLooks):
	case len(looks) == 0:
		add(fieldLooks, "must have at least one look")
	case len(looks) > maxLooks:
		add(fieldLooks, "%d looks, more than the limit of %d (--max-judge-looks)", len(looks), maxLooks)
	default:
		req.Looks = make([]judge.CountLook, len(looks))
		for i, raw := range looks {
			l, err := ParseLook(raw)
			if err != nil {
				errs = append(errs, fieldError(lookField(i), err))
				continue
			}
			req.Looks[i] = l
		}
	}
	return req, errs
}

// AppendResults runs the count test on the request's looks and appends
// their results as a JSON array and a newline, as `canaryd judge` writes
// them line by line (AppendResult): one a look, up to the first decision
// (every look when All), the last carrying the last look's rule
// (CountTest.Conclude) when no look decided. It returns the first look
// the test refuses instead (its counts decrease, or have more bad events
// than total), as the problem of its field.
func (req Request) AppendResults(dst []byte) ([]byte, []api.FieldError) {
	test, err := judge.NewCountTest(req.Config)
	if err != nil {
		return dst, []api.FieldError{fieldError("", err)}
	}
	out := append(slices.Grow(dst, 160*len(req.Looks)+2), '[')
	decided := false
	for i, l := range req.Looks {
		r, err := test.Observe(l)
		if err != nil {
			return dst, []api.FieldError{fieldError(lookField(i), err)}
		}
		if i == len(req.Looks)-1 && !decided && r.Decision == judge.DecisionContinue {
			r = test.Conclude()
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendResult(out, r)
		if r.Decision != judge.DecisionContinue {
			decided = true
			if !req.All {
				break
			}
		}
	}
	return append(out, ']', '\n'), nil
}

// parseHistory reads the baseline's history, its intervals' counts: the
// bound, maxLooks; each interval's shape (ParseCounts); then their counts
// as the test checks them (judge.CountConfig.Validate), of which only the
// first interval at fault is named, as of looks.
func parseHistory(raw []json.RawMessage, maxLooks int) ([]judge.Counts, []api.FieldError) {
	if len(raw) > maxLooks {
		return nil, []api.FieldError{{Field: fieldHistory, Pointer: ptr(pointer(fieldHistory)),
			Message: fmt.Sprintf("%d intervals, more than the limit of %d (--max-judge-looks)", len(raw), maxLooks)}}
	}
	if len(raw) == 0 {
		return nil, nil
	}
	history := make([]judge.Counts, len(raw))
	var errs []api.FieldError
	for i, r := range raw {
		c, err := ParseCounts(r)
		if err != nil {
			errs = append(errs, fieldError(historyField(i), err))
			continue
		}
		history[i] = c
	}
	if len(errs) > 0 {
		return nil, errs
	}
	check := judge.CountConfig{Alpha: judge.DefaultCountAlpha, Tolerance: judge.DefaultCountTolerance, Direction: judge.DirectionIncrease, History: history}
	if err := check.Validate(); err != nil {
		return nil, []api.FieldError{fieldError("", err)}
	}
	return history, nil
}

func lookField(i int) string { return fieldLooks + "[" + strconv.Itoa(i) + "]" }

func historyField(i int) string { return fieldHistory + "[" + strconv.Itoa(i) + "]" }

// fieldError is err (a *judge.FieldError, its field relative to prefix)
// as the body's field error, with its pointer into the body.
func fieldError(prefix string, err error) api.FieldError {
	field, message := "", err.Error()
	var fe *judge.FieldError
	if errors.As(err, &fe) {
		field, message = fe.Field, fe.Message
	}
	switch {
	case prefix == "":
	case field == "":
		field = prefix
	default:
		field = prefix + "." + field
	}
	if field == "" {
		field = fieldBody
	}
	return api.FieldError{Field: field, Message: message, Pointer: ptr(pointer(field))}
}

// pointer is the JSON Pointer of a field of the body: looks[6].canary.bad
// is /looks/6/canary/bad, history[2].bad /history/2/bad, and the body as
// a whole "". The names are the
// body's own, which need no escaping.
func pointer(field string) string {
	if field == fieldBody {
		return ""
	}
	r := strings.NewReplacer("[", "/", "]", "", ".", "/")
	return "/" + r.Replace(field)
}

func ptr[T any](v T) *T { return &v }

func hasField(errs []api.FieldError, field string) bool {
	return slices.ContainsFunc(errs, func(e api.FieldError) bool { return e.Field == field })
}

// jsonKind names the type of a JSON value for a message.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string (" + string(raw) + ")"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
