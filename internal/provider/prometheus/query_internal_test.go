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
	var p Provider
	body := func() *queryBody {
		q := p.getQueryBody()
		q.form = append(q.form[:0], form...)
		return q
	}
	for _, tc := range []struct {
		name string
		req  func() *http.Request
	}{
		{"the request", func() *http.Request { return newQuery(context.Background(), proto, header, body()) }},
		{"the request again (GetBody)", func() *http.Request {
			req := newQuery(context.Background(), proto, header, body())
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
	req := newQuery(context.Background(), proto, header, body())
	if b, _ := io.ReadAll(req.Body); string(b) != form || req.ContentLength != int64(len(form)) {
		t.Errorf("body %q, length %d; want %q, %d", b, req.ContentLength, form, len(form))
	}
}

// TestQueryBodyKept checks that a query's body is kept for the next query
// only when nothing can read it any more, and that the body a transport
// asks for again (GetBody) is a copy that a later query does not change.
func TestQueryBodyKept(t *testing.T) {
	proto, err := http.NewRequest(http.MethodPost, "http://prometheus.example/api/v1/query", nil)
	if err != nil {
		t.Fatal(err)
	}
	var p Provider
	q := p.getQueryBody()
	q.form = append(q.form[:0], "query=up&time=1"...)
	req := newQuery(context.Background(), proto, nil, q)
	again, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	p.putQueryBody(q) // asked for again: not kept
	q2 := p.getQueryBody()
	if q2 == q {
		t.Fatal("a body the transport asked for again was kept")
	}
	q.form = append(q.form[:0], "query=down&time=2"...)
	if b, _ := io.ReadAll(again); string(b) != "query=up&time=1" {
		t.Errorf("GetBody's body reads %q after the form changed; want the form it was asked for", b)
	}

	q2.form = append(q2.form[:0], "query=up&time=3"...)
	req = newQuery(context.Background(), proto, nil, q2)
	var half [4]byte
	_, _ = req.Body.Read(half[:])
	p.putQueryBody(q2) // not read to its end: not kept
	if q3 := p.getQueryBody(); q3 == q2 {
		t.Fatal("a body that was not read to its end was kept")
	}
	if b, _ := io.ReadAll(req.Body); string(b) != "y=up&time=3" {
		t.Errorf("the rest of the body %q", b)
	}
	p.putQueryBody(q2)
	long := p.getQueryBody()
	long.form = append(long.form[:0], strings.Repeat("x", maxPooledForm+1)...)
	p.putQueryBody(long)
	for range 10 { // sync.Pool may drop what it is given, never make it up
		if got := p.getQueryBody(); got == long {
			t.Fatal("a body longer than maxPooledForm was kept")
		}
	}
	large := p.getQueryBody()
	large.answer.Write(make([]byte, maxPooledAnswer+1))
	p.putQueryBody(large)
	for range 10 {
		if got := p.getQueryBody(); got == large {
			t.Fatal("a body whose answer's buffer is larger than maxPooledAnswer was kept")
		}
	}
}
