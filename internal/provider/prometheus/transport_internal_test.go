package prometheus

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
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
// once are bounded: a read beyond the bound waits until another answer is
// closed, and fails when its context ends first.
func TestAnswersInFlightBounded(t *testing.T) {
	l := &responseLimits{max: 1 << 20, inFlight: semaphore.NewWeighted(1000), why: "a test answer"}
	first := &limitedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("a", 1000))), ctx: context.Background(), left: l.max, limits: l}
	if _, err := io.ReadAll(first); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := &limitedBody{rc: io.NopCloser(strings.NewReader("b")), ctx: ctx, left: l.max, limits: l}
	done := make(chan error, 1)
	// Ends when the read gets room or its context is cancelled.
	go func() { _, err := io.ReadAll(second); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a read beyond the bound did not wait: %v", err)
	case <-time.After(50 * time.Millisecond): // a wait that must not end, not a speed assertion
	}
	first.Close()
	if err := <-done; err != nil {
		t.Fatalf("after room was made: %v", err)
	}
	second.Close()

	if !l.inFlight.TryAcquire(1000) {
		t.Fatal("bytes still held after both answers were closed")
	}
	third := &limitedBody{rc: io.NopCloser(strings.NewReader("c")), ctx: ctx, left: l.max, limits: l}
	cancel()
	if _, err := io.ReadAll(third); err == nil || !strings.Contains(err.Error(), "waiting for other Prometheus answers") {
		t.Errorf("a read whose context ended while waiting: %v", err)
	}
}
