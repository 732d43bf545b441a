package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/promreg"
)

// The defaults of Options.
const (
	DefaultMaxElapsed     = 2 * time.Minute
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultAttemptTimeout = 10 * time.Second
	DefaultQueueSize      = 64
	// DefaultMaxBacklog is limits.MaxWebhookBacklog.
	DefaultMaxBacklog = limits.MaxWebhookBacklog
	// DefaultMaxConnsPerHost bounds the connections to one destination:
	// enough for a receiver that answers in 100 ms to take 160 events a
	// second, few enough that a receiver that never answers holds few.
	DefaultMaxConnsPerHost = 16
	// DefaultBreakerFailures failed attempts in a row to one destination
	// open its circuit for DefaultBreakerCooldown.
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 30 * time.Second
)

// ErrBacklogFull is Stream's error when Options.MaxBacklog streams already
// have deliveries owed. The server answers such a request with a 429.
var ErrBacklogFull = errors.New("too many webhooks with deliveries owed")

// maxRedirects bounds the redirects one attempt follows; each is checked
// against the allow list as well.
const maxRedirects = 5

// userAgent is sent with every delivery.
const userAgent = "canaryd-webhook/1"

// Options configure a Sender. Zero values take the defaults named.
type Options struct {
	// Allow are the URL prefixes a destination must start with
	// (--webhook-allow). They are compared on parsed, normalised URLs:
	// scheme and host case-insensitively and with default ports made
	// explicit, the path segment by segment, so that
	// "https://hooks.example.com/ci" allows "https://hooks.example.com/ci"
	// and ".../ci/deploys" but neither "https://hooks.example.com.evil.com"
	// nor "https://hooks.example.com/cievil". A prefix may not have a
	// query, fragment or userinfo. Empty refuses every webhook.
	Allow []string
	// Secret is the HMAC-SHA256 key that signs deliveries (see ParseSecret);
	// nil sends them unsigned, without a webhook-signature header.
	Secret []byte
	// Client makes the requests. Nil means a client of its own, built by
	// outbound.NewTransport: Argo's timeouts, AttemptTimeout as its overall
	// timeout, at most MaxConnsPerHost connections to one destination, no
	// proxy whatever HTTP_PROXY, HTTPS_PROXY or ALL_PROXY say, and the
	// allow list's dialler (outbound.AllowList.Dial), which dials a host
	// only in the spelling the allow list compared (see Check) and only
	// when a prefix names it. A Client given here keeps its own transport,
	// and those three are its owner's business. Either way the Sender uses
	// a copy whose redirect policy (checked before the client's own
	// CheckRedirect) follows only 307 and 308, which repeat the POST, at
	// most five times, and only to targets that Allow allows; any other
	// redirect fails the delivery for good. Requests, redirects included,
	// name the host as it was compared.
	Client *http.Client
	// MaxBacklog is how many Streams may have deliveries owed at once
	// (--max-webhook-backlog): from Stream until the last event is
	// delivered or given up. Beyond it Stream fails with ErrBacklogFull.
	// It bounds the Sender's goroutines (one per Stream) and queued
	// events. DefaultMaxBacklog when zero.
	MaxBacklog int
	// MaxConnsPerHost caps the connections of the Sender's own client to
	// one destination (scheme, host and port); attempts beyond it wait
	// for a connection within their AttemptTimeout.
	// DefaultMaxConnsPerHost when zero.
	MaxConnsPerHost int
	// BreakerFailures failed attempts in a row to one destination (no
	// response, 408, 429, 5xx) open its circuit for BreakerCooldown:
	// deliveries to it make no attempt meanwhile, and wait for the
	// cool-down when it ends within their retry budget or are given up at
	// once when it does not. Then one attempt probes the destination, and
	// its outcome closes the circuit or opens it again.
	// DefaultBreakerFailures and DefaultBreakerCooldown when zero.
	BreakerFailures int
	BreakerCooldown time.Duration
	// MaxElapsed is the retry budget of one delivery, from its first
	// attempt; DefaultMaxElapsed when zero. When the next wait (backoff or
	// Retry-After) would end past it, the delivery is given up at once; an
	// attempt already started still gets its AttemptTimeout, so a delivery
	// lasts at most MaxElapsed + AttemptTimeout.
	MaxElapsed time.Duration
	// InitialBackoff and MaxBackoff bound the exponential backoff between
	// attempts: the n-th wait is drawn from [b/2, b] with
	// b = min(MaxBackoff, InitialBackoff·2ⁿ) (equal jitter).
	// DefaultInitialBackoff and DefaultMaxBackoff when zero.
	InitialBackoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt, redirects included;
	// DefaultAttemptTimeout when zero.
	AttemptTimeout time.Duration
	// QueueSize is how many measurement events a Stream holds while its
	// receiver is slow; DefaultQueueSize when zero. See Stream.Send.
	QueueSize int
	// Logger receives a line per failed attempt (debug), per delivery given
	// up or refused (warn), and per delivery (debug). Nil logs nothing.
	Logger *zap.Logger
	// Registerer, when set, receives the metrics:
	//   canaryd_webhook_deliveries_total{outcome="delivered|failed|refused|dropped"}
	//   canaryd_webhook_attempts_total{code="200|…|error"}
	//   canaryd_webhook_delivery_duration_seconds
	//   canaryd_webhook_backlog
	//   canaryd_webhook_circuit_opens_total
	Registerer prometheus.Registerer
}

