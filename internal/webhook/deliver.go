package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/redact"
)

// delivery is one event on its way: what each of its attempts sends.
type delivery struct {
	id   string // webhook-id: the same for every attempt
	typ  api.EventType
	body []byte
}

// result is how one delivery ended.
type result struct {
	status   int // the last response's status; 0 when none came
	attempts int
	err      error // nil when delivered
}

// attemptError is why one attempt failed. Its message is safe to log and to
// show: it names no userinfo, query or secret.
type attemptError struct {
	status     int  // the response's status; 0 when none came
	retry      bool // whether another attempt may succeed
	retryAfter time.Duration
	msg        string
}

func (e *attemptError) Error() string { return e.msg }

// retryable reports whether the failure err may go away by itself, so that
// another attempt is worth making: no response at all (a network error, a
// timeout), 408, 429 or a 5xx. A refused redirect and any other status are
// final: the receiver will answer the same again.
func retryable(err error) bool {
	var ae *attemptError
	return errors.As(err, &ae) && ae.retry
}

// retryableStatus reports whether a response with this status is worth
// another attempt.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// maxRetryAfter caps a Retry-After in seconds before it is converted, so that
// a huge value cannot overflow a Duration; any such value exceeds every
// sensible retry budget anyway.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// A date in the past means no wait. ok is false when v is neither.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	switch {
	case err == nil && n <= uint64(maxRetryAfter/time.Second):
		return time.Duration(n) * time.Second, true
	case err == nil || errors.Is(err, strconv.ErrRange):
		return maxRetryAfter, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// attempt POSTs d to u once, and returns the response's status (0 when none
// came) and, unless it was 2xx, an *attemptError.
func (s *Sender) attempt(ctx context.Context, u *url.URL, d *delivery) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(d.body))
	if err != nil {
		// u was parsed and checked already; the error would quote it.
		return 0, &attemptError{msg: "building the request failed"}
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("webhook-id", d.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	if s.secret != nil {
		req.Header.Set("webhook-signature", sign(s.secret, d.id, ts, d.body))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// On a refused redirect Do returns the redirect response too, its
		// body already closed.
		s.metrics.attempts.WithLabelValues("error").Inc()
		return 0, s.transportError(u, err)
	}
	// Drain (a little of) the body so that the connection can be reused.
	defer outbound.DrainAndClose(resp.Body, 64<<10)
	code := resp.StatusCode
	s.metrics.attempts.WithLabelValues(strconv.Itoa(code)).Inc()
	if code >= 200 && code < 300 {
		return code, nil
	}
	ae := &attemptError{status: code, retry: retryableStatus(code), msg: "the receiver answered " + statusText(code)}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			ae.retryAfter = d
		}
	}
	return code, ae
}

// statusText is "503 Service Unavailable": the standard text, never the
// receiver's own, which could be anything.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// transportError describes an error of http.Client.Do. Do wraps it in a
// *url.Error that quotes the URL (query and all), so only the cause is kept,
// and even that is scrubbed of the URL's sensitive parts.
func (s *Sender) transportError(u *url.URL, err error) error {
	var rr *errRedirectRefused
	if errors.As(err, &rr) {
		return &attemptError{msg: rr.Error()}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return &attemptError{retry: true, msg: "no response: timed out"}
		}
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &attemptError{retry: true, msg: "no response: timed out"}
	}
	if errors.Is(err, context.Canceled) {
		return &attemptError{retry: true, msg: "no response: cancelled"}
	}
	var key string
	if len(s.secret) >= 8 {
		key = string(s.secret)
	}
	return &attemptError{retry: true, msg: "no response: " + redact.Error(err, u, key)}
}

// backoff returns the wait before retry number n (0 for the first retry):
// equal jitter over the exponential bound, so that waits still grow but
// receivers that failed together do not get their retries together.
func (s *Sender) backoff(n int) time.Duration {
	b := s.initialBackoff
	for i := 0; i < n && b < s.maxBackoff; i++ {
		b *= 2
	}
	b = min(b, s.maxBackoff)
	half := b / 2
	return half + rand.N(b-half+1)
}

