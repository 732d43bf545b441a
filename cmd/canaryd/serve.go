package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/templates"
	"github.com/canaryd/canaryd/internal/webhook"
)

// exitServeFailed is serve's exit code when it cannot run: the port is
// busy, or the server failed. Bad configuration is exitUsage.
const exitServeFailed = 1

// httpShutdownTimeout bounds http.Server.Shutdown once the analyses have
// ended: long enough for waiters and streams to write their final result.
const httpShutdownTimeout = 5 * time.Second

// webhookShutdownFloor is the least time webhook deliveries get after the
// analyses have ended, even when the grace period is spent: an analysis
// aborted at the end of the grace has its Error result still to deliver,
// and it must get an attempt. It runs alongside the HTTP server's shutdown,
// so it adds nothing to how long a stop takes.
const webhookShutdownFloor = httpShutdownTimeout

// serveCommand runs the HTTP service until ctx is cancelled (SIGINT or
// SIGTERM), then drains it: see serve.
func (e *environment) serveCommand(args []string) int {
	cfg, err := config.Load(args, e.getenv, e.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		e.printf(e.stderr, "canaryd serve: %v\n", err)
		return exitUsage
	}
	log := newLogger(cfg.LogLevel, e.stderr)
	// Sync writes the lines held (logbuffer.go); it fails harmlessly on
	// terminals and pipes, and there is nowhere to report it anyway.
	defer func() { _ = log.Sync() }()

	err = serve(e.ctx, cfg, log)
	// The lines held go before anything printed to stderr below.
	_ = log.Sync()
	var cerr *configError
	switch {
	case errors.As(err, &cerr):
		e.printf(e.stderr, "canaryd serve: invalid configuration:\n  %v\n", cerr.err)
		return exitUsage
	case err != nil:
		log.Error("canaryd serve failed", zap.Error(err))
		return exitServeFailed
	}
	return 0
}

// configError is a problem with the configuration found while wiring it,
// after config.Load (which checks what it can without building anything).
type configError struct{ err error }

func (c *configError) Error() string { return c.err.Error() }

func newLogger(level zapcore.Level, w io.Writer) *zap.Logger {
	return newBufferedLogger(level, w, logFlushDelay, logBufferSize)
}

// newBufferedLogger is newLogger with lines held up to delay and max bytes.
func newBufferedLogger(level zapcore.Level, w io.Writer, delay time.Duration, max int) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.StringDurationEncoder
	// Lines are held for a moment and written together; warnings and
	// errors at once (logbuffer.go). log.Sync writes what is held.
	lines := newLineBuffer(w, delay, max)
	core := flushAbove{Core: zapcore.NewCore(zapcore.NewJSONEncoder(enc), lines, level), level: zapcore.WarnLevel}
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(lines))))
}

// serve wires the service from cfg, serves until ctx is done, and drains:
//
//  1. readiness goes 503 and new analyses and rounds are refused with a 503
//     problem (Analyses.Drain sets this first);
//  2. running analyses get cfg.ShutdownGrace to finish, while the listener
//     keeps serving, so waiters, streams and pollers still get answers;
//  3. those still running then end with phase Error and
//     analyses.ShutdownMessage, which every waiter, stream and webhook
//     receives;
//  4. webhook deliveries still pending (those completed events among them)
//     get what is left of the grace, and at least webhookShutdownFloor,
//     and are then abandoned; meanwhile
//  5. the HTTP server shuts down with a fresh, bounded context, letting
//     the waiters' and streams' responses be written.
//
// It returns nil after a clean drain.
func serve(ctx context.Context, cfg *config.Config, log *zap.Logger) error {
	reg, err := newRegistry()
	if err != nil {
		return err
	}

	provider, err := prometheus.New(prometheus.Options{
		Datasources: cfg.ProviderDatasources(),
		TokenURLs:   cfg.PrometheusOAuth2TokenURLs,
		Registerer:  reg,
		// A metric's longer timeout is lowered to it, as Prometheus
		// lowers a query's to its --query.timeout.
		MaxTimeout: cfg.MaxQueryTimeout,
		// A result with more values is an Error measurement, found while
		// it is decoded.
		MaxResultValues: cfg.MaxResultValues,
	})
	if err != nil {
		return &configError{err}
	}
	defer provider.CloseIdleConnections()
	providers, checkProviders, closeProviders, err := serveProviders(cfg, provider.Source)
	if err != nil {
		return err
	}
	defer closeProviders()

	webhooks, err := newWebhooks(cfg, log, reg)
	if err != nil {
		return err
	}

	analysesStore, err := openStore(ctx, cfg, log, reg)
	if err != nil {
		return err
	}
	defer analysesStore.Close()

	// Goroutines started below end when serve returns.
	ctx, cancel := context.WithCancel(ctx)
	var background sync.WaitGroup
	defer background.Wait()
	defer cancel()

	store, err := loadTemplates(ctx, cfg, log, reg, checkProviders, &background)
	if err != nil {
		return err
	}
	planner := newPlanner(cfg, providers, store)

	svc, err := analyses.NewAnalyses(analysesOptions(cfg, log, reg, webhooks, analysesStore, planner))
	if err != nil {
		return err
	}
	// After the drain: the leases are renewed until every run is over.
	defer svc.Close()

	// Re-read every few seconds and on SIGHUP (tokens.go).
	tokens, err := watchTokenFile(ctx, cfg, log, authTokenPollInterval, &background)
	if err != nil {
		return &configError{err}
	}
	handler, err := server.New(server.Options{
		Logger:          log,
		Registerer:      reg,
		Gatherer:        reg,
		Analyses:        svc,
		Planner:         planner,
		Tokens:          tokens,
		Limits:          serverLimits(cfg),
		Templates:       store,
		EvaluateTimeout: cfg.EvaluateTimeout,
	})
	if err != nil {
		return &configError{err}
	}

	srv, ln, err := listen(cfg, log, handler)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	// Ends when srv.Shutdown or srv.Close is called below, or when the
	// listener fails.
	go func() { served <- srv.Serve(deadlineListener{ln}) }()

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}

	return drain(cfg, log, svc, srv, served)
}

