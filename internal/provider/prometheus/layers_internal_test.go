package prometheus

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// BenchmarkMeasureLayers is one instant query's measurement through the
// provider's own layers (the request made, its credentials recorded, its
// slot and answer's bounds, the answer read and decoded) over a transport
// that answers at once without a connection (answerAtOnce): what canaryd
// adds to net/http's own work a query, without the noise of a round trip.
func BenchmarkMeasureLayers(b *testing.B) {
	const answer = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1599076435.123,"0.9993"]}]}}`
	p, err := New(Options{Datasources: []Datasource{{Name: "default", URL: "http://prometheus.example:9090"}}})
	if err != nil {
		b.Fatal(err)
	}
	setTransport(b, p.datasources[0], &answerAtOnce{body: []byte(answer)})
	// A round's deadline comes before its query's timeout.
	src, _, errs := p.Source(&Metric{Query: `sum(rate(http_requests_total{code!~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`, Timeout: ptr(int64(3600))})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if obs := src.Measure(ctx, time.Now()); obs.Err != nil || obs.Display != "[0.9993]" {
			b.Fatal(obs)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// setTransport replaces the transport under ds's round trippers (both,
// verifying TLS or not) by rt.
func setTransport(tb testing.TB, ds *datasource, rt http.RoundTripper) {
	for _, top := range ds.transports {
		rc, ok := top.(*recordCredentials)
		if !ok {
			tb.Fatalf("the datasource's round trippers begin with %T", top)
		}
		lr, ok := rc.next.(*limitResponse)
		if !ok {
			tb.Fatalf("the credentials' round tripper is over %T", rc.next)
		}
		slots, ok := lr.next.(*requestSlots)
		if !ok {
			tb.Fatalf("the answers' bounds are over %T", lr.next)
		}
		slots.next = rt
	}
}

// answerAtOnce answers every request with body, as net/http's transport
// does: it reads the request's body to its end, and the answer's Request
// is a copy of the request. It answers one request at a time, with the
// same response each time (its body read anew), so that what a
// measurement costs is the provider's.
type answerAtOnce struct {
	body   []byte
	reader bytes.Reader
	resp   http.Response
}

func (a *answerAtOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	sent := *req
	a.reader.Reset(a.body)
	a.resp = http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        a.resp.Header,
		Body:          io.NopCloser(&a.reader),
		ContentLength: int64(len(a.body)),
		Request:       &sent,
	}
	if a.resp.Header == nil {
		a.resp.Header = http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(a.body))}}
	}
	return &a.resp, nil
}
