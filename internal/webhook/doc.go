// Package webhook delivers an analysis' events to the webhook URL its caller
// gave: the completed event (the finished analysis) always, and, when the
// subscriber asked for them, one event after each measurement.
//
// Deliveries follow the Standard Webhooks conventions (standardwebhooks.com):
// every POST carries webhook-id (the same across retries of one event),
// webhook-timestamp (unix seconds of that attempt) and, when a secret is
// configured, webhook-signature "v1,<base64(HMAC-SHA256(key,
// id.timestamp.body))>". The retry policy is alertmanager's notify/: an
// attempt reports whether its failure is retryable; 2xx is done, 408, 429,
// 5xx and network errors are retried with exponential backoff and jitter
// (honouring Retry-After) until a per-delivery budget runs out, and any
// other status is final.
//
// A Sender holds the configuration shared by every analysis (allowed
// destinations, key, HTTP client, circuit breakers, metrics); a Stream
// carries one analysis' events to one URL, in order, on one goroutine of
// its own.
//
// A Stream whose analysis outlives its process (a store keeps it) is given
// an Outbox (StreamWith): each event is owed there before Send returns,
// sent once the outbox has recorded it, and marked done once delivered or
// given up, so that another process sends what this one could not, under
// the same webhook-id and with the same body. The package defines what it
// needs of an outbox; the service implements it over its store.
//
// What a caller can make it spend is bounded before it is spent: Streams
// with deliveries owed (MaxBacklog; one more is ErrBacklogFull, a 429),
// and with them goroutines and queued events; connections to one
// destination (MaxConnsPerHost); attempts to a destination that keeps
// failing (a circuit breaker per destination pauses them for a cool-down);
// the time one event is retried (MaxElapsed).
//
// What the package must not do:
//   - send anything to a URL that Check refuses, and that includes following
//     a redirect to one, going through a proxy, or dialling a host in
//     another spelling than the one Check compared;
//   - put a URL's userinfo or query, or the signing key, in an error, a log
//     line or a Status (query strings often hold tokens);
//   - block the analysis that produces the events: Send only queues, and a
//     slow receiver loses measurement events, never the completed one;
//   - know about HTTP serving or the analysis engine: the server wires a
//     Stream to a run's events, and nothing here imports either.
//
// The allow list, the transport, the dialler and the redirect checks are
// internal/outbound's, as for every client of canaryd; what a Status, an
// error or a log line shows of a URL is internal/redact's. The retry
// policy, the breakers, the limits, the messages and the metrics are this
// package's.
package webhook
