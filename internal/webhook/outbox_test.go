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

// outbox is an Outbox that notes what it is told; answer, when set,
// answers Recorded (else every event is recorded at once).
type outbox struct {
	mu                   sync.Mutex
	owed, recorded, done []string
	bodies               map[string]string
	answer               func(ctx context.Context, id string) bool
}

func (o *outbox) Owe(id string, body []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owed = append(o.owed, id)
	if o.bodies == nil {
		o.bodies = map[string]string{}
	}
	o.bodies[id] = string(body)
}

func (o *outbox) Recorded(ctx context.Context, id string) bool {
	o.mu.Lock()
	o.recorded = append(o.recorded, id)
	o.mu.Unlock()
	return o.answer == nil || o.answer(ctx, id)
}

func (o *outbox) Done(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, id)
}

// TestOutbox: a stream resumed elsewhere numbers its events on from
// FirstSeq, delivers what was owed first with its webhook-ids, has each
// event it is sent owed (with the very body it sends) before Send returns,
// waits for each event to be recorded before its first attempt and marks
// it done after it, and leaves an event abandoned at shutdown not done: it
// is still owed.
func TestOutbox(t *testing.T) {
	rc := newReceiver(t, nil)
	ts := newTestSender(t, []string{rc.URL()}, nil)
	o := &outbox{}
	st, err := ts.StreamWith("a1", rc.URL(), []string{"measurement", "completed"}, StreamOptions{FirstSeq: 4, Outbox: o})
	if err != nil {
		t.Fatal(err)
	}
	owed, _ := api.Marshal(measurement("a1", 3))
	st.Redeliver("a1.4", api.EventMeasurement, owed)
	st.Send(measurement("a1", 4))
	o.mu.Lock()
	if !slices.Equal(o.owed, []string{"a1.5"}) {
		t.Errorf("owed %v when Send returned, want a1.5: numbered on from FirstSeq", o.owed)
	}
	o.mu.Unlock()
	st.Send(completed("a1"))
	st.Send(measurement("a1", 5))
	waitFor(t, st)
	o.mu.Lock()
	bodies := o.bodies
	bodies["a1.4"] = string(owed)
	if !slices.Equal(o.owed, []string{"a1.5", "a1.6"}) {
		t.Errorf("owed %v, want a1.5 and the completed event a1.6; none after it", o.owed)
	}
	o.mu.Unlock()

	var ids []string
	for _, h := range rc.Hits() {
		id := h.header.Get("webhook-id")
		ids = append(ids, id)
		// The body owed is the one sent: what records the event owed
		// keeps the bytes a later attempt sends.
		if string(h.body) != bodies[id] {
			t.Errorf("%s sent as %s, owed as %s", id, h.body, bodies[id])
		}
	}
	want := []string{"a1.4", "a1.5", "a1.6"}
	o.mu.Lock()
	defer o.mu.Unlock()
	for what, got := range map[string][]string{"delivered": ids, "recorded": o.recorded, "done": o.done} {
		if !slices.Equal(got, want) {
			t.Errorf("%s %v, want %v", what, got, want)
		}
	}
}

func TestOutboxAbandonedIsNotDone(t *testing.T) {
	block := make(chan struct{})
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) { <-block })
	defer close(block)
	ts := newTestSender(t, []string{rc.URL()}, nil)
	o := &outbox{}
	st, err := ts.StreamWith("a2", rc.URL(), nil, StreamOptions{Outbox: o})
	if err != nil {
		t.Fatal(err)
	}
	abandon(t, st, completed("a2"))
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.done) != 0 {
		t.Errorf("Done called for %s, abandoned at shutdown", strings.Join(o.done, ", "))
	}
}

// TestOutboxNotRecorded: an event the outbox says not to send (not
// Recorded) is neither sent nor counted, and not done (the analysis is
// another process's now); one not recorded because the stream is abandoned
// at shutdown counts as failed.
func TestOutboxNotRecorded(t *testing.T) {
	rc := newReceiver(t, nil)
	ts := newTestSender(t, []string{rc.URL()}, nil)
	o := &outbox{answer: func(_ context.Context, id string) bool { return id != "a3.2" }}
	st, err := ts.StreamWith("a3", rc.URL(), []string{"measurement", "completed"}, StreamOptions{Outbox: o})
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
	o.mu.Lock()
	if want := []string{"a3.1", "a3.3"}; !slices.Equal(o.done, want) {
		t.Errorf("done %v, want %v", o.done, want)
	}
	o.mu.Unlock()

	// Waiting for the store when the shutdown abandons the stream.
	waiting := &outbox{answer: func(ctx context.Context, _ string) bool { <-ctx.Done(); return false }}
	st, err = ts.StreamWith("a4", rc.URL(), nil, StreamOptions{Outbox: waiting})
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
