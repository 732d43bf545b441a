package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/judge/countjson"
	"github.com/canaryd/canaryd/internal/spec"
)

// The fields of POST /v1/judge's body.
const (
	fieldAlpha     = "alpha"
	fieldTolerance = "tolerance"
	fieldDirection = "direction"
	fieldAll       = "all"
	fieldLooks     = "looks"
)

var judgeFields = []string{fieldAlpha, fieldTolerance, fieldDirection, fieldAll, fieldLooks}

// judgeRequest is the body of POST /v1/judge, checked: the count test's
// configuration (defaults filled) and its looks.
type judgeRequest struct {
	cfg   judge.CountConfig
	all   bool
	looks []judge.CountLook
}

// handleJudge runs the judge's sequential count test on the posted looks,
// as `canaryd judge` does on its input, and answers with the same lines as
// a JSON array: one a look, up to the first decision (every look when
// all), the last carrying the last look's rule (CountTest.Conclude) when
// no look decided. Bad input is a 400 naming the field, looks by index
// (looks[6].canary.bad); nothing is judged then. The looks are bounded by
// the body's size and by maxLooks, the requests judged at once by the
// decode slots (a 429 beyond them).
func handleJudge(in *inputReader, maxLooks int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isJSON, p := bodyMediaType(r)
		if p == nil && !isJSON {
			p = ptr(problem(http.StatusUnsupportedMediaType, ProblemUnsupportedMedia,
				fmt.Sprintf("Content-Type %q is not accepted; send the looks as application/json", r.Header.Get("Content-Type"))))
		}
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		body, p := in.readBody(w, r)
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		// A body of looks takes a decode slot as a spec's does: decoding
		// a MiB of looks and judging them holds a few MB.
		if p := in.acquireDecode(r.Context()); p != nil {
			writeProblem(w, r, *p)
			return
		}
		defer in.decodes.release()
		req, errs := decodeJudge(body, maxLooks)
		if len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		out, errs := judgeAll(req)
		if len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		w.Header().Set("Content-Type", jsonContentType)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out) // the client may be gone
	})
}

// judgeAll runs the test on the looks and returns the lines as a JSON
// array, or the first look the test refuses (its counts decrease, or have
// more bad events than total).
func judgeAll(req judgeRequest) ([]byte, []api.FieldError) {
	test, err := judge.NewCountTest(req.cfg)
	if err != nil {
		return nil, []api.FieldError{judgeFieldError("", err)}
	}
	out := append(make([]byte, 0, 160*len(req.looks)+2), '[')
	decided := false
	for i, l := range req.looks {
		r, err := test.Observe(l)
		if err != nil {
			return nil, []api.FieldError{judgeFieldError(lookField(i), err)}
		}
		if i == len(req.looks)-1 && !decided && r.Decision == judge.DecisionContinue {
			r = test.Conclude()
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = countjson.AppendResult(out, r)
		if r.Decision != judge.DecisionContinue {
			decided = true
			if !req.all {
				break
			}
		}
	}
	return append(out, ']', '\n'), nil
}

func lookField(i int) string { return fieldLooks + "[" + strconv.Itoa(i) + "]" }

// judgeFieldError is err (a *judge.FieldError, its field relative to
// prefix) as the problem's field error, with its pointer into the body.
func judgeFieldError(prefix string, err error) api.FieldError {
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
	return api.FieldError{Field: field, Message: message, Pointer: ptr(judgePointer(field))}
}

// judgePointer is the JSON Pointer of a field of the judge's body:
// looks[6].canary.bad is /looks/6/canary/bad. The names are the body's
// own, which need no escaping.
func judgePointer(field string) string {
	if field == fieldBody {
		return bodyPointer
	}
	r := strings.NewReplacer("[", "/", "]", "", ".", "/")
	return "/" + r.Replace(field)
}

// decodeJudge decodes and checks the body of POST /v1/judge: every
// problem of its fields and of each look's shape, and the bound on looks.
// The counts are the test's to check, look by look (judgeAll).
func decodeJudge(body []byte, maxLooks int) (judgeRequest, []api.FieldError) {
	var req judgeRequest
	if err := spec.CheckJSON(body); err != nil {
		return req, []api.FieldError{inBody(api.FieldError{Field: fieldBody, Message: err.Error()})}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return req, []api.FieldError{inBody(api.FieldError{Field: fieldBody,
			Message: "must be an object {\"looks\": [{\"canary\": {\"bad\": N, \"total\": N}, \"baseline\": {…}}, …]}"})}
	}
	var errs []api.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, api.FieldError{Field: field, Message: fmt.Sprintf(format, a...), Pointer: ptr(judgePointer(field))})
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
	var looks []json.RawMessage
	for _, key := range sortedKeys(top) {
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
			if err := json.Unmarshal(raw, &req.all); err != nil || raw[0] == 'n' {
				add(key, "must be true or false, got %s", jsonKind(raw))
			}
		case fieldLooks:
			if err := json.Unmarshal(raw, &looks); err != nil || raw[0] != '[' {
				add(key, "must be an array of looks, got %s", jsonKind(raw))
			}
		default:
			add(key, "unknown field; the body takes %s", strings.Join(judgeFields, ", "))
		}
	}
	if err := cfg.Validate(); err != nil && !hasField(errs, judgeFieldError("", err).Field) {
		errs = append(errs, judgeFieldError("", err))
	}
	req.cfg = cfg
	switch _, given := top[fieldLooks]; {
	case !given:
		add(fieldLooks, "is required: the looks' cumulative counts, [{\"canary\": {\"bad\": N, \"total\": N}, \"baseline\": {…}}, …]")
	case hasField(errs, fieldLooks):
	case len(looks) == 0:
		add(fieldLooks, "must have at least one look")
	case len(looks) > maxLooks:
		add(fieldLooks, "%d looks, more than the limit of %d (--max-judge-looks)", len(looks), maxLooks)
	default:
		req.looks = make([]judge.CountLook, len(looks))
		for i, raw := range looks {
			l, err := countjson.ParseLook(raw)
			if err != nil {
				errs = append(errs, judgeFieldError(lookField(i), err))
				continue
			}
			req.looks[i] = l
		}
	}
	return req, errs
}

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
