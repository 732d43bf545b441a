package server

import (
	"net/http"
	"strconv"

	"github.com/canaryd/canaryd/api"
)

// writeAnalysis answers with the analysis a, as writeJSON would write it,
// byte for byte. It is the answer of POST /v1/analyses (202) and of
// GET /v1/analyses/{id}, and encoding/json's reflection was a fifth of
// canaryd's work on a POST: a is written here without reflection, into a
// pooled buffer, with the writers of a round (round_json.go). What it does
// not know (a webhook, a score, the list's fields) goes to encoding/json:
// appendAnalysis says so. TestAppendJSON holds the two to the same
// bytes, and to every field of the api types.
func writeAnalysis(w http.ResponseWriter, status int, a api.Analysis) {
	bp := jsonBuffers.Get().(*[]byte)
	b, ok := appendAnalysis((*bp)[:0], &a)
	if !ok {
		jsonBuffers.Put(bp)
		writeJSON(w, status, a)
		return
	}
	writeBuffered(w, status, bp, b)
}

// appendAnalysis appends the JSON of *a and a newline, as api.NewEncoder
// encodes it; ok is false, and nothing is to be used, when a holds a field
// it does not write (a webhook's deliveries, a score, the list's reason
// and phases), or a time encoding/json refuses.
func appendAnalysis(b []byte, a *api.Analysis) (_ []byte, ok bool) {
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

// appendResult appends a metric's result as api.MetricResult's JSON.
func appendResult(b []byte, m *api.MetricResult) (_ []byte, ok bool) {
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

// appendOptionalString appends key and s, unless s is empty (omitempty).
func appendOptionalString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}
