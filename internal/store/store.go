package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/redact"
)

// Errors of a Store. Each is matched with errors.Is.
var (
	// ErrNotFound: no analysis (or delivery) has the id.
	ErrNotFound = errors.New("store: no such analysis")
	// ErrExists: Create was given an id already stored.
	ErrExists = errors.New("store: an analysis with this id is already stored")
	// ErrLeaseLost: a write carried a lease token that is no longer the
	// analysis': another replica claimed it since. The write changed
	// nothing; the writer must stop running the analysis.
	ErrLeaseLost = errors.New("store: the lease was lost: another replica holds the analysis now")
	// ErrUnavailable: the store could not be reached (or did not answer
	// before the context ended). The server answers 503.
	ErrUnavailable = errors.New("store unavailable")
	// ErrFull: the memory store holds Options.MaxAnalyses analyses.
	ErrFull = errors.New("store: full")
	// ErrTooManySubscribers: Options.MaxSubscribers subscriptions are open.
	ErrTooManySubscribers = errors.New("store: too many subscriptions")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// SecretError is Create's refusal of an analysis that holds a secret the
// store cannot keep: a postgres store without a secret key stores no
// secret, sealed or in clear. Field names the request's field
// (args.NAME, webhook.url, spec).
type SecretError struct {
	Field string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("%s holds a secret, and this canaryd stores no secret without --store-secret-key-file (give every replica the same key file, or pass the value another way)", e.Field)
}

// FilterError is List's refusal of a filter: Field names the query
// parameter (limit, cursor, arg).
type FilterError struct {
	Field   string
	Message string
}

func (e *FilterError) Error() string { return e.Field + ": " + e.Message }

// Bounds of what one call may make a store hold or return.
const (
	// DefaultListLimit is List's page size when Filter.Limit is 0, and
	// MaxListLimit the largest it accepts.
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// MaxArgFilters is how many argument filters List accepts.
	MaxArgFilters = 16
	// DefaultMaxSubscribers bounds the subscriptions open on one store
	// (each is a channel; postgres' share one connection) when
	// Options.MaxSubscribers is 0.
	DefaultMaxSubscribers = 100_000
	// DeleteBatch is how many analyses DeleteCompleted removes per call.
	DeleteBatch = 1000
	// DefaultLeaseTTL is a lease's length when Options.LeaseTTL is 0.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultMaxAnalyses bounds the memory store when
	// Options.MaxAnalyses is 0.
	DefaultMaxAnalyses = 100_000
)

// MaxIDLength bounds an analysis id, which every notification carries.
const MaxIDLength = 200

// checkID refuses an id no analysis of canaryd's has: empty, longer than
// MaxIDLength, or with a space or a NUL (a notification's separator).
func checkID(id string) error {
	if id == "" || len(id) > MaxIDLength || strings.ContainsAny(id, " \x00") {
		return fmt.Errorf("store: an analysis id must have 1 to %d characters, no space", MaxIDLength)
	}
	return nil
}

// Store keeps analyses: what was asked for, their state, their
// measurements and the webhook deliveries they owe. Every method is safe
// for concurrent use. Writes of an analysis' state are fenced: they carry
// the Lease of the replica that runs it, and fail with ErrLeaseLost, having
// changed nothing, once another replica has claimed it.
type Store interface {
	// Create stores a new analysis, its lease held by a.Owner.
	Create(ctx context.Context, a NewAnalysis) (Lease, error)
	// Get returns an analysis, ErrNotFound when none has the id.
	Get(ctx context.Context, id string) (*Analysis, error)
	// List returns analyses matching f, newest first (ties by id), a page
	// at a time. Documents and secret values are left out: Get has them.
	List(ctx context.Context, f Filter) (Page, error)
	// SaveState saves the analysis' state (its phase, counters, streaks
	// and retained measurements: the resource as the engine shows it).
	SaveState(ctx context.Context, l Lease, state api.Analysis) error
	// AppendMeasurement stores a finished measurement and, when state is
	// not nil, the state it led to, at once. A measurement already stored
	// (same analysis, metric and index: taken again after its replica
	// died) changes nothing and reports added false.
	AppendMeasurement(ctx context.Context, l Lease, m Measurement, state *api.Analysis) (added bool, err error)
	// Commit writes m, one step of the analysis, in one transaction: the
	// events it owes, its measurements, its state and the events done.
	// It changes nothing unless it writes all of it; a commit made again
	// (after an error that left its fate unknown) writes nothing twice.
	Commit(ctx context.Context, l Lease, m Mutation) error
	// Measurements returns the measurements of an analysis in r, by
	// metric and index: a page of at most MaxListLimit.
	Measurements(ctx context.Context, id string, r MeasurementRange) ([]Measurement, error)
	// Claim takes up to n (at most MaxListLimit) analyses with work left (running, or owing
	// webhook deliveries) whose lease has expired, for owner: their tokens
	// are bumped, so their previous owner's writes fail.
	Claim(ctx context.Context, owner string, n int) ([]Lease, error)
	// Renew extends every lease owner holds, at once, and returns them:
	// an analysis missing from the answer is no longer owner's.
	Renew(ctx context.Context, owner string) ([]Lease, error)
	// Release hands leases over: they expire now, for any replica to
	// claim. A lease already lost is skipped.
	Release(ctx context.Context, leases ...Lease) error
	// RequestTerminate asks the replica that runs the analysis to
	// terminate it: its leases say so (Lease.Terminate) from its next
	// renewal or claim. Any replica may ask; an analysis already
	// completed is left as it is. ErrNotFound when none has the id.
	RequestTerminate(ctx context.Context, id string) error
	// Enqueue records a webhook delivery the analysis owes. One already
	// recorded (same webhook id) is left as it is.
	Enqueue(ctx context.Context, l Lease, d Delivery) error
	// Owed returns the deliveries an analysis still owes, oldest first.
	Owed(ctx context.Context, id string) ([]Delivery, error)
	// MarkDelivered records that a delivery is done: delivered, or given
	// up. Marking it twice is harmless; ErrNotFound when it was never
	// enqueued.
	MarkDelivered(ctx context.Context, l Lease, webhookID string) error
	// DeleteCompleted removes up to DeleteBatch analyses completed before
	// before, with their measurements and deliveries, and says how many.
	DeleteCompleted(ctx context.Context, before time.Time) (int, error)
	// Subscribe returns a channel told of every write of the analysis id
	// from now on; a reader fetches what changed (Get). Notifications
	// coalesce: a slow reader gets the latest. Version 0 means some may
	// have been missed (the store's connection was lost): fetch again.
	// cancel ends the subscription and closes the channel.
	Subscribe(ctx context.Context, id string) (notes <-chan Notification, cancel func(), err error)
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's connections and ends its subscriptions.
	Close()
}

// Shared says whether processes other than this one use st too, as the
// replicas on one postgres store do. Then an analysis outlives the process
// that runs it: its lease is renewed, another replica adopts it when this
// one stops, and the shutdown hands it over. A store that is not shared
// (memory:) is this process' alone: nothing is adopted, the shutdown ends
// what runs, and an analysis made by an earlier process is gone with it.
// A store says it is not shared by a method Shared() bool; one without is
// shared.
func Shared(st Store) bool {
	s, ok := st.(interface{ Shared() bool })
	return !ok || s.Shared()
}

// NewAnalysis is an analysis as it was asked for, and its first state.
type NewAnalysis struct {
	ID string
	// Template names the template it was started from; "" for a posted
	// document.
	Template string
	// Document is the posted document as it was received; nil for a
	// template. Its sha256 is stored with it.
	Document []byte
	// Credentials says that the document holds credentials (a header's
	// value, a password, a client secret): a postgres store keeps it only
	// sealed.
	Credentials bool
	// Args are the arguments it runs with.
	Args []Arg
	// Webhook is the caller's webhook subscription, nil for none.
	Webhook *Webhook
	// State is its resource at the start (phase Running, StartedAt set).
	State api.Analysis
	// Owner is the replica that runs it, which holds its first lease.
	Owner string
}

// Arg is one argument's value. Secret marks a value kept from every text
// shown; an argument whose name says so (redact.IsSecretName) is secret
// whatever Secret says.
type Arg struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Secret bool   `json:"secret,omitempty"`
}

