package analyses

import (
	"cmp"
	"context"
	"encoding/base32"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses/durable"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/ids"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promreg"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/webhook"
)

// ShutdownMessage is the message of an analysis that was still running when
// the service stopped and its grace period ran out. Its phase is Error: the
// service, not the canary, failed to reach a verdict.
const ShutdownMessage = "canaryd stopped before the analysis completed"

// Errors of Analyses.Start and Analyses.Evaluate.
var (
	// ErrDraining: the service is shutting down and takes no new analyses.
	ErrDraining = errors.New("canaryd is shutting down and starts no new analyses")
	// ErrTooMany: --max-analyses analyses are already running.
	ErrTooMany = errors.New("too many analyses running")
)

// AnalysesOptions configure the analyses of one service.
type AnalysesOptions struct {
	// Logger receives a line when an analysis starts and finishes, and one
	// per measurement at debug level, each with the analysis id. Nop when
	// nil.
	Logger *zap.Logger
	// Registerer receives the analysis metrics. None are kept when nil.
	Registerer prometheus.Registerer
	// Clock tells the time to the engine and to retention; the wall clock
	// when nil.
	Clock clock.Clock
	// Scheduler runs the analyses: its timer and its pool of measurement
	// workers (canaryd serve's --workers). When nil, each run takes the
	// engine's default (analysis.Options.Scheduler). It must be on Clock.
	Scheduler *analysis.Scheduler
	// MaxRunning is how many analyses may run at once; more get ErrTooMany.
	MaxRunning int
	// MaxFinished is how many finished analyses are kept; the oldest go
	// first.
	MaxFinished int
	// Retention is how long a finished analysis is kept.
	Retention time.Duration
	// ErrorRetryInterval and MaxDuration are passed to every run.
	ErrorRetryInterval time.Duration
	MaxDuration        time.Duration
	// Webhooks checks the webhook destinations callers give
	// (CheckWebhook) and delivers the events of the analyses that ask for
	// one (StartOptions.Webhook). Nil refuses every webhook, as a Sender
	// without allowed prefixes does.
	Webhooks *webhook.Sender
	// Replica names this replica (ids.CheckName) where a store
	// shows which replica holds an analysis: its lease's owner begins
	// with it. No id carries it. "" names it "canaryd".
	Replica string
	// MaxBacktests is how many backtests may run at once; more get
	// ErrTooManyBacktests. DefaultMaxBacktests when 0.
	MaxBacktests int
	// MaxStreams is how many streams may follow one analysis at once; more
	// are refused (Run.follow). DefaultMaxStreams when 0.
	MaxStreams int
	// MaxRounds is how many rounds (Evaluate) and gates (AcquireRound)
	// may be answered at once; more get ErrTooManyRounds.
	// DefaultMaxRounds when 0.
	MaxRounds int
	// MaxRetainedBytes bounds the bytes the analyses held take, running
	// and finished, as estimated from what they recorded (retained.go):
	// finished ones are evicted oldest first to stay under it, and Start
	// fails with ErrRetainedFull when none can be.
	// DefaultMaxRetainedBytes when 0.
	MaxRetainedBytes int64
	// MinRetention is how long a finished analysis is kept at least:
	// neither MaxRetainedBytes nor MaxFinished evicts a younger one (Start
	// fails instead). DefaultMinRetention when 0; at most Retention.
	MinRetention time.Duration
	// StreamWriteTimeout bounds each write of a stream that follows an
	// analysis (Run.WriteTimeout): a caller that has read nothing for this
	// long is gone. DefaultStreamWriteTimeout when 0.
	StreamWriteTimeout time.Duration
	// StreamBuffer is how many events a stream may fall behind its
	// analysis before it is cut off (Hub). DefaultStreamBuffer
	// when 0.
	StreamBuffer int
	// Store is where the analyses are kept. One that other replicas
	// share (store.Shared: postgres) keeps every analysis started here
	// as it runs (persist.go), and answers for the analyses this replica
	// does not hold (stored.go). One that is this process' alone
	// (store.NewMemory, --store memory:, and the default when unset)
	// adds nothing to the registry: the analyses live in this process'
	// memory and end with it.
	Store store.Store
	// Planner compiles the plan of an analysis read from the store: one
	// claimed from a replica that stopped (persist.go), or one whose report
	// is drawn here. Without it none is claimed.
	Planner *compile.Planner
	// LeaseTTL is the store's lease length (store.Options.LeaseTTL): the
	// leases are renewed every third of it. store.DefaultLeaseTTL when 0.
	LeaseTTL time.Duration
	// PrometheusExternalURL is the default datasource's address as a
	// person's browser reaches it: the HTML reports link the metrics that
	// query it to its graph there. None when "".
	PrometheusExternalURL string
	// MaxReportRenders is how many HTML reports may be drawn at once;
	// more get 429. DefaultMaxReportRenders when 0.
	MaxReportRenders int
	// ReportCacheBytes and ReportQueryRate are the reports' cache and
	// rate of range queries (report.RendererOptions); their defaults when
	// 0.
	ReportCacheBytes int64
	ReportQueryRate  float64
}