// newWebhooks is the sender of the analyses' webhooks, as cfg sets it.
func newWebhooks(cfg *config.Config, log *zap.Logger, reg promclient.Registerer) (*webhook.Sender, error) {
	var webhookKey []byte // nil: unsigned (an empty key would sign)
	if k := cfg.WebhookSecret.Reveal(); k != "" {
		webhookKey = []byte(k)
	}
	webhooks, err := webhook.New(webhook.Options{
		Allow:          cfg.WebhookAllow,
		Secret:         webhookKey,
		MaxElapsed:     cfg.WebhookMaxElapsed,
		AttemptTimeout: cfg.WebhookTimeout,
		MaxBacklog:     cfg.MaxWebhookBacklog,
		Logger:         log,
		Registerer:     reg,
	})
	if err != nil {
		return nil, &configError{fmt.Errorf("--webhook-allow: %w", err)}
	}
	return webhooks, nil
}

// listen listens on cfg.Listen, before anything is served, and returns the
// HTTP server of handler to serve there.
func listen(cfg *config.Config, log *zap.Logger, handler http.Handler) (*http.Server, net.Listener, error) {
	// Listening before serving makes a busy port fail here, at once, and
	// gives the bound address of :0 to the log line tests read.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, nil, err
	}
	logConfig(log, cfg, ln.Addr())
	// Written at once, for whoever waits for the address.
	_ = log.Sync()

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		// No ReadTimeout or WriteTimeout: waits and streams last as long
		// as their analysis. Bodies get a read deadline of their own. The
		// connections' read deadlines are armed lazily (deadlines.go).
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    zap.NewStdLog(log.Named("http")),
	}
	return srv, ln, nil
}

// newPlanner is the one planner of serve: it compiles every spec, the
// requests' and those of the analyses resumed from the store, with the
// service's limits and the templates it serves.
func newPlanner(cfg *config.Config, providers compile.Providers, templates server.TemplateStore) *compile.Planner {
	specLimits := serverLimits(cfg).SpecLimits
	return compile.NewPlanner(compile.PlannerOptions{Providers: providers,
		Run:       []compile.Option{compile.WithLimits(specLimits(cfg.MaxAnalysisDuration))},
		Backtest:  []compile.Option{compile.WithLimits(specLimits(0))},
		Templates: server.TemplateLookup(templates)})
}

// newRegistry is serve's metrics registry: the Go runtime's, the
// process', and canaryd's build information.
func newRegistry() (*promclient.Registry, error) {
	reg := promclient.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	if err := server.RegisterBuildInfo(reg, version, buildCommit()); err != nil {
		return nil, err
	}
	return reg, nil
}

// analysesOptions are the analyses' options of cfg: st keeps them (nil
// for memory:), planner compiles those resumed from it.
func analysesOptions(cfg *config.Config, log *zap.Logger, reg promclient.Registerer, webhooks *webhook.Sender, st store.Store,
	planner *compile.Planner) analyses.AnalysesOptions {
	return analyses.AnalysesOptions{
		Replica:               replicaName(cfg, log, os.Hostname),
		Logger:                log,
		Registerer:            reg,
		MaxRunning:            cfg.MaxAnalyses,
		Scheduler:             analysis.NewScheduler(clock.Real{}, cfg.Workers),
		MaxFinished:           cfg.MaxFinished,
		Retention:             cfg.Retention,
		ErrorRetryInterval:    cfg.ErrorRetry,
		MaxDuration:           cfg.MaxAnalysisDuration,
		Webhooks:              webhooks,
		MaxBacktests:          cfg.MaxBacktests,
		MaxStreams:            cfg.MaxStreams,
		MaxRounds:             cfg.MaxRounds,
		MaxRetainedBytes:      cfg.MaxRetainedBytes,
		MinRetention:          cfg.MinRetention,
		Store:                 st,
		Planner:               planner,
		LeaseTTL:              cfg.StoreLease,
		PrometheusExternalURL: cfg.PrometheusExternalURL,
		MaxReportRenders:      cfg.MaxReportRenders,
		ReportCacheBytes:      cfg.ReportCacheBytes,
		ReportQueryRate:       float64(cfg.ReportQueryRate),
	}
}

