package prometheus

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/canaryd/canaryd/internal/limits"
)

func TestLimitedBody(t *testing.T) {
	tests := []struct {
		name, body string
		max        int64
		wantErr    string
	}{
		{name: "under", body: "12345", max: 1 << 20},
		{name: "exactly the limit", body: strings.Repeat("x", 1<<20), max: 1 << 20},
		{name: "over", body: strings.Repeat("x", 1<<20+1), max: 1 << 20, wantErr: "the answer is longer than the 1024 KiB canaryd reads of a test answer; narrow the query"},
	}
	for _, tc := range tests {
		l := &responseLimits{max: tc.max, inFlight: semaphore.NewWeighted(4 << 20), why: "a test answer"}
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tc.body)), ctx: context.Background(), left: tc.max, limits: l}
		got, err := io.ReadAll(b)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.wantErr {
			t.Errorf("%s: err = %q, want %q", tc.name, gotErr, tc.wantErr)
		}
		if tc.wantErr == "" && string(got) != tc.body {
			t.Errorf("%s: read %d bytes, want %d", tc.name, len(got), len(tc.body))
		}
		b.Close()
		b.Close() // a second Close releases nothing more
		if !l.inFlight.TryAcquire(4 << 20) {
			t.Errorf("%s: the bytes read are still held after Close", tc.name)
		}
	}
}

// TestAnswersInFlightBounded checks that the bytes of answers being read at
// once are bounded: an answer longer than unreservedBytes reserves its
// whole bound before it reads more, waiting until another answer is closed
// when there is no room, and fails when its context ends first; a short
// answer never waits.
func TestAnswersInFlightBounded(t *testing.T) {
	const max = 1 << 20
	l := &responseLimits{max: max, inFlight: semaphore.NewWeighted(max), why: "a test answer"}
	long := func(ctx context.Context) *limitedBody {
		return &limitedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("a", 3*unreservedBytes))), ctx: ctx, left: l.max, limits: l}
	}
	first := long(context.Background())
	if _, err := io.ReadAll(first); err != nil {
		t.Fatal(err)
	}
	short := &limitedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("s", unreservedBytes))), ctx: context.Background(), left: l.max, limits: l}
	if _, err := io.ReadAll(short); err != nil {
		t.Fatalf("an answer of unreservedBytes, with no room: %v", err)
	}
	short.Close()

	ctx, cancel := context.WithCancel(context.Background())
	second := long(ctx)
	done := make(chan error, 1)
	// Ends when the read gets room or its context is cancelled.
	go func() { _, err := io.ReadAll(second); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a long answer with no room did not wait: %v", err)
	case <-time.After(50 * time.Millisecond): // a wait that must not end, not a speed assertion
	}
	first.Close()
	if err := <-done; err != nil {
		t.Fatalf("after room was made: %v", err)
	}
	second.Close()

	if !l.inFlight.TryAcquire(max) {
		t.Fatal("bytes still held after both answers were closed")
	}
	third := long(ctx)
	cancel()
	if _, err := io.ReadAll(third); err == nil || !strings.Contains(err.Error(), "waiting for other Prometheus answers") {
		t.Errorf("a read whose context ended while waiting: %v", err)
	}
}

// TestLongAnswersAtOnce reads a dozen long answers at once, together far
// more than the room for answers in flight, a few KiB a read, interleaved:
// each is read to its end. Answers that took room as they read held it
// between them while each waited for more, and none finished.
func TestLongAnswersAtOnce(t *testing.T) {
	const max, answers = 1 << 20, 12
	l := &responseLimits{max: max, inFlight: semaphore.NewWeighted(4 * max), why: "a test answer"}
	// A safety net: a deadlock ends here, not at the test binary's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, answers)
	for range answers {
		// Ends when its answer is read, or at ctx's deadline.
		go func() {
			b := &limitedBody{rc: io.NopCloser(&yieldingReader{left: max - 1}), ctx: ctx, left: l.max, limits: l}
			_, err := io.ReadAll(b)
			b.Close()
			errs <- err
		}()
	}
	for range answers {
		if err := <-errs; err != nil {
			t.Errorf("an answer: %v", err)
		}
	}
}

// yieldingReader reads left bytes, 4 KiB at a time, yielding the processor
// after each read so that readers run interleaved.
type yieldingReader struct{ left int }

func (r *yieldingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), 4<<10, r.left)
	clear(p[:n])
	r.left -= n
	runtime.Gosched()
	return n, nil
}

// TestAnswerBoundFitsInFlight checks that the longest answer a provider
// reads can be reserved: a bound over the room for answers in flight
// would wait for its deadline.
func TestAnswerBoundFitsInFlight(t *testing.T) {
	if got := responseBytes(1 << 30); got > limits.MaxResponseBytesInFlight {
		t.Errorf("responseBytes(a billion values) = %d, more than limits.MaxResponseBytesInFlight %d", got, int64(limits.MaxResponseBytesInFlight))
	}
}

// TestPlainRequestsRecordNothing checks what recordCredentials leaves
// unsearched: the request a measurement made, whose headers are the
// provider's own, hold no credential; a request that took its place
// above recordCredentials (a metric's headers, a redirect's) is searched.
func TestPlainRequestsRecordNothing(t *testing.T) {
	p, err := New(Options{Datasources: []Datasource{{URL: "http://prometheus.example:9090"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []http.Header{p.instantHeader, p.rangeHeader} {
		var c sentCredentials
		c.record(&http.Request{Header: h})
		if len(c.values) != 0 {
			t.Errorf("the provider's headers %v hold credentials: %q", h, c.values)
		}
	}

	ctx, sent := withSentCredentials(t.Context())
	plain, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://prometheus.example:9090/api/v1/query", nil)
	plain.Header = p.instantHeader
	sent.plain = plain
	rt := &recordCredentials{next: &answered{resp: http.Response{StatusCode: http.StatusOK}}}
	if _, err := rt.RoundTrip(plain); err != nil {
		t.Fatal(err)
	}
	other := cloneRequest(plain)
	other.Header.Set("Authorization", "Bearer s3cret-token")
	if _, err := rt.RoundTrip(other); err != nil {
		t.Fatal(err)
	}
	if got := sent.list(); !slices.Equal(got, []string{"Bearer s3cret-token", "s3cret-token"}) {
		t.Errorf("recorded %q; want the other request's token", got)
	}
}