// DefaultMaxReportRenders is AnalysesOptions.MaxReportRenders when it is
// 0 (limits.MaxReportRenders).
const DefaultMaxReportRenders = limits.MaxReportRenders

// DefaultMaxStreams is AnalysesOptions.MaxStreams when it is 0
// (limits.MaxStreams).
const DefaultMaxStreams = limits.MaxStreams

// DefaultMaxBacktests is AnalysesOptions.MaxBacktests when it is 0
// (limits.MaxBacktests).
const DefaultMaxBacktests = limits.MaxBacktests

// Analyses holds the analyses of one service in memory: the running ones,
// and the finished ones for their retention. It is safe for concurrent use.
//
// Finished analyses are pruned when Analyses is read or written, not by a
// timer: nothing is left running between requests, and what is kept is
// bounded by MaxFinished regardless.
type Analyses struct {
	opts AnalysesOptions
	// keptPlan is the plan of the last round kept, as its run holds it
	// (keptPlanOf).
	keptPlan atomic.Pointer[keptPlan]
	log      *zap.Logger
	clock    clock.Clock
	metrics  *analysisMetrics
	webhooks *webhook.Sender
	// backtests are the backtests running (backtests.go).
	backtests *backtests
	// reports is what the HTML reports share (report.Renderer), and
	// renders a place for each report being drawn (report.go);
	// sharedSources the sources of the compiled specs analyses share
	// (SharedSources).
	reports       *report.Renderer
	renders       chan struct{}
	sharedSources *lru.Cache[*compile.Compiled, map[string]report.Source]
	// lastSources is the last compiled spec SharedSources was asked for,
	// with its sources: asked again in a row, as one caller's rounds are,
	// it answers without the cache's lock.
	lastSources atomic.Pointer[compiledSources]
	// started is when this set was made, to the millisecond: the start of
	// this run, whose Epoch its ids carry. An id with an earlier epoch was
	// made by an earlier run (Restarted).
	started time.Time
	epoch   string
	// rounds are the rounds and gates being answered (rounds.go).
	rounds roundSlots
	// held are the finished analyses held for their retention, and the
	// size of the analyses held, running and finished, as their ledgers
	// estimate it (retained.go): with a store that is not shared, the
	// memory store's own (store.RetainedIn), where memory: keeps them.
	held *store.Retained
	// pageBytes bounds a page of the list with measurements (list.go):
	// the constant, but for tests; streamWriteTimeout is
	// AnalysesOptions.StreamWriteTimeout.
	pageBytes          int64
	streamWriteTimeout time.Duration

	mu      sync.Mutex
	running map[string]*Run
	// draining is set, under mu, once Drain has begun; read without
	// it by Draining, on every request.
	draining atomic.Bool
	// hooks are the webhook streams with deliveries still to make, by
	// the id of their analysis. A stream leaves when its last event is
	// delivered or given up, which may be after its analysis was pruned:
	// WaitWebhooks must still find it at shutdown.
	hooks map[*webhook.Stream]string

	// shared says whether the store is shared with other replicas
	// (store.Shared): then the analyses outlive this process.
	shared bool
	// With a shared store (persist.go): the writers of the runs started here
	// and their leases (durable.Keeper), and the analyses being created.
	keeper    *durable.Keeper
	reserved  int
	closeOnce sync.Once
	// roundWriter writes the rounds kept here to the store (kept.go).
	roundWriter *durable.RoundWriter
	// storedStreams counts the streams following, from the store, each
	// analysis another replica runs: at most MaxStreams each.
	storedStreams map[string]int
}