// drain stops serve's service once its context is done: the analyses are
// drained within the grace (analyses.Analyses.Drain), their webhooks get what
// is left of it (at least webhookShutdownFloor) while the HTTP server shuts
// down, and drain returns once srv has stopped serving (served).
func drain(cfg *config.Config, log *zap.Logger, svc *analyses.Analyses, srv *http.Server, served <-chan error) error {
	log.Info("draining: readiness off, no new analyses", zap.Duration("grace", cfg.ShutdownGrace))
	graceEnd := time.Now().Add(cfg.ShutdownGrace)
	grace, cancelGrace := context.WithDeadline(context.Background(), graceEnd)
	aborted := svc.Drain(grace)
	cancelGrace()
	if aborted > 0 {
		log.Warn("analyses ended with phase Error: the shutdown grace period ran out", zap.Int("aborted", aborted))
	}

	// Every analysis has now sent its completed event to its webhook.
	hooksEnd := graceEnd
	if floor := time.Now().Add(webhookShutdownFloor); floor.After(hooksEnd) {
		hooksEnd = floor
	}
	hooksCtx, cancelHooks := context.WithDeadline(context.Background(), hooksEnd)
	defer cancelHooks()
	hooksDone := make(chan int, 1)
	// Ends when every pending delivery is made or given up, at the latest
	// at hooksEnd, when they are abandoned.
	go func() { hooksDone <- svc.WaitWebhooks(hooksCtx) }()

	shutdownCtx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("HTTP connections still open at the end of shutdown; closing them", zap.Error(err))
		_ = srv.Close()
	}
	if abandoned := <-hooksDone; abandoned > 0 {
		log.Warn("webhooks with deliveries abandoned at shutdown", zap.Int("webhooks", abandoned))
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("stopped")
	return nil
}

// loadTemplates loads --templates and keeps it current: polled every
// --templates-poll-interval (unless 0) and reloaded at once on SIGHUP,
// until ctx ends. Without --templates it returns nil, and SIGHUP is only
// logged: its default action would kill the process, a surprise for an
// operator who sends it to "reload". Templates that do not load are not an
// error (they are logged, counted and listed); a directory that cannot be
// read is. providers are those a template is checked with
// (serveProviders' check): they read no credentials, which each analysis
// of a template reads.
func loadTemplates(ctx context.Context, cfg *config.Config, log *zap.Logger, reg promclient.Registerer, providers compile.Providers, background *sync.WaitGroup) (server.TemplateStore, error) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var store *templates.Store
	if cfg.Templates != "" {
		var err error
		store, err = templates.Load(templates.Options{
			Dir:       cfg.Templates,
			Providers: providers,
			// The server's own check, so that a template naming a
			// Prometheus outside --prometheus-url is flagged at load.
			Check: func(doc *spec.Document) []api.FieldError {
				_, errs := compile.Compile(doc, nil, providers, compile.WithLimits(serverLimits(cfg).SpecLimits(cfg.MaxAnalysisDuration)))
				return errs
			},
			Logger:       log,
			Registerer:   reg,
			PollInterval: cfg.TemplatesPollInterval,
		})
		if err != nil {
			signal.Stop(hup)
			return nil, &configError{fmt.Errorf("--templates: %w", err)}
		}
		if cfg.TemplatesPollInterval > 0 {
			background.Add(1)
			// Ends when ctx does: on shutdown, or when serve fails.
			go func() {
				defer background.Done()
				store.Run(ctx)
			}()
		}
	}
	background.Add(1)
	// Ends when ctx does: on shutdown, or when serve fails.
	go func() {
		defer background.Done()
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if store == nil {
					log.Info("SIGHUP received; there is nothing to reload without --templates")
					continue
				}
				log.Info("SIGHUP received; reloading the templates", zap.String("dir", cfg.Templates))
				_ = store.Reload() // Reload logs its own failures
			}
		}
	}()
	if store == nil {
		return nil, nil
	}
	return store, nil
}

// logConfig logs what the service runs with; never a secret, nor a URL's
// userinfo or a header value (X-Scope-OrgID is harmless, but another
// header may be a credential).
func logConfig(log *zap.Logger, cfg *config.Config, addr net.Addr) {
	sources := make([]string, len(cfg.Datasources))
	for i, d := range cfg.Datasources {
		sources[i] = redact.URLString(d.URL)
		if d.Name != "" {
			sources[i] = d.Name + "=" + sources[i]
		}
	}
	fields := []zap.Field{
		zap.String("address", addr.String()),
		zap.String("version", version),
		zap.String("config_file", cfg.File),
		zap.Strings("prometheus", sources),
		zap.Bool("auth", len(cfg.AuthTokens) > 0),
		zap.Bool("webhook_signed", cfg.WebhookSecret.Reveal() != ""),
	}
	// Every other setting, from config's table, by its flag's name.
	for _, v := range cfg.Values() {
		fields = append(fields, zap.Any(strings.ReplaceAll(v.Name, "-", "_"), v.Value))
	}
	log.Info("listening", fields...)
}