func (a Arg) secret() bool { return a.Secret || redact.IsSecretName(a.Name) }

// Webhook is a webhook subscription: where to, and which events.
type Webhook struct {
	// URL is the destination. In what Get returns it is the URL itself
	// when the store could open it, else as shown (redact.URLString).
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// Analysis is a stored analysis.
type Analysis struct {
	ID             string
	CreatedAt      time.Time
	Template       string
	Document       []byte // nil in List, and when sealed and not opened
	DocumentSHA256 string
	// Args are the arguments; a secret one's Value is "" unless the store
	// opened it (Get, with the key it was sealed with).
	Args    []Arg
	Webhook *Webhook
	// Phase, StartedAt and CompletedAt are State's, for filters.
	Phase       api.Phase
	StartedAt   time.Time
	CompletedAt *time.Time
	// State is the resource as last saved.
	State api.Analysis
	// Version counts the analysis' writes; Notification.Version is it.
	Version int64
	// Lease is who runs the analysis, with what token, until when.
	Lease          Lease
	DeliveriesOwed int
	// SealError says why the secrets sealed with the analysis could not
	// be opened (no key, another key); nil when there are none, or they
	// were. The analysis can be shown, not resumed.
	SealError error
	// TerminateRequested says a replica asked for it to be terminated
	// (RequestTerminate).
	TerminateRequested bool
}

// Lease is a replica's hold on an analysis: its writes carry Token.
type Lease struct {
	ID        string
	Owner     string
	Token     int64
	ExpiresAt time.Time
	// Terminate, in what Renew and Claim return, says the analysis is to
	// be terminated (RequestTerminate).
	Terminate bool
}

// Measurement is one finished measurement of a metric; Index numbers the
// metric's measurements from 0.
type Measurement struct {
	Metric      string
	Index       int
	Measurement api.Measurement
}

// MeasurementRange selects measurements: Metric's (every metric's when
// ""), from index From, at most Limit (DefaultListLimit when 0, at most
// MaxListLimit).
type MeasurementRange struct {
	Metric string
	From   int
	Limit  int
}

func (r *MeasurementRange) limit() (int, error) {
	switch {
	case r.Limit == 0:
		return DefaultListLimit, nil
	case r.Limit < 0 || r.Limit > MaxListLimit:
		return 0, &FilterError{Field: "limit", Message: fmt.Sprintf("must be from 1 to %d", MaxListLimit)}
	}
	return r.Limit, nil
}

// Delivery is a webhook event owed. WebhookID is chosen once per event and
// carried by every attempt, on any replica; Seq orders the deliveries.
// Event is the body every attempt sends, kept byte for byte (Owed returns
// it as Enqueue was given it), so that an attempt from another replica
// sends what the first did.
type Delivery struct {
	WebhookID   string
	Seq         int64
	Event       json.RawMessage
	CreatedAt   time.Time
	DeliveredAt *time.Time
}

// Filter selects analyses for List. Zero fields select everything.
type Filter struct {
	Phases   []api.Phase
	Template string
	// Series keeps the analyses whose state's Series (a round's or a
	// gate's) is this.
	Series string
	// Args must all match: the argument NAME has the value (a secret
	// argument's value never matches).
	Args          map[string]string
	StartedAfter  time.Time // exclusive
	StartedBefore time.Time // exclusive
	// Limit is the page's size: DefaultListLimit when 0, at most
	// MaxListLimit.
	Limit int
	// Cursor continues a list where a Page's Next left it.
	Cursor string
}

// Page is one page of a list; Next, when not "", continues it.
type Page struct {
	Analyses []Analysis
	Next     string
}

// Notification tells a subscriber that analysis ID was written, up to
// Version (0: fetch, some may have been missed).
type Notification struct {
	ID      string
	Version int64
}

// Options configure a store.
type Options struct {
	// Clock tells the time of leases, creation and deliveries; the wall
	// clock when nil. Replicas compare leases with their own clocks, so
	// theirs must agree within a small part of LeaseTTL (NTP does); the
	// fencing token, not the clock, keeps a stale replica's writes out.
	Clock clock.Clock
	// LeaseTTL is a lease's length from its claim or renewal;
	// DefaultLeaseTTL when 0.
	LeaseTTL time.Duration
	// SecretKey seals secrets in a postgres store (AES-256-GCM, 32
	// bytes; ReadKeyFile). Nil: analyses with secrets are refused
	// (SecretError).
	SecretKey []byte
	// MaxAnalyses bounds the memory store; DefaultMaxAnalyses when 0.
	MaxAnalyses int
	// MaxSubscribers bounds the subscriptions open at once;
	// DefaultMaxSubscribers when 0.
	MaxSubscribers int
	// Migrate has Open bring a postgres schema up to date first.
	Migrate bool
	// Shared has a memory store say it is shared (Shared), as postgres
	// is: for replicas in one process, as tests run them, which then
	// renew their leases, adopt each other's analyses and hand them over.
	// Unset, a memory store is this process' alone (memory:).
	Shared bool
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.MaxAnalyses <= 0 {
		o.MaxAnalyses = DefaultMaxAnalyses
	}
	if o.MaxSubscribers <= 0 {
		o.MaxSubscribers = DefaultMaxSubscribers
	}
}

// Kinds of store URL.
const (
	KindMemory   = "memory"
	KindPostgres = "postgres"
)

// Memory is the memory store's URL, the default.
const Memory = "memory:"

// ParseURL says what kind of store raw names: memory: or a postgres:// (or
// postgresql://) URL. Its errors never quote the URL, which may hold a
// password.
func ParseURL(raw string) (kind string, err error) {
	switch {
	case raw == Memory || raw == "memory":
		return KindMemory, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			return "", errors.New("not a valid postgres:// URL")
		}
		return KindPostgres, nil
	}
	return "", fmt.Errorf("%s is neither memory: nor a postgres:// URL", RedactURL(raw))
}

