package server

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
)

// writeRound answers with the evaluated round a, as writeJSON would write
// roundOf(a), byte for byte. A round is the answer Argo Rollouts' web
// provider asks for at every interval, and encoding/json's reflection was
// the largest part of canaryd's own work on it; the round is written here
// without reflection into a pooled buffer instead. What this writer does
// not know (a webhook, a score, the list's fields) goes to encoding/json:
// appendRound says so. TestAppendJSON holds the two to the same bytes,
// and to every field of the api types.
func writeRound(w http.ResponseWriter, status int, a api.Analysis) {
	bp := jsonBuffers.Get().(*[]byte)
	b, ok := appendRound((*bp)[:0], &a)
	if !ok {
		jsonBuffers.Put(bp)
		writeJSON(w, status, roundOf(a))
		return
	}
	writeBuffered(w, status, bp, b)
}

// writeBuffered answers with the JSON b, written into the pooled buffer
// bp (writeRound, writeAnalysis), with writeJSON's headers, and gives the
// buffer back to the pool unless it grew past maxPooledJSON.
func writeBuffered(w http.ResponseWriter, status int, bp *[]byte, b []byte) {
	h := w.Header()
	h["Content-Type"], h["X-Content-Type-Options"] = jsonContentTypeValue, noSniffValue
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if cap(b) <= maxPooledJSON {
		*bp = b
		jsonBuffers.Put(bp)
	}
}

// maxPooledJSON bounds the buffers kept for the next answer: a round or an
// analysis of many metrics, measurements or long messages is written into
// a buffer of its own, which is not kept.
const maxPooledJSON = 16 << 10

// jsonContentTypeValue and noSniffValue are the values of an answer's
// headers, shared by every answer's (nothing changes a header's values in
// place, and one added to them is appended to a copy: their capacity is
// their length).
var jsonContentTypeValue, noSniffValue = []string{jsonContentType}[:1:1], []string{"nosniff"}[:1:1]

var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendRound appends the JSON of roundOf(*a) and a newline, as
// api.NewEncoder encodes it; ok is false, and nothing is to be used, when a
// holds a field it does not write (those a round never has), or a time
// encoding/json refuses.
func appendRound(b []byte, a *api.Analysis) (_ []byte, ok bool) {
	if unwritten(a) {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.ID)
	b = append(b, `,"phase":`...)
	b = appendJSONString(b, string(a.Phase))
	if b, ok = appendTimeField(b, `,"startedAt":`, a.StartedAt); !ok {
		return b, false
	}
	if b, ok = appendTimeField(b, `,"completedAt":`, a.CompletedAt); !ok {
		return b, false
	}
	b = appendSummary(append(b, `,"runSummary":`...), a.RunSummary)
	b = appendSummary(append(b, `,"dryRunSummary":`...), a.DryRunSummary)
	b = appendOptionalString(b, `,"kind":`, a.Kind)
	b = appendOptionalString(b, `,"series":`, a.Series)
	b = appendJSONString(append(b, `,"message":`...), a.Message)
	b = appendJSONString(append(b, `,"template":`...), a.Template)
	b = appendStringMap(append(b, `,"args":`...), a.Args)
	b = append(b, `,"metricResults":[`...)
	for i := range a.MetricResults {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendMetricResult(b, &a.MetricResults[i]); !ok {
			return b, false
		}
	}
	return append(b, "]}\n"...), true
}

func appendMetricResult(b []byte, m *api.MetricResult) (_ []byte, ok bool) {
	b = appendJSONString(append(b, `{"name":`...), m.Name)
	b = appendJSONString(append(b, `,"phase":`...), string(m.Phase))
	b = appendInt(append(b, `,"count":`...), m.Count)
	b = appendInt(append(b, `,"successful":`...), m.Successful)
	b = appendInt(append(b, `,"failed":`...), m.Failed)
	b = appendInt(append(b, `,"inconclusive":`...), m.Inconclusive)
	b = appendInt(append(b, `,"error":`...), m.Error)
	b = appendInt(append(b, `,"consecutiveError":`...), m.ConsecutiveError)
	b = appendInt(append(b, `,"consecutiveSuccess":`...), m.ConsecutiveSuccess)
	b = strconv.AppendBool(append(b, `,"dryRun":`...), m.DryRun)
	b = appendJSONString(append(b, `,"message":`...), m.Message)
	b = appendStringMap(append(b, `,"metadata":`...), m.Metadata)
	b = append(b, `,"measurements":[`...)
	for i := range m.Measurements {
		if i > 0 {
			b = append(b, ',')
		}
		ms := &m.Measurements[i]
		b = appendJSONString(append(b, `{"phase":`...), string(ms.Phase))
		if b, ok = appendTimeField(b, `,"startedAt":`, ms.StartedAt); !ok {
			return b, false
		}
		if b, ok = appendTimeField(b, `,"finishedAt":`, ms.FinishedAt); !ok {
			return b, false
		}
		b = appendJSONString(append(b, `,"value":`...), ms.Value)
		b = appendJSONString(append(b, `,"message":`...), ms.Message)
		b = append(appendStringMap(append(b, `,"metadata":`...), ms.Metadata), '}')
	}
	return append(b, "]}"...), true
}

// unwritten says whether a holds a field that appendRound and
// appendAnalysis leave to encoding/json: a webhook's deliveries, a score,
// the list's reason and phases.
func unwritten(a *api.Analysis) bool {
	return a.Webhook != nil || a.Score != nil || a.Reason != "" || a.Measured != nil
}

func appendSummary(b []byte, s api.RunSummary) []byte {
	b = appendInt(append(b, `{"count":`...), s.Count)
	b = appendInt(append(b, `,"successful":`...), s.Successful)
	b = appendInt(append(b, `,"failed":`...), s.Failed)
	b = appendInt(append(b, `,"inconclusive":`...), s.Inconclusive)
	b = appendInt(append(b, `,"error":`...), s.Error)
	return append(b, '}')
}

func appendInt(b []byte, v int32) []byte { return strconv.AppendInt(b, int64(v), 10) }

// appendTimeField appends key and *t as time.Time.MarshalJSON does, and
// nothing when t is nil (omitempty); ok is false for a time MarshalJSON
// refuses (a year outside 0–9999) or writes otherwise (an offset with
// seconds).
func appendTimeField(b []byte, key string, t *time.Time) (_ []byte, ok bool) {
	if t == nil {
		return b, true
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, offset := t.Zone(); offset%60 != 0 {
		return b, false
	}
	b = append(append(b, key...), '"')
	return append(t.AppendFormat(b, time.RFC3339Nano), '"'), true
}

// appendStringMap appends m as an object with its keys in order, as
// encoding/json does; a nil map is {}, as roundOf writes it.
func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	switch len(m) {
	case 0:
	case 1:
		for k, v := range m {
			b = appendJSONString(append(appendJSONString(b, k), ':'), v)
		}
	default:
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(appendJSONString(b, k), ':'), m[k])
		}
	}
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping off (api.NewEncoder): invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped, control characters as \n, \r, \t, \b, \f or \u00XX.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
