package api

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendAnalysis appends the JSON of *a and a newline, byte for byte as
// NewEncoder encodes it, without encoding/json's reflection: it is the
// answer of POST /v1/analyses and of GET /v1/analyses/{id}, where
// reflection was a fifth of canaryd's work on a POST. ok is false, and
// nothing appended is to be used, when a holds a field it does not write
// (a webhook's deliveries, a score, the list's reason and phases), or a
// time encoding/json refuses: the caller encodes a with NewEncoder then.
func AppendAnalysis(b []byte, a *Analysis) (_ []byte, ok bool) {
	if unwritten(a) {
		return b, false
	}
	b = appendJSONString(append(b, `{"id":`...), a.ID)
	b = appendJSONString(append(b, `,"phase":`...), string(a.Phase))
	b = appendOptionalString(b, `,"message":`, a.Message)
	if b, ok = appendTimeField(b, `,"startedAt":`, a.StartedAt); !ok {
		return b, false
	}
	if b, ok = appendTimeField(b, `,"completedAt":`, a.CompletedAt); !ok {
		return b, false
	}
	b = append(b, `,"metricResults":`...)
	if a.MetricResults == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range a.MetricResults {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendResult(b, &a.MetricResults[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = appendSummary(append(b, `,"runSummary":`...), a.RunSummary)
	b = appendSummary(append(b, `,"dryRunSummary":`...), a.DryRunSummary)
	b = appendOptionalString(b, `,"template":`, a.Template)
	if len(a.Args) > 0 {
		b = appendStringMap(append(b, `,"args":`...), a.Args)
	}
	b = appendOptionalString(b, `,"kind":`, a.Kind)
	b = appendOptionalString(b, `,"series":`, a.Series)
	return append(b, "}\n"...), true
}

// appendResult appends a metric's result as MetricResult's JSON.
func appendResult(b []byte, m *MetricResult) (_ []byte, ok bool) {
	b = appendJSONString(append(b, `{"name":`...), m.Name)
	b = appendJSONString(append(b, `,"phase":`...), string(m.Phase))
	b = appendOptionalString(b, `,"message":`, m.Message)
	b = appendInt(append(b, `,"count":`...), m.Count)
	b = appendInt(append(b, `,"successful":`...), m.Successful)
	b = appendInt(append(b, `,"failed":`...), m.Failed)
	b = appendInt(append(b, `,"inconclusive":`...), m.Inconclusive)
	b = appendInt(append(b, `,"error":`...), m.Error)
	b = appendInt(append(b, `,"consecutiveError":`...), m.ConsecutiveError)
	b = appendInt(append(b, `,"consecutiveSuccess":`...), m.ConsecutiveSuccess)
	b = strconv.AppendBool(append(b, `,"dryRun":`...), m.DryRun)
	if len(m.Metadata) > 0 {
		b = appendStringMap(append(b, `,"metadata":`...), m.Metadata)
	}
	b = append(b, `,"measurements":`...)
	if m.Measurements == nil {
		return append(b, "null}"...), true
	}
	b = append(b, '[')
	for i := range m.Measurements {
		if i > 0 {
			b = append(b, ',')
		}
		ms := &m.Measurements[i]
		b = appendJSONString(append(b, `{"phase":`...), string(ms.Phase))
		b = appendOptionalString(b, `,"message":`, ms.Message)
		if b, ok = appendTimeField(b, `,"startedAt":`, ms.StartedAt); !ok {
			return b, false
		}
		if b, ok = appendTimeField(b, `,"finishedAt":`, ms.FinishedAt); !ok {
			return b, false
		}
		b = appendJSONString(append(b, `,"value":`...), ms.Value)
		if len(ms.Metadata) > 0 {
			b = appendStringMap(append(b, `,"metadata":`...), ms.Metadata)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), true
}

// AppendRound appends *a as the evaluate endpoints answer an evaluated
// round, and a newline, byte for byte as NewEncoder encodes internal/
// server's round (its roundOf): Analysis with every key present, empty
// or not, because Argo Rollouts' web provider reads one value of it with
// a jsonPath and a key it does not find is an Error measurement. The
// analysis' message, template and args, and each metric's and each
// measurement's message and metadata, are written when empty too (an
// absent map as {}), after the keys that Analysis writes as they are.
// A round is the answer that Argo Rollouts asks for at every interval,
// and encoding/json's reflection was the largest part of canaryd's own
// work on it. ok is false, and nothing appended is to be used, when a
// holds a field it does not write (those a round never has), or a time
// encoding/json refuses.
func AppendRound(b []byte, a *Analysis) (_ []byte, ok bool) {
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
		if b, ok = appendRoundMetric(b, &a.MetricResults[i]); !ok {
			return b, false
		}
	}
	return append(b, "]}\n"...), true
}

// appendRoundMetric appends a metric's result as a round writes it, with
// every key present.
func appendRoundMetric(b []byte, m *MetricResult) (_ []byte, ok bool) {
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

// unwritten says whether a holds a field that AppendRound and
// AppendAnalysis leave to encoding/json: a webhook's deliveries, a score,
// the list's reason and phases.
func unwritten(a *Analysis) bool {
	return a.Webhook != nil || a.Score != nil || a.Reason != "" || a.Measured != nil
}

func appendSummary(b []byte, s RunSummary) []byte {
	b = appendInt(append(b, `{"count":`...), s.Count)
	b = appendInt(append(b, `,"successful":`...), s.Successful)
	b = appendInt(append(b, `,"failed":`...), s.Failed)
	b = appendInt(append(b, `,"inconclusive":`...), s.Inconclusive)
	b = appendInt(append(b, `,"error":`...), s.Error)
	return append(b, '}')
}

func appendInt(b []byte, v int32) []byte { return strconv.AppendInt(b, int64(v), 10) }

// appendOptionalString appends key and s, unless s is empty (omitempty).
func appendOptionalString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendTimeField appends key and *t as time.Time.MarshalJSON does, and
// nothing when t is nil (omitempty); ok is false for a time MarshalJSON
// refuses (a year outside 0–9999) or writes otherwise (an offset with
// seconds).
func appendTimeField(b []byte, key string, t *time.Time) (_ []byte, ok bool) {
	if t == nil {
		return b, true
	}
	_, offset := t.Zone()
	if offset == 0 { // UTC, as canaryd keeps its times, or a zone at UTC
		return appendUTC(append(b, key...), t.UTC())
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if offset%60 != 0 {
		return b, false
	}
	b = append(append(b, key...), '"')
	return append(t.AppendFormat(b, time.RFC3339Nano), '"'), true
}

// appendUTC appends the UTC time t quoted, as time.Time.MarshalJSON writes
// it (RFC 3339 with the nanoseconds' trailing zeros cut, and Z), without
// the general layout's work; ok is false for a year outside 0–9999.
func appendUTC(b []byte, t time.Time) (_ []byte, ok bool) {
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return b, false
	}
	h, mi, s := t.Clock()
	b = append(b, '"', byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10),
		'-', byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10),
		'T', byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10))
	if ns := t.Nanosecond(); ns != 0 {
		frac := [10]byte{'.'}
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z', '"'), true
}

// appendStringMap appends m as an object with its keys in order, as
// encoding/json does; a nil map is {}, as a round writes it.
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
// HTML escaping off (NewEncoder): invalid UTF-8 as \ufffd, U+2028 and
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