// RedactURL shows a store URL without its password (and query, which may
// hold one): for logs and messages.
func RedactURL(raw string) string {
	if raw == Memory || raw == "memory" {
		return Memory
	}
	return redact.URLString(raw)
}

// Open opens the store raw names (ParseURL).
func Open(ctx context.Context, raw string, opts Options) (Store, error) {
	kind, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	if kind == KindMemory {
		return NewMemory(opts), nil
	}
	return OpenPostgres(ctx, raw, opts)
}

// cursor is a page's end: the last analysis' start and id.
type cursor struct {
	StartedAt time.Time `json:"s"`
	ID        string    `json:"i"`
}

func encodeCursor(a *Analysis) string {
	b, _ := json.Marshal(cursor{StartedAt: a.StartedAt, ID: a.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err != nil || len(b) > 1024 || json.Unmarshal(b, &c) != nil || c.ID == "" {
		return nil, &FilterError{Field: "cursor", Message: "not a cursor this list returned"}
	}
	return &c, nil
}

// CursorAfter is the cursor of the page that follows a in a list: what a
// Page's Next is when a ends it.
func CursorAfter(a *Analysis) string { return encodeCursor(a) }

// Selector checks f and returns its page's size and what it selects: the
// analyses its filters match that come after its cursor. Every list of
// analyses, a store's or a replica's own, selects with it, so that every
// filter and cursor means the same on each. Its errors are FilterErrors.
func (f Filter) Selector() (limit int, selects func(*Analysis) bool, err error) {
	limit, cur, err := f.check()
	if err != nil {
		return 0, nil, err
	}
	return limit, func(a *Analysis) bool { return f.matches(a) && (cur == nil || after(a, cur)) }, nil
}

// check validates f and returns its limit and cursor.
func (f *Filter) check() (int, *cursor, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return 0, nil, &FilterError{Field: "limit", Message: fmt.Sprintf("must be from 1 to %d", MaxListLimit)}
	}
	if len(f.Args) > MaxArgFilters {
		return 0, nil, &FilterError{Field: "arg", Message: fmt.Sprintf("at most %d argument filters", MaxArgFilters)}
	}
	c, err := decodeCursor(f.Cursor)
	return limit, c, err
}

// micro truncates t to PostgreSQL's precision, so that both stores give
// back the times they were given alike.
func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// startedAt is when a state says the analysis started; now when unset.
func startedAt(s *api.Analysis, now time.Time) time.Time {
	if s.StartedAt != nil {
		return micro(*s.StartedAt)
	}
	return micro(now)
}

// completedAt is the state's completion, nil while it runs.
func completedAt(s *api.Analysis, now time.Time) *time.Time {
	if !s.Phase.Completed() {
		return nil
	}
	t := micro(now)
	if s.CompletedAt != nil {
		t = micro(*s.CompletedAt)
	}
	return &t
}

// maskedArgs are the arguments as stored in clear: secret values masked.
func maskedArgs(args []Arg) map[string]string {
	out := make(map[string]string, len(args))
	for _, a := range args {
		if a.secret() {
			out[a.Name] = redact.Mask
		} else {
			out[a.Name] = a.Value
		}
	}
	return out
}

// webhookHasSecret says whether a webhook URL holds what must be sealed:
// userinfo, or a query (often a token).
func webhookHasSecret(raw string) bool {
	u, err := url.Parse(raw)
	return err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != ""
}
