package webhook

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// TestHooks: a stream resumed elsewhere numbers its events on from
// FirstSeq, delivers what was owed first with its webhook-ids, calls
// Queued before each event's first attempt and Done after it, and leaves
// an event abandoned at shutdown without Done: it is still owed.
func TestHooks(t *testing.T) {
	rc := newReceiver(t, nil)
	ts := newTestSender(t, []string{rc.URL()}, nil)
	var mu sync.Mutex
	var queued, done []string
	st, err := ts.StreamWith("a1", rc.URL(), []string{"measurement", "completed"}, Hooks{
		FirstSeq: 4,
		Queued: func(_ context.Context, id string) bool {
			mu.Lock()
			queued = append(queued, id)
			mu.Unlock()
			return true
		},
		Done: func(id string) { mu.Lock(); done = append(done, id); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	owed, _ := api.Marshal(measurement("a1", 3))
	st.Redeliver("a1.4", api.EventMeasurement, owed)
	bodies := map[string]string{"a1.4": string(owed)}
	if id, body := st.SendID(measurement("a1", 4)); id != "a1.5" {
		t.Errorf("SendID = %q, want a1.5: numbered on from FirstSeq", id)
	} else {
		bodies[id] = string(body)
	}
	if id, body := st.SendID(completed("a1")); id != "a1.6" {
		t.Errorf("SendID of the completed event = %q, want a1.6", id)
	} else {
		bodies[id] = string(body)
	}
	if id, body := st.SendID(measurement("a1", 5)); id != "" || body != nil {
		t.Errorf("SendID after the completed event = %q, %q; want none", id, body)
	}
	waitFor(t, st)

	var ids []string
	for _, h := range rc.Hits() {
		id := h.header.Get("webhook-id")
		ids = append(ids, id)
		// The body SendID returned is the one sent: what records the
		// event owed keeps the bytes a later attempt sends.
		if string(h.body) != bodies[id] {
			t.Errorf("%s sent as %s, SendID returned %s", id, h.body, bodies[id])
		}
	}
	want := []string{"a1.4", "a1.5", "a1.6"}
	mu.Lock()
	defer mu.Unlock()
	for what, got := range map[string][]string{"delivered": ids, "queued": queued, "done": done} {
		if !slices.Equal(got, want) {
			t.Errorf("%s %v, want %v", what, got, want)
		}
	}
}

func TestHooksAbandonedIsNotDone(t *testing.T) {
	block := make(chan struct{})
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) { <-block })
	defer close(block)
	ts := newTestSender(t, []string{rc.URL()}, nil)
	var mu sync.Mutex
	var done []string
	st, err := ts.StreamWith("a2", rc.URL(), nil, Hooks{Done: func(id string) { mu.Lock(); done = append(done, id); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	abandon(t, st, completed("a2"))
	mu.Lock()
	defer mu.Unlock()
	if len(done) != 0 {
		t.Errorf("Done called for %s, abandoned at shutdown", strings.Join(done, ", "))
	}
}

// TestHooksQueuedRefuses: an event Queued refuses is neither sent nor
// counted, and Done is not called for it (the analysis is another
// process's now); one refused because the stream is abandoned at shutdown
// counts as failed.
func TestHooksQueuedRefuses(t *testing.T) {
	rc := newReceiver(t, nil)
	ts := newTestSender(t, []string{rc.URL()}, nil)
	var mu sync.Mutex
	var done []string
	st, err := ts.StreamWith("a3", rc.URL(), []string{"measurement", "completed"}, Hooks{
		Queued: func(_ context.Context, id string) bool { return id != "a3.2" },
		Done:   func(id string) { mu.Lock(); done = append(done, id); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Send(measurement("a3", 0))
	st.Send(measurement("a3", 1))
	st.Send(completed("a3"))
	waitFor(t, st)
	var ids []string
	for _, h := range rc.Hits() {
		ids = append(ids, h.header.Get("webhook-id"))
	}
	if want := []string{"a3.1", "a3.3"}; !slices.Equal(ids, want) {
		t.Errorf("delivered %v, want %v", ids, want)
	}
	if s := st.Status(); s.Delivered != 2 || s.Failed != 0 || s.Pending != 0 {
		t.Errorf("status %+v, want 2 delivered, none failed or pending", s)
	}
	mu.Lock()
	if want := []string{"a3.1", "a3.3"}; !slices.Equal(done, want) {
		t.Errorf("done %v, want %v", done, want)
	}
	mu.Unlock()

	// Waiting for the store when the shutdown abandons the stream.
	st, err = ts.StreamWith("a4", rc.URL(), nil, Hooks{Queued: func(ctx context.Context, _ string) bool { <-ctx.Done(); return false }})
	if err != nil {
		t.Fatal(err)
	}
	abandon(t, st, completed("a4"))
	if s := st.Status(); s.Delivered != 0 || s.Failed != 1 || !strings.Contains(s.LastError, "abandoned at shutdown") {
		t.Errorf("status %+v, want the event abandoned at shutdown", s)
	}
}

// abandon sends ev and gives the stream 100 ms to deliver it, as a
// shutdown would: Wait must give up.
func abandon(t *testing.T, st *Stream, ev api.Event) {
	t.Helper()
	st.Send(ev)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := st.Wait(ctx); err == nil {
		t.Fatal("Wait did not give up")
	}
}