// Run is an analysis this service holds: the engine's run and, when its
// caller asked for one, the webhook stream that carries its events. Its
// Snapshot reports the webhook's deliveries in the resource's webhook
// field; everything else is the engine's.
type Run struct {
	*analysis.Run
	hook *webhook.Stream // nil without a webhook
	// startedAt is when the analysis started, its place in the list.
	startedAt time.Time
	// ledger is the run's share of the retained bytes.
	ledger *Ledger
	// hub hands the run's events to its streams (Hub).
	hub *Hub
	// streamWriteTimeout bounds each write of a stream that follows the
	// run (Run.WriteTimeout).
	streamWriteTimeout time.Duration
	// streams counts the streams following the run, up to maxStreams.
	streams    atomic.Int32
	maxStreams int32
	// sources say how the plan's metrics query, for the HTML report.
	sources map[string]report.Source
	// template is the analysis' template's name ("" for a bare spec), for
	// the list's ?template= filter, series its series, for
	// ?series=, and args its arguments (secret ones masked), for ?arg=.
	template string
	series   string
	args     map[string]string
	// gone says the run ended here without its analysis ending: another
	// replica holds it now (persist.go).
	gone atomic.Bool
	// writer writes the run to the store; nil without one.
	writer *durable.Writer
}

// handingOver reports whether the run is being, or has been, stopped to
// be handed over to another replica: its end here is not an abort.
func (r *Run) handingOver() bool {
	if r.writer == nil {
		return false
	}
	s := r.writer.State()
	return s == durable.HandingOver || s == durable.HandedOver
}

// AwaitStored waits, once the run is done, until the store holds its
// final state, so that an answer with the verdict is one that every
// replica reads and that outlives this one: at once without a store; at
// most StoreTimeout with one, as a store that does not answer keeps the
// writes queued and tried again (durable.Writer) while the caller gets the
// verdict; or until ctx ends.
func (r *Run) AwaitStored(ctx context.Context) {
	if r.writer == nil {
		return
	}
	select {
	case <-r.writer.Stored():
		return
	default:
	}
	t := time.NewTimer(StoreTimeout)
	defer t.Stop()
	select {
	case <-r.writer.Stored():
	case <-t.C:
	case <-ctx.Done():
	}
}

// DefaultStreamWriteTimeout is AnalysesOptions.StreamWriteTimeout when it
// is 0.
const DefaultStreamWriteTimeout = 30 * time.Second

// WriteTimeout bounds each write of a stream that follows the run.
func (r *Run) WriteTimeout() time.Duration { return r.streamWriteTimeout }

// Follow counts one more stream following the run, unless maxStreams
// already do; release uncounts it.
func (r *Run) Follow() (release func(), ok bool) {
	if r.streams.Add(1) > r.maxStreams {
		r.streams.Add(-1)
		return nil, false
	}
	return func() { r.streams.Add(-1) }, true
}

// Snapshot returns a copy of the analysis as it stands, with the
// deliveries of its webhook so far.
func (r *Run) Snapshot() api.Analysis {
	a := r.Run.Snapshot()
	if r.hook != nil {
		status := r.hook.Status()
		a.Webhook = &status
	}
	return a
}

