package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
)

// exitServeFailed is serve's exit code when it cannot run: the port is
// busy, or the server failed. Bad configuration is exitUsage.
const exitServeFailed = 1

// httpShutdownTimeout bounds http.Server.Shutdown once the analyses have
// ended: long enough for waiters and streams to write their final result.
const httpShutdownTimeout = 5 * time.Second

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
	// Sync fails harmlessly on terminals and pipes; there is nowhere to
	// report it anyway.
	defer func() { _ = log.Sync() }()

	err = serve(e.ctx, cfg, log)
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
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.StringDurationEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), level)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w))))
}

// serve wires the service from cfg, serves until ctx is done, and drains:
//
//  1. readiness goes 503 and new analyses and rounds are refused with a 503
//     problem (Analyses.Drain sets this first);
//  2. running analyses get cfg.ShutdownGrace to finish, while the listener
//     keeps serving, so waiters, streams and pollers still get answers;
//  3. those still running then end with phase Error and
//     server.ShutdownMessage, which every waiter and stream receives;
//  4. the HTTP server shuts down with a fresh, bounded context, letting
//     those responses be written.
//
// It returns nil after a clean drain.
func serve(ctx context.Context, cfg *config.Config, log *zap.Logger) error {
	reg := promclient.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return err
	}

	provider, err := prometheus.New(prometheus.Options{
		Datasources: datasources(cfg.Datasources),
		TokenURLs:   cfg.PrometheusOAuth2TokenURLs,
		Registerer:  reg,
	})
	if err != nil {
		return &configError{err}
	}
	defer provider.CloseIdleConnections()

	analyses, err := server.NewAnalyses(server.AnalysesOptions{
		Logger:             log,
		Registerer:         reg,
		MaxRunning:         cfg.MaxAnalyses,
		MaxFinished:        cfg.MaxFinished,
		Retention:          cfg.Retention,
		ErrorRetryInterval: cfg.ErrorRetry,
		MaxDuration:        cfg.MaxAnalysisDuration,
	})
	if err != nil {
		return err
	}
	tokens := make([]string, len(cfg.AuthTokens))
	for i, t := range cfg.AuthTokens {
		tokens[i] = t.Reveal()
	}
	handler, err := server.New(server.Options{
		Logger:       log,
		Registerer:   reg,
		Gatherer:     reg,
		Analyses:     analyses,
		Sources:      provider.Source,
		AuthTokens:   tokens,
		WebhookAllow: cfg.WebhookAllow,
	})
	if err != nil {
		return &configError{err}
	}

	// Listening before serving makes a busy port fail here, at once, and
	// gives the bound address of :0 to the log line tests read.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	logConfig(log, cfg, ln.Addr())

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout or WriteTimeout: waits and streams last as long
		// as their analysis. Bodies get a read deadline of their own.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    zap.NewStdLog(log.Named("http")),
	}
	served := make(chan error, 1)
	// Ends when srv.Shutdown or srv.Close is called below, or when the
	// listener fails.
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}

	log.Info("draining: readiness off, no new analyses", zap.Duration("grace", cfg.ShutdownGrace))
	grace, cancelGrace := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	aborted := analyses.Drain(grace)
	cancelGrace()
	if aborted > 0 {
		log.Warn("analyses ended with phase Error: the shutdown grace period ran out", zap.Int("aborted", aborted))
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("HTTP connections still open at the end of shutdown; closing them", zap.Error(err))
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("stopped")
	return nil
}

func datasources(in []config.Datasource) []prometheus.Datasource {
	out := make([]prometheus.Datasource, len(in))
	for i, d := range in {
		out[i] = prometheus.Datasource{
			Name:            d.Name,
			URL:             d.URL,
			Headers:         d.Headers,
			BearerTokenFile: d.BearerTokenFile,
			TLS: prometheus.TLSConfig{
				CAFile:             d.TLS.CAFile,
				CertFile:           d.TLS.CertFile,
				KeyFile:            d.TLS.KeyFile,
				InsecureSkipVerify: d.TLS.InsecureSkipVerify,
				ServerName:         d.TLS.ServerName,
			},
		}
		if b := d.BasicAuth; b != nil {
			out[i].BasicAuth = &prometheus.BasicAuth{Username: b.Username, Password: b.Password.Reveal(), PasswordFile: b.PasswordFile}
		}
	}
	return out
}

// logConfig logs what the service runs with; never a secret, nor a URL's
// userinfo or a header value (X-Scope-OrgID is harmless, but another
// header may be a credential).
func logConfig(log *zap.Logger, cfg *config.Config, addr net.Addr) {
	sources := make([]string, len(cfg.Datasources))
	for i, d := range cfg.Datasources {
		sources[i] = redactURL(d.URL)
		if d.Name != "" {
			sources[i] = d.Name + "=" + sources[i]
		}
	}
	log.Info("listening",
		zap.String("address", addr.String()),
		zap.String("version", version),
		zap.String("config_file", cfg.File),
		zap.Strings("prometheus", sources),
		zap.Int("max_analyses", cfg.MaxAnalyses),
		zap.Int("max_finished", cfg.MaxFinished),
		zap.Duration("retention", cfg.Retention),
		zap.Duration("shutdown_grace", cfg.ShutdownGrace),
		zap.Duration("error_retry", cfg.ErrorRetry),
		zap.Duration("max_analysis_duration", cfg.MaxAnalysisDuration),
		zap.Bool("auth", len(cfg.AuthTokens) > 0),
		zap.Strings("webhook_allow", cfg.WebhookAllow),
	)
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
