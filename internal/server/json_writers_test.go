package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/apitest"
)

// jsonWriter is one of the writers that answer without encoding/json's
// reflection (writeRoundNow, writeAnalysis): its appender, its writer, what
// writeJSON would write in its place, and the status it is tested with.
type jsonWriter struct {
	name    string
	append  func([]byte, *api.Analysis) ([]byte, bool)
	write   func(http.ResponseWriter, int, api.Analysis)
	encoded func(api.Analysis) any
	status  int
}

var jsonWriters = []jsonWriter{
	{"writeRoundNow", api.AppendRound, func(w http.ResponseWriter, status int, a api.Analysis) { writeRoundNow(w, status, a, false) },
		func(a api.Analysis) any { return roundOf(a) }, http.StatusOK},
	{"writeAnalysis", api.AppendAnalysis, writeAnalysis, func(a api.Analysis) any { return a }, http.StatusAccepted},
}

// encodedBy is what writeJSON writes in w's place for a.
func encodedBy(t *testing.T, w jsonWriter, a api.Analysis) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := api.NewEncoder(&buf).Encode(w.encoded(a)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAppendJSON holds each writer's appender to encoding/json's bytes of
// what the writer answers for (a round is roundOf's) for analyses of every
// shape (apitest.Analyses).
func TestAppendJSON(t *testing.T) {
	cases := apitest.Analyses()
	for _, w := range jsonWriters {
		for _, a := range cases {
			got, ok := w.append(nil, &a)
			if want := encodedBy(t, w, a); !ok || !bytes.Equal(got, want) {
				t.Errorf("%s(%+v) = %v\n%s\nwant\n%s", w.name, a, ok, got, want)
			}
		}
	}
}

// TestAppendJSONHandsOver checks that a writer answers the same bytes,
// headers and status whether its appender writes the analysis or leaves it
// to encoding/json (apitest.HandedOver).
func TestAppendJSONHandsOver(t *testing.T) {
	cases := append(apitest.HandedOver(), apitest.Case{Name: "nothing unknown (the appender)", Analysis: apitest.Analyses()[0]})
	for _, w := range jsonWriters {
		for _, c := range cases {
			if c.Refused {
				continue // encoding/json refuses these or writes them its way: no body to compare
			}
			rec := httptest.NewRecorder()
			w.write(rec, w.status, c.Analysis)
			if want := encodedBy(t, w, c.Analysis); !bytes.Equal(rec.Body.Bytes(), want) || rec.Header().Get("Content-Type") != jsonContentType ||
				rec.Code != w.status {
				t.Errorf("%s: %s wrote %d %s (%s), want %s", c.Name, w.name, rec.Code, rec.Body, rec.Header().Get("Content-Type"), want)
			}
			if cl := rec.Header().Get("Content-Length"); w.name == "writeRoundNow" && cl != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("%s: %s wrote Content-Length %q for %d bytes", c.Name, w.name, cl, rec.Body.Len())
			}
		}
	}
}