// deliver makes attempts to POST d to st's URL until one succeeds, one
// fails for good, the retry budget is spent, or ctx ends (the stream is
// abandoned). No attempt starts later than MaxElapsed after the delivery
// began, so a delivery lasts at most MaxElapsed + AttemptTimeout.
//
// Before each attempt it asks the destination's circuit breaker: while the
// circuit is open no attempt is made; the delivery waits for the end of
// the cool-down when that comes within its budget, and is given up at once
// when it does not.
func (s *Sender) deliver(ctx context.Context, st *Stream, d *delivery) (res result) {
	start := time.Now()
	deadline := start.Add(s.maxElapsed)
	defer func() { s.metrics.duration.Observe(time.Since(start).Seconds()) }()
	var last error // the latest attempt's failure
	for {
		adm := st.breaker.admit(time.Now())
		if !adm.ok {
			// The error ends with this delivery's own last failure when
			// it had one, else with the one that opened the circuit.
			lastText := "; last: " + adm.lastErr
			if last != nil {
				lastText = "; last: " + last.Error()
			}
			if !adm.probing && adm.until.After(deadline) {
				res.err = fmt.Errorf("gave up after %d attempt(s): %s, past the retry budget of %s%s", res.attempts, adm.paused(), s.maxElapsed, lastText)
				return res
			}
			wake := adm.until
			if deadline.Before(wake) {
				wake = deadline
			}
			st.retrying(d, res.attempts, adm.reason(), wake)
			t := time.NewTimer(time.Until(wake))
			select {
			case <-ctx.Done():
				t.Stop()
				res.err = fmt.Errorf("abandoned after %d attempt(s) at shutdown: %s%s", res.attempts, adm.paused(), lastText)
				return res
			case <-adm.changed:
				t.Stop()
			case <-t.C:
			}
			if !time.Now().Before(deadline) {
				res.err = fmt.Errorf("gave up after %d attempt(s) in %s: %s%s", res.attempts, time.Since(start).Round(time.Millisecond), adm.paused(), lastText)
				return res
			}
			continue
		}

		res.attempts++
		// An attempt, once started, gets its whole AttemptTimeout even past
		// the budget: cutting it short would turn the receiver's answer
		// into a timeout. The budget decides whether to start one.
		actx, cancel := context.WithTimeout(ctx, s.attemptTimeout)
		status, err := s.attempt(actx, st.url, d)
		cancel()
		abandoned := err != nil && ctx.Err() != nil
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		st.breaker.done(adm.probe, retryable(err), abandoned, msg, time.Now())
		res.status = status
		if err == nil {
			res.err = nil
			return res
		}
		last = err
		if abandoned {
			res.err = fmt.Errorf("abandoned after %d attempt(s) at shutdown; last: %w", res.attempts, err)
			return res
		}
		if !retryable(err) {
			res.err = err
			return res
		}
		wait := s.backoff(res.attempts - 1)
		var ae *attemptError
		asked := errors.As(err, &ae) && ae.retryAfter > wait
		if asked {
			wait = ae.retryAfter
		}
		if until := st.breaker.pausedUntil(time.Now()); !until.IsZero() && !until.Before(time.Now().Add(wait)) {
			// The circuit is open, and its cool-down outlasts the wait:
			// wait for it instead (above), so that the status says so.
			continue
		}
		if time.Now().Add(wait).After(deadline) {
			if asked {
				res.err = fmt.Errorf("gave up after %d attempt(s): the receiver asked to retry after %s, beyond the retry budget of %s; last: %w", res.attempts, wait, s.maxElapsed, err)
			} else {
				res.err = fmt.Errorf("gave up after %d attempt(s) in %s; last: %w", res.attempts, time.Since(start).Round(time.Millisecond), err)
			}
			return res
		}
		st.log.Debug("webhook attempt failed; retrying",
			zap.String("webhook_id", d.id), zap.Int("attempt", res.attempts),
			zap.Int("status", status), zap.String("error", err.Error()), zap.Duration("wait", wait))
		st.retrying(d, res.attempts, err.Error(), time.Now().Add(wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			res.err = fmt.Errorf("abandoned after %d attempt(s) at shutdown; last: %w", res.attempts, err)
			return res
		case <-t.C:
		}
	}
}
