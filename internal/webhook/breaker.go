package webhook

import (
	"fmt"
	"sync"
	"time"
)

// breakers are the circuit breakers of a Sender, one per destination
// (scheme, host and port). Destinations are those the allow list allows,
// so there are at most as many breakers as allowed hosts that were sent
// to.
type breakers struct {
	failures int           // consecutive failures that open a circuit
	cooldown time.Duration // how long an open circuit stays open
	onOpen   func()        // counts an opening (a metric)

	mu sync.Mutex
	by map[string]*breaker
}

func newBreakers(failures int, cooldown time.Duration, onOpen func()) *breakers {
	return &breakers{failures: failures, cooldown: cooldown, onOpen: onOpen, by: map[string]*breaker{}}
}

// get returns the breaker of the destination key, making it on first use.
func (bs *breakers) get(key string) *breaker {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.by[key]
	if !ok {
		b = &breaker{bs: bs, key: key, changed: make(chan struct{})}
		bs.by[key] = b
	}
	return b
}

// breaker is the circuit breaker of one destination. Closed, every
// attempt goes ahead; after bs.failures attempts in a row failed in a way
// that another attempt might not (no response, 408, 429, 5xx), it opens
// for bs.cooldown, and deliveries wait instead of attempting. When the
// cool-down is over one attempt goes ahead as a probe (half-open): its
// success closes the circuit, its failure opens it for another cool-down;
// the others wait for its outcome.
//
// An answer that another attempt would not change (2xx, another 4xx, a
// refused redirect) shows the destination is up, and closes the circuit.
type breaker struct {
	bs  *breakers
	key string // host:port, for messages

	mu        sync.Mutex
	failures  int       // consecutive
	openUntil time.Time // zero while closed
	probing   bool      // a probe is under way
	lastErr   string    // the failure that opened the circuit
	// changed is closed, and replaced, when the circuit closes or a probe
	// ends, so that the deliveries waiting on it look again.
	changed chan struct{}
}

// admission is the breaker's answer to a delivery that wants to attempt.
type admission struct {
	// ok: attempt now; probe: as the half-open circuit's probe, which
	// must be followed by done.
	ok, probe bool
	// Otherwise the circuit is open: wait until until, or until changed
	// is closed, and ask again. probing: a probe is under way, and until
	// is only a bound on the wait.
	probing bool
	until   time.Time
	changed <-chan struct{}
	// key, failures and lastErr say why, for messages.
	key      string
	failures int
	lastErr  string
}

// paused says why no attempt is made, without the last error.
func (a admission) paused() string {
	if a.probing {
		return fmt.Sprintf("deliveries to %s are paused while one attempt probes it, after %d failed attempts in a row (circuit breaker)", a.key, a.failures)
	}
	return fmt.Sprintf("deliveries to %s are paused until %s after %d failed attempts in a row (circuit breaker)",
		a.key, a.until.UTC().Format(time.RFC3339), a.failures)
}

// reason says why no attempt is made, with the failure that opened the
// circuit.
func (a admission) reason() string { return a.paused() + "; last: " + a.lastErr }

// admit asks whether an attempt may be made now.
func (b *breaker) admit(now time.Time) admission {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.openUntil.IsZero():
		return admission{ok: true}
	case b.probing:
		// The probe's outcome decides, and wakes the waiters; the
		// probe's attempt times out long before the cool-down ends.
		return admission{probing: true, until: now.Add(b.bs.cooldown), changed: b.changed, key: b.key, failures: b.failures, lastErr: b.lastErr}
	case now.Before(b.openUntil):
		return admission{until: b.openUntil, changed: b.changed, key: b.key, failures: b.failures, lastErr: b.lastErr}
	default:
		b.probing = true
		return admission{ok: true, probe: true}
	}
}

// pausedUntil returns when the open circuit lets a probe through; zero
// when the circuit is closed, or its cool-down is over.
func (b *breaker) pausedUntil(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.openUntil.IsZero() || !now.Before(b.openUntil) {
		return time.Time{}
	}
	return b.openUntil
}

// done records the outcome of an admitted attempt: failed when another
// attempt might succeed where this one did not, msg its error; abandoned
// when there is no outcome (the stream was abandoned at shutdown).
func (b *breaker) done(probe, failed, abandoned bool, msg string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	wake := false
	if probe {
		b.probing = false
		wake = true
	}
	switch {
	case abandoned:
	case !failed:
		if b.failures > 0 || !b.openUntil.IsZero() {
			wake = true
		}
		b.failures, b.openUntil, b.lastErr = 0, time.Time{}, ""
	default:
		b.failures++
		if b.failures >= b.bs.failures && (probe || b.openUntil.IsZero() || now.After(b.openUntil)) {
			b.openUntil = now.Add(b.bs.cooldown)
			b.lastErr = msg
			b.bs.onOpen()
		}
	}
	if wake {
		close(b.changed)
		b.changed = make(chan struct{})
	}
}
