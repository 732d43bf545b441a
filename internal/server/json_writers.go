package server

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/canaryd/canaryd/api"
)

// writeRoundNow answers with the evaluated round a, as writeJSON would
// write roundOf(a), byte for byte, with the answer's length, and sends it
// at once, so that the caller has it before the request's log line is
// written. net/http sends an answer it has not been told the length of
// when the handler returns, or chunked when it is flushed before; this
// one is whole on the wire before then.
//
// A late answer is that of a round whose engine has not come back by its
// deadline, while the handler goes on waiting for it (see
// analyses.Analyses.Evaluate): its connection is closed once the handler
// returns, as a caller that sent its next request on it would wait for
// the engine too.
//
// A round is written without reflection (api.AppendRound) into a pooled
// buffer, which becomes the answer's body as it is. TestAppendJSON holds
// the bytes to encoding/json's.
func writeRoundNow(w http.ResponseWriter, status int, a api.Analysis, late bool) {
	bp := jsonBuffers.Get().(*[]byte)
	h := w.Header()
	body, ok := api.AppendRound((*bp)[:0], &a)
	if ok {
		h["Content-Type"], h["X-Content-Type-Options"] = jsonContentTypeValue, noSniffValue
	} else {
		// What AppendRound leaves to encoding/json (those a round never has).
		held := heldAnswer{header: h, body: body[:0]}
		writeJSON(&held, status, roundOf(a))
		status, body = held.status, held.body
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	if late {
		h["Connection"] = []string{"close"}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
	if cap(body) <= maxPooledJSON {
		*bp = body
		jsonBuffers.Put(bp)
	}
}

// heldAnswer is an answer written into memory, into the headers of the
// answer it will be: its status and body.
type heldAnswer struct {
	header http.Header
	status int
	body   []byte
}

func (h *heldAnswer) Header() http.Header { return h.header }

func (h *heldAnswer) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldAnswer) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	h.body = append(h.body, b...)
	return len(b), nil
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
// bp (writeAnalysis), with writeJSON's headers, and gives the
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