// NewAnalyses returns an empty set of analyses. It fails only if the metrics
// cannot be registered.
func NewAnalyses(opts AnalysesOptions) (*Analyses, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m, err := newAnalysisMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	bt, err := newBacktests(opts.Registerer)
	if err != nil {
		return nil, err
	}
	reports, err := newReportRenderer(opts)
	if err != nil {
		return nil, err
	}
	hooks := opts.Webhooks
	if hooks == nil {
		// Without allowed prefixes a Sender refuses every URL, saying
		// how to allow one; it cannot fail to build.
		if hooks, err = webhook.New(webhook.Options{}); err != nil {
			return nil, err
		}
	}
	shared, err := lru.New[*compile.Compiled, map[string]report.Source](sharedSourcesSize)
	if err != nil {
		return nil, err
	}
	started := time.UnixMilli(opts.Clock.Now().UnixMilli())
	a := &Analyses{
		sharedSources: shared,
		started:       started,
		epoch:         ids.Epoch(started),
		backtests:     bt,
		reports:       reports,
		renders:       make(chan struct{}, opts.MaxReportRenders),
		opts:          opts,
		shared:        store.Shared(opts.Store),
		log:           opts.Logger,
		clock:         opts.Clock,
		metrics:       m,
		webhooks:      hooks,
		running:       map[string]*Run{},
		held: store.RetainedIn(opts.Store, store.RetainOptions{MaxFinished: opts.MaxFinished, MaxBytes: opts.MaxRetainedBytes,
			Retention: opts.Retention, MinRetention: opts.MinRetention, Clock: opts.Clock}),
		hooks:              map[*webhook.Stream]string{},
		rounds:             roundSlots{max: int64(opts.MaxRounds)},
		pageBytes:          maxPageBytes,
		streamWriteTimeout: opts.StreamWriteTimeout,
	}
	if err := a.registerMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if a.shared {
		a.storedStreams = map[string]int{}
		a.roundWriter = durable.NewRoundWriter(opts.Store, opts.Logger)
		a.keeper = durable.NewKeeper(durable.KeeperOptions{
			Store: opts.Store,
			// Unique to this process: a restarted replica renews none
			// of the leases of its earlier run, which other replicas
			// adopt.
			Owner:       cmp.Or(opts.Replica, "canaryd") + "-" + a.epoch + NewID()[:8],
			LeaseTTL:    opts.LeaseTTL,
			Retention:   opts.Retention,
			Clock:       opts.Clock,
			Logger:      opts.Logger,
			Host:        a,
			StopTimeout: StopTimeout,
			OnLeaseLost: a.metrics.leaseLosses.Inc,
		})
	}
	return a, nil
}

// defaults checks o and fills in the defaults of its zero fields.
func (o *AnalysesOptions) defaults() error {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.MaxRunning <= 0 {
		return errors.New("server: AnalysesOptions.MaxRunning must be positive")
	}
	if o.MaxFinished <= 0 || o.Retention <= 0 {
		return errors.New("server: AnalysesOptions.MaxFinished and Retention must be positive")
	}
	if o.Replica != "" {
		if err := ids.CheckName(o.Replica); err != nil {
			return errors.New("server: AnalysesOptions.Replica: " + err.Error())
		}
	}
	o.MaxBacktests = cmp.Or(max(o.MaxBacktests, 0), DefaultMaxBacktests)
	o.MaxStreams = cmp.Or(max(o.MaxStreams, 0), DefaultMaxStreams)
	o.MaxRounds = cmp.Or(max(o.MaxRounds, 0), DefaultMaxRounds)
	o.MaxRetainedBytes = cmp.Or(max(o.MaxRetainedBytes, 0), DefaultMaxRetainedBytes)
	o.MinRetention = cmp.Or(max(o.MinRetention, 0), DefaultMinRetention)
	o.StreamBuffer = cmp.Or(max(o.StreamBuffer, 0), DefaultStreamBuffer)
	o.StreamWriteTimeout = cmp.Or(max(o.StreamWriteTimeout, 0), DefaultStreamWriteTimeout)
	o.MaxReportRenders = cmp.Or(max(o.MaxReportRenders, 0), DefaultMaxReportRenders)
	o.MinRetention = min(o.MinRetention, o.Retention)
	// The service always has a store: without one, a memory store of
	// its own (the store is an interface value, comparable with nil).
	o.Store = cmp.Or(o.Store, store.NewMemory(store.Options{Clock: o.Clock}))
	return nil
}

// registerMetrics registers the gauges read from the analyses held: the
// bytes they take and, with a store, the measurements waiting to be
// written there (persist.go).
func (a *Analyses) registerMetrics(reg prometheus.Registerer) error {
	f, registered := promreg.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "canaryd_analyses_retained_bytes",
		Help: "Bytes the analyses held take, running and finished, as estimated from what they recorded; bounded by --max-retained-bytes.",
	}, func() float64 { return float64(a.held.Bytes().Load()) })
	if a.shared {
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "canaryd_store_measurements_pending",
			Help: "Measurements taken here and not yet written to the store (--store): a store that is slow or down holds them, at most 1000 an analysis.",
		}, func() float64 { return float64(a.keeper.Pending()) })
		a.metrics.leaseLosses = f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_store_lease_losses_total",
			Help: "Analyses this replica stopped running because another replica claimed their lease (this one was cut off from the store for longer than --store-lease).",
		})
	}
	return registerErr(registered())
}

// CheckWebhook returns nil when rawURL may receive webhooks, else an error
// that says why and never quotes the URL (see webhook.Sender.Check): safe
// for a 400's field error.
func (a *Analyses) CheckWebhook(rawURL string) error { return a.webhooks.Check(rawURL) }

