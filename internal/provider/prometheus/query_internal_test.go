package prometheus

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// writeCounter counts the writes made to it.
type writeCounter struct {
	writes int
	sb     strings.Builder
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes++
	return w.sb.Write(b)
}

// TestQueryIsOneWrite checks that a query's request goes out in one write,
// headers and body together, as one made by http.NewRequest with a
// strings.Reader does: net/http flushes the headers on their own before a
// body it does not know to be in memory, a system call more a query.
func TestQueryIsOneWrite(t *testing.T) {
	proto, err := http.NewRequest(http.MethodPost, "http://prometheus.example/api/v1/query", nil)
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	const form = "query=up&time=1700000000"
	for _, tc := range []struct {
		name string
		req  func() *http.Request
	}{
		{"the request", func() *http.Request { return newQuery(context.Background(), proto, header, form) }},
		{"the request again (GetBody)", func() *http.Request {
			req := newQuery(context.Background(), proto, header, form)
			body, err := req.GetBody()
			if err != nil {
				t.Fatal(err)
			}
			req.Body = body
			return req
		}},
	} {
		var w writeCounter
		if err := tc.req().Write(&w); err != nil {
			t.Fatal(err)
		}
		if w.writes != 1 || !strings.HasSuffix(w.sb.String(), "\r\n\r\n"+form) {
			t.Errorf("%s: %d writes of %q; want one, ending in the form", tc.name, w.writes, w.sb.String())
		}
	}
	req := newQuery(context.Background(), proto, header, form)
	if b, _ := io.ReadAll(req.Body); string(b) != form || req.ContentLength != int64(len(form)) {
		t.Errorf("body %q, length %d; want %q, %d", b, req.ContentLength, form, len(form))
	}
}
