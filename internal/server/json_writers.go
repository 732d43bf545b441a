package server

import (
	"net/http"
	"sync"

	"github.com/canaryd/canaryd/api"
)

// writeRound answers with the evaluated round a, as writeJSON would write
// roundOf(a), byte for byte: a round is written without reflection
// (api.AppendRound) into a pooled buffer. What api.AppendRound does not
// write (a webhook, a score, the list's fields) goes to encoding/json.
// TestAppendJSON holds the two to the same bytes.
func writeRound(w http.ResponseWriter, status int, a api.Analysis) {
	bp := jsonBuffers.Get().(*[]byte)
	b, ok := api.AppendRound((*bp)[:0], &a)
	if !ok {
		jsonBuffers.Put(bp)
		writeJSON(w, status, roundOf(a))
		return
	}
	writeBuffered(w, status, bp, b)
}

// writeAnalysis answers with the analysis a, as writeJSON would write it,
// byte for byte: it is the answer of POST /v1/analyses (202) and of
// GET /v1/analyses/{id}, written without reflection (api.AppendAnalysis)
// into a pooled buffer. What api.AppendAnalysis does not write goes to
// encoding/json.
func writeAnalysis(w http.ResponseWriter, status int, a api.Analysis) {
	bp := jsonBuffers.Get().(*[]byte)
	b, ok := api.AppendAnalysis((*bp)[:0], &a)
	if !ok {
		jsonBuffers.Put(bp)
		writeJSON(w, status, a)
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