// StartOptions describe an analysis for its resource and logs.
type StartOptions struct {
	Template string
	Args     map[string]string
	// Webhook, when set, is where the analysis' events are sent, by a
	// webhook.Stream of its own. The caller has checked it (CheckWebhook,
	// webhook.CheckEvents); a URL refused anyway gets nothing sent, each
	// event counting as failed in the analysis' webhook field.
	Webhook *WebhookRequest
	// Observer, when set, also receives every event of the run, in order,
	// one at a time, on the scheduler's goroutines; it must not block.
	Observer func(api.Event)
	// Document, RawArgs and Credentials are what a store keeps of the
	// analysis (AnalysesOptions.Store): the posted document (nil for a
	// named template), the arguments the caller gave, and whether the
	// document holds credentials (sealed, or refused without a key).
	Document    []byte
	RawArgs     map[string]string
	Credentials bool
	// Sources say how the plan's Prometheus metrics query, for the HTML
	// report's graph links and curl (report.go); none when nil.
	Sources map[string]report.Source
	// Kind and Series are the resource's (api.Analysis): a gate's or a
	// round's, and the series of calls it is one of.
	Kind   string
	Series string
}

// WebhookRequest is a caller's webhook: the URL, and the event types it
// asked for ("measurement", "completed"); the completed event is sent
// whatever they are.
type WebhookRequest struct {
	URL    string
	Events []string
}

// Start begins an analysis of plan. It fails with ErrDraining while the
// service shuts down, with ErrTooMany at the limit of running analyses, and
// with webhook.ErrBacklogFull when it has a webhook and the Sender's limit
// of webhooks with deliveries owed is reached.
//
// The run is not tied to any request: it ends when its metrics complete, on
// Terminate, at its maximum duration, or when Drain aborts it. Its webhook,
// if any, gets every event up to the completed one, and its deliveries go
// on after the run has ended (see WaitWebhooks).
func (a *Analyses) Start(plan *analysis.Plan, so StartOptions) (*Run, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.draining.Load() {
		return nil, ErrDraining
	}
	if len(a.running)+a.reserved >= a.opts.MaxRunning {
		return nil, ErrTooMany
	}
	// What is held is pruned first: what is left over a bound cannot be
	// evicted (ErrRetainedFull, ErrFinishedFull).
	if err := a.held.Room(); err != nil {
		return nil, err
	}
	id := newID(a.epoch)
	so.Args = RedactArgs(so.Args)
	var writer *durable.Writer
	if a.shared {
		// Stored before it runs, outside the lock: a slow store holds
		// up this request only.
		a.reserved++
		a.mu.Unlock()
		now := a.clock.Now()
		w, err := a.createStored(id, so, api.Analysis{ID: id, Phase: api.PhaseRunning, StartedAt: &now, Template: so.Template, Args: so.Args,
			Kind: so.Kind, Series: so.Series, MetricResults: pendingResults(plan)})
		a.mu.Lock()
		a.reserved--
		if err != nil {
			return nil, err
		}
		writer = w
		if a.draining.Load() {
			// The shutdown began meanwhile: it does not start here,
			// nor elsewhere.
			writer.NotStarted(ErrDraining)
			return nil, ErrDraining
		}
	}
	if writer != nil && so.Webhook != nil {
		writer.HookOpen()
	}
	return a.launchLocked(plan, so, id, writer, nil)
}