// Sender delivers webhooks. It holds what every analysis shares: the allow
// list, the key, the HTTP client, the circuit breakers and the metrics. It
// is safe for concurrent use, and has no goroutines of its own: each
// Stream has one, and at most MaxBacklog Streams are under way.
type Sender struct {
	allow           outbound.AllowList
	secret          []byte
	client          *http.Client
	maxElapsed      time.Duration
	initialBackoff  time.Duration
	maxBackoff      time.Duration
	attemptTimeout  time.Duration
	queueSize       int
	maxBacklog      int64
	maxConnsPerHost int
	log             *zap.Logger
	metrics         *metrics
	breakers        *breakers
	// backlog counts the Streams with deliveries owed.
	backlog atomic.Int64
	// dial makes the connections of the Sender's own transport, to the
	// address as the allow list's dialler spells it; a field so that
	// tests can see what is dialled.
	dial outbound.DialFunc
}

// New returns a Sender configured by o. It fails when a prefix of o.Allow is
// not an http or https URL, or when the metrics cannot be registered.
func New(o Options) (*Sender, error) {
	s := &Sender{
		secret:          slices.Clone(o.Secret),
		maxElapsed:      orDefault(o.MaxElapsed, DefaultMaxElapsed),
		initialBackoff:  orDefault(o.InitialBackoff, DefaultInitialBackoff),
		maxBackoff:      orDefault(o.MaxBackoff, DefaultMaxBackoff),
		attemptTimeout:  orDefault(o.AttemptTimeout, DefaultAttemptTimeout),
		queueSize:       orDefault(o.QueueSize, DefaultQueueSize),
		maxBacklog:      int64(orDefault(o.MaxBacklog, DefaultMaxBacklog)),
		maxConnsPerHost: orDefault(o.MaxConnsPerHost, DefaultMaxConnsPerHost),
		log:             o.Logger,
	}
	if o.MaxElapsed < 0 || o.InitialBackoff < 0 || o.MaxBackoff < 0 || o.AttemptTimeout < 0 || o.QueueSize < 0 ||
		o.MaxBacklog < 0 || o.MaxConnsPerHost < 0 || o.BreakerFailures < 0 || o.BreakerCooldown < 0 {
		return nil, errors.New("webhook: durations, the queue size and the limits must not be negative")
	}
	if s.maxBackoff < s.initialBackoff {
		return nil, fmt.Errorf("webhook: MaxBackoff (%s) is less than InitialBackoff (%s)", s.maxBackoff, s.initialBackoff)
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	allow, err := outbound.ParseAllowList(o.Allow)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	s.allow = allow
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.breakers = newBreakers(orDefault(o.BreakerFailures, DefaultBreakerFailures), orDefault(o.BreakerCooldown, DefaultBreakerCooldown),
		m.circuitOpens.Inc)
	s.dial = outbound.Dialer(0)
	s.client = s.wrapClient(o.Client)
	return s, nil
}

func orDefault[T time.Duration | int](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Check reports whether rawURL may receive webhooks: nil when it may, else an
// error wrapping ErrRefused that says why (not an absolute http(s) URL,
// credentials in it, dot segments in its path, not under any allowed
// prefix). The error never quotes the URL, so it is safe to show to the
// caller and to log. The server calls Check while validating a request, so
// that a refused webhook is a 400 before anything runs.
func (s *Sender) Check(rawURL string) error {
	_, err := s.check(rawURL)
	return err
}

// errRedirectRefused is returned by the redirect policy; the attempt fails
// without retry, since the receiver will send the same redirect again.
type errRedirectRefused struct{ reason string }

func (e *errRedirectRefused) Error() string { return "redirect not followed: " + e.reason }

// wrapClient returns a copy of c (or of a client of the Sender's own, see
// Options.Client) whose redirect policy checks every target against the
// allow list.
func (s *Sender) wrapClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	} else {
		t := outbound.NewTransport(outbound.TransportOptions{
			MaxConnsPerHost: s.maxConnsPerHost,
			// s.dial is read at each dial, so that tests can wrap it.
			Dial: s.allow.Dial(func(ctx context.Context, network, addr string) (net.Conn, error) {
				return s.dial(ctx, network, addr)
			}),
		})
		out = http.Client{Transport: t, Timeout: s.attemptTimeout}
	}
	next := out.CheckRedirect
	within := s.allow.Redirects(maxRedirects,
		func() error { return &errRedirectRefused{fmt.Sprintf("more than %d redirects", maxRedirects)} },
		func(_ *url.URL, reason string) error {
			return &errRedirectRefused{"its target is refused: " + advise(reason)}
		})
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := within(req, via); err != nil {
			return err
		}
		if req.Method != http.MethodPost {
			// After a 301, 302 or 303 the client would send a GET without
			// the event, and a 2xx to that is no delivery.
			return &errRedirectRefused{"a 301, 302 or 303 redirect would turn the POST into a GET without the event; give the final URL, or redirect with 307 or 308"}
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &out
}

// metrics are the Sender's metrics.
type metrics struct {
	deliveries   *prometheus.CounterVec
	attempts     *prometheus.CounterVec
	duration     prometheus.Histogram
	backlog      prometheus.Gauge
	circuitOpens prometheus.Counter
}

// The outcomes of a delivery, the values of the outcome label.
const (
	outcomeDelivered = "delivered"
	outcomeFailed    = "failed"
	outcomeRefused   = "refused"
	outcomeDropped   = "dropped"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	f, registered := promreg.With(reg)
	m := &metrics{
		deliveries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_webhook_deliveries_total",
			Help: "Webhook events by outcome: delivered; failed (a final status, or retries given up or abandoned at shutdown); refused (the URL is not allowed); dropped (a measurement event the queue had no room for).",
		}, []string{"outcome"}),
		attempts: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_webhook_attempts_total",
			Help: "Webhook POST attempts by HTTP status code, or \"error\" when no response came (network error, timeout, refused redirect).",
		}, []string{"code"}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "canaryd_webhook_delivery_duration_seconds",
			Help:    "Time from an event's first attempt to its delivery or its giving up, retries included.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
		backlog: f.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_webhook_backlog",
			Help: "Webhooks with deliveries owed: analyses with a webhook that are running, or whose last events are still being delivered or retried. New analyses with a webhook get 429 at --max-webhook-backlog.",
		}),
		circuitOpens: f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_webhook_circuit_opens_total",
			Help: "Times a webhook destination's circuit breaker opened after failed attempts in a row: deliveries to it paused for the cool-down.",
		}),
	}
	for _, o := range []string{outcomeDelivered, outcomeFailed, outcomeRefused, outcomeDropped} {
		m.deliveries.WithLabelValues(o)
	}
	if err := registered(); err != nil {
		return nil, fmt.Errorf("webhook: registering metrics: %w", err)
	}
	return m, nil
}
