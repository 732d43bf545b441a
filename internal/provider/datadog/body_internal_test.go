package datadog

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestBodyKept checks that a v2 request's body is kept for the next
// measurement only when nothing can read it any more (putBody), that
// the body a transport asks for again (GetBody) is a copy that a later
// measurement does not change, and that the bytes of a body longer than
// its inline array are kept with it.
func TestBodyKept(t *testing.T) {
	u, err := url.Parse("http://datadog.example/api/v2/query/scalar")
	if err != nil {
		t.Fatal(err)
	}
	e := &endpoint{v2URL: u, v2Request: &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}, Host: u.Host}}
	s := &source{plan: &plan{v2: true, bodyHead: []byte(`{"from":`), bodyTail: []byte(`}`)}}
	var p Provider
	ctx := context.Background()

	b := p.getBody()
	req := s.v2Request(ctx, e, b, 1, 2)
	again, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(req.Body); err != nil {
		t.Fatal(err)
	}
	p.putBody(b) // asked for again: not kept
	b2 := p.getBody()
	if b2 == b {
		t.Fatal("a body the transport asked for again was kept")
	}
	s.v2Request(ctx, e, b, 3, 4) // b written again, as a reuse would
	if got, _ := io.ReadAll(again); string(got) != `{"from":1000,"to":2000}` {
		t.Errorf("GetBody's body reads %q after the body changed; want the request it was asked for", got)
	}

	req = s.v2Request(ctx, e, b2, 5, 6)
	var half [4]byte
	_, _ = req.Body.Read(half[:])
	p.putBody(b2) // not read to its end: not kept
	if b3 := p.getBody(); b3 == b2 {
		t.Fatal("a body that was not read to its end was kept")
	}
	if got, _ := io.ReadAll(req.Body); string(got) != `om":5000,"to":6000}` || req.ContentLength != int64(len(`{"from":5000,"to":6000}`)) {
		t.Errorf("the rest of the body %q, length %d", got, req.ContentLength)
	}

	// A body longer than its inline array keeps its bytes for the next
	// measurement; one longer than maxPooledRequest is not kept.
	s.plan.bodyTail = []byte(`,"q":"` + strings.Repeat("x", 300) + `"}`)
	b4 := p.getBody()
	req = s.v2Request(ctx, e, b4, 7, 8)
	if _, err := io.ReadAll(req.Body); err != nil {
		t.Fatal(err)
	}
	grown := &b4.data[:1][0]
	if cap(b4.data) <= len(b4.inline) {
		t.Fatalf("a body of %d bytes within its inline array of %d", len(b4.data), len(b4.inline))
	}
	p.putBody(b4)
	req = s.v2Request(ctx, e, b4, 9, 10)
	if &b4.data[:1][0] != grown {
		t.Error("a kept body's bytes were made again")
	}
	if got, _ := io.ReadAll(req.Body); !strings.HasPrefix(string(got), `{"from":9000,"to":10000,"q":"xxx`) {
		t.Errorf("body %.40q", got)
	}
	s.plan.bodyTail = []byte(`,"q":"` + strings.Repeat("x", maxPooledRequest) + `"}`)
	long := p.getBody()
	req = s.v2Request(ctx, e, long, 11, 12)
	if _, err := io.ReadAll(req.Body); err != nil {
		t.Fatal(err)
	}
	p.putBody(long)
	for range 10 { // sync.Pool may drop what it is given, never make it up
		if got := p.getBody(); got == long {
			t.Fatal("a body longer than maxPooledRequest was kept")
		}
	}
}