// launchLocked runs plan as the analysis id (resumed from resume when it
// is set), its writes to the store by writer when there is one. a.mu is
// held.
//
// What the run keeps is what it needs: the plan and the arguments by
// reference, the observer alone of so (not the posted document, which a
// closure over so would keep), and no logger of its own (a child logger
// holds a buffer of a kilobyte): its lines name it with analysis_id.
func (a *Analyses) launchLocked(plan *analysis.Plan, so StartOptions, id string, writer *durable.Writer, resumed *durable.Claimed) (*Run, error) {
	led := NewLedger(a.held.Bytes(), plan, id, so.Template, so.Args)
	var resume *api.Analysis
	if resumed != nil {
		resume = &resumed.Stored.State
	}
	hook, err := a.openWebhook(so, id, writer, resumed)
	if err != nil {
		return nil, err
	}
	streams := NewHub(a.opts.StreamBuffer, hook, a.log, id)
	observer := so.Observer
	// The observer runs on the scheduler's goroutines, never within
	// Start. Holding a.mu across Start means a run that completes at once
	// still finds itself registered.
	engineRun := analysis.Start(context.Background(), plan, analysis.Options{
		ID:                 id,
		Clock:              a.clock,
		Scheduler:          a.opts.Scheduler,
		Lateness:           a.metrics.observeLateness,
		ErrorRetryInterval: a.opts.ErrorRetryInterval,
		MaxDuration:        a.opts.MaxDuration,
		Template:           so.Template,
		Args:               so.Args,
		Kind:               so.Kind,
		Series:             so.Series,
		Resume:             resume,
		Observer: func(ev api.Event) {
			if writer != nil && !writer.Observe(ev) {
				// Another replica holds the analysis now: this run
				// ends here, unseen.
				a.dropLost(ev)
				return
			}
			// Send only queues: it never waits for the receiver. With a
			// store, the writer is the stream's outbox: the event is
			// owed before Send returns.
			if hook != nil {
				hook.Send(ev)
			}
			a.observe(led, ev)
			streams.Publish(ev)
			if observer != nil {
				observer(ev)
			}
		},
	})
	run := &Run{Run: engineRun, hook: hook, ledger: led, hub: streams, streamWriteTimeout: a.streamWriteTimeout, maxStreams: int32(min(a.opts.MaxStreams, math.MaxInt32)),
		sources: so.Sources, template: so.Template, series: so.Series, args: so.Args, writer: writer}
	if started := engineRun.Snapshot().StartedAt; started != nil {
		run.startedAt = *started
	}
	a.running[id] = run
	if writer != nil {
		a.keeper.Start(writer, run)
	}
	a.metrics.started.Inc()
	a.metrics.running.Set(float64(len(a.running)))
	fields := []zap.Field{zap.String("analysis_id", id), zap.Strings("metrics", MetricNames(plan)), zap.String("template", so.Template), zap.Object("args", logArgs(so.Args))}
	if hook != nil {
		// The URL as Status shows it: without userinfo, its query
		// (often a token) redacted.
		fields = append(fields, zap.String("webhook", hook.Status().URL), zap.Strings("webhook_events", so.Webhook.Events))
	}
	if resume != nil {
		a.log.Info("analysis resumed: its lease was taken over from another replica", fields...)
	} else {
		a.log.Info("analysis started", fields...)
	}
	return run, nil
}

// logArgs are an analysis' arguments in a log line: an object of them
// by name, as zap.Any writes a map, but without encoding/json's
// reflection: the line is written for every analysis started.
type logArgs map[string]string

// MarshalLogObject writes the arguments in name order.
func (m logArgs) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		enc.AddString(k, m[k])
	}
	return nil
}

// openWebhook opens the run's webhook stream, when it asks for one (nil
// otherwise), with the writer as its outbox when there is one; a resumed
// run's stream delivers what the analysis owed first. It fails with
// webhook.ErrBacklogFull at --max-webhook-backlog, before anything runs.
// a.mu is held.
func (a *Analyses) openWebhook(so StartOptions, id string, writer *durable.Writer, resumed *durable.Claimed) (*webhook.Stream, error) {
	if so.Webhook == nil {
		return nil, nil
	}
	var hook *webhook.Stream
	var err error
	if writer != nil {
		// Each event is recorded in the store before its first
		// attempt, and marked once done (durable.Writer).
		h := webhook.StreamOptions{Outbox: writer}
		if resumed != nil {
			h.FirstSeq = resumed.FirstSeq
		}
		hook, err = a.webhooks.StreamWith(id, so.Webhook.URL, so.Webhook.Events, h)
	} else {
		hook, err = a.webhooks.Stream(id, so.Webhook.URL, so.Webhook.Events)
	}
	if err != nil {
		if writer != nil && resumed == nil {
			writer.NotStarted(err)
		}
		// A resumed one's lease is handed back (durable.Keeper):
		// another replica may have room for its webhook.
		return nil, err
	}
	a.hooks[hook] = id
	// Ends when the stream has delivered or given up its last event:
	// after the completed event, which every run sends, or when
	// WaitWebhooks abandons it at shutdown.
	go func() {
		_ = hook.Wait(context.Background())
		a.mu.Lock()
		delete(a.hooks, hook)
		a.mu.Unlock()
		if writer != nil {
			writer.HookEnded()
		}
	}()
	if resumed != nil {
		// What the analysis owed goes first, with its webhook-ids.
		for _, d := range resumed.Owed {
			hook.Redeliver(d.WebhookID, d.Type, d.Event)
		}
	}
	return hook, nil
}

// observe counts and logs an event of a run; on the completed event it
// moves the run to the finished analyses. It must not block: it is called
// on the scheduler's goroutines, which serve every analysis.
func (a *Analyses) observe(led *Ledger, ev api.Event) {
	switch ev.Type {
	case api.EventMeasurement:
		led.Measured(ev.Metric, ev.Measurement)
		if a.held.Over() {
			// Over the bound: evict what may be, now rather than at the
			// next request.
			a.held.Prune()
		}
		a.metrics.measurements.inc(ev.Measurement.Phase)
		// Checked first: the line's fields, made for every measurement,
		// would be garbage (about 380 bytes) when debug lines are off.
		if ce := a.log.Check(zap.DebugLevel, "measurement"); ce != nil {
			ce.Write(zap.String("analysis_id", ev.AnalysisID), zap.String("metric", ev.Metric), zap.String("phase", string(ev.Measurement.Phase)),
				zap.String("value", ev.Measurement.Value), zap.String("message", ev.Measurement.Message),
				zap.String("metric_phase", string(ev.MetricPhase)))
		}
	case api.EventCompleted:
		final := ev.Analysis
		led.Completed(final)
		a.mu.Lock()
		if run, ok := a.running[ev.AnalysisID]; ok {
			// Held before it leaves the running: Get finds it in one
			// or the other.
			a.held.Keep(ev.AnalysisID, run, final.Phase)
			delete(a.running, ev.AnalysisID)
		}
		a.metrics.running.Set(float64(len(a.running)))
		a.mu.Unlock()
		a.metrics.finished.WithLabelValues(string(final.Phase)).Inc()
		fields := []zap.Field{zap.String("analysis_id", ev.AnalysisID), zap.String("phase", string(final.Phase)), zap.String("message", final.Message)}
		if final.StartedAt != nil && final.CompletedAt != nil {
			fields = append(fields, zap.Duration("duration", final.CompletedAt.Sub(*final.StartedAt)))
		}
		a.log.Info("analysis finished", fields...)
	}
}

// Evicted gives back the run's share of the retained bytes, once the
// finished analysis is no longer held (store.Held).
func (r *Run) Evicted() { r.ledger.Release() }

// getLocked returns the analysis id, running or finished within its
// retention. a.mu is held.
func (a *Analyses) getLocked(id string) (*Run, bool) {
	if run, ok := a.running[id]; ok {
		return run, true
	}
	h, ok := a.held.Get(id)
	if !ok {
		return nil, false
	}
	run, ok := h.(*Run)
	return run, ok
}

// Get returns the analysis with the given id, running or finished within
// its retention.
func (a *Analyses) Get(id string) (*Run, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.getLocked(id)
}

// Restarted reports, with a store that is not shared (memory:), whether
// id was made by a canaryd run that started before this one (its epoch is
// earlier than this run's), and when that run started. Such an analysis
// was held in the memory of that run and went with it: this run never held
// it. In a shared store an analysis outlives its run, and one the store
// does not have is simply not there.
func (a *Analyses) Restarted(id string) (time.Time, bool) {
	if a.shared {
		return time.Time{}, false
	}
	started, ok := ids.EpochOf(id)
	if !ok || !started.Before(a.started) {
		return time.Time{}, false
	}
	return started, true
}

// List returns every analysis held, newest first.
func (a *Analyses) List() []api.Analysis {
	a.mu.Lock()
	runs := make([]*Run, 0, len(a.running))
	for _, run := range a.running {
		runs = append(runs, run)
	}
	a.held.Each(func(h store.Held, _ api.Phase) {
		if run, ok := h.(*Run); ok {
			runs = append(runs, run)
		}
	})
	a.mu.Unlock()
	out := make([]api.Analysis, len(runs))
	for i, run := range runs {
		out[i] = run.Snapshot()
	}
	slices.SortFunc(out, func(x, y api.Analysis) int {
		if c := y.StartedAt.Compare(*x.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}

// Draining reports whether Drain has been called.
func (a *Analyses) Draining() bool {
	return a.draining.Load()
}

// Drain stops taking new analyses and waits for the running ones to finish
// until ctx is done; then it aborts those left with phase Error and
// ShutdownMessage, and returns once every one of them has finished, so that
// every waiter, stream and webhook has its terminal result before the HTTP
// server shuts down. Running backtests are stopped too, once ctx is done.
// It returns how many analyses it aborted.
//
// Once ctx is done it waits at most StopTimeout for the aborted analyses
// and backtests to stop: one whose measurement or condition does not
// return is logged and left behind, so that the shutdown keeps its bound.
//
// The webhooks' deliveries are not waited for: WaitWebhooks does that,
// after Drain.
func (a *Analyses) Drain(ctx context.Context) int {
	a.mu.Lock()
	a.draining.Store(true)
	runs := make([]*Run, 0, len(a.running))
	for _, run := range a.running {
		runs = append(runs, run)
	}
	a.mu.Unlock()
	if a.shared {
		// In a shared store the analyses outlive this replica: each is
		// stopped here and handed over to the others at once. In one
		// that is not, they end here: aborted below when the grace
		// runs out.
		a.keeper.HandOver(ctx)
	}

	aborted := 0
	for _, run := range runs {
		select {
		case <-run.Done():
			continue
		case <-ctx.Done():
		}
		select {
		case <-run.Done():
		default:
			if run.handingOver() {
				// Suspended for the hand-over, it ends by itself;
				// the wait below bounds how long that takes.
				continue
			}
			run.Abort(ShutdownMessage)
			aborted++
			a.log.Warn("analysis aborted: the shutdown grace period ran out", zap.String("analysis_id", run.ID()))
		}
	}
	stopBy := time.NewTimer(StopTimeout)
	defer stopBy.Stop()
	late := false
	for _, run := range runs {
		if !late {
			select {
			case <-run.Done():
				continue
			case <-stopBy.C:
				late = true
			}
		}
		select {
		case <-run.Done():
		default:
			a.log.Error("analysis left running at shutdown: it did not stop within "+StopTimeout.String()+" of being aborted",
				zap.String("analysis_id", run.ID()))
		}
	}
	// Backtests get what is left of the grace; their callers then get a
	// 503 (see Backtest).
	a.drainBacktests(ctx)
	if a.shared {
		// Every run's last state to the store, as far as it takes it,
		// and the rounds kept.
		a.keeper.Flush(ctx)
		a.roundWriter.Close(ctx)
	}
	return aborted
}

// WaitWebhooks waits until every webhook event queued has been delivered or
// given up, or until ctx is done; then the deliveries left are abandoned
// (each counts as failed in its analysis' webhook field) and it returns how
// many webhooks had deliveries abandoned. Call it after Drain: every
// analysis has then sent its completed event, the aborted ones their Error
// result, so that those are among the deliveries waited for.
func (a *Analyses) WaitWebhooks(ctx context.Context) int {
	a.mu.Lock()
	hooks := make(map[*webhook.Stream]string, len(a.hooks))
	for h, id := range a.hooks {
		hooks[h] = id
	}
	a.mu.Unlock()

	abandoned := 0
	for h, id := range hooks {
		if h.Wait(ctx) != nil {
			abandoned++
			a.log.Warn("webhook deliveries abandoned: the shutdown grace period ran out",
				zap.String("analysis_id", id), zap.String("webhook", h.Status().URL))
		}
	}
	return abandoned
}

// IDEncoding is base32 in lower case without padding: URL-safe, and
// unambiguous when read aloud or typed.
var IDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns an unguessable id: 128 random bits, 26 characters. Knowing
// an id is what lets a caller read or terminate an analysis. An analysis'
// id is this after the epoch of the run that made it (ids.Epoch); a
// round's or a backtest's is this alone.
func NewID() string { return newID("") }

// newID is prefix, an analysis' epoch (ids.Epoch) or "", then NewID, in
// one allocation.
func newID(prefix string) string {
	var b [16]byte
	ids.Random(b[:])
	var buf [ids.EpochLength + ids.RandomLength]byte
	if len(prefix) > ids.EpochLength {
		return prefix + IDEncoding.EncodeToString(b[:])
	}
	id := buf[:len(prefix)+IDEncoding.EncodedLen(len(b))]
	copy(id, prefix)
	IDEncoding.Encode(id[len(prefix):], b[:])
	return string(id)
}

func MetricNames(p *analysis.Plan) []string {
	names := make([]string, len(p.Metrics))
	for i, m := range p.Metrics {
		names[i] = m.Name
	}
	return names
}
