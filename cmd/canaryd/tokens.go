package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/server"
)

// authTokenPollInterval is how often --auth-token-file is re-read: a
// rotated Secret reaches a pod's volume within a minute or two, and a few
// seconds more do not matter.
const authTokenPollInterval = 5 * time.Second

// tokenFile keeps the server's bearer tokens in step with --auth-token-file.
// The file is re-read every poll interval and on SIGHUP, and its tokens
// replace the set in force when they differ from the last ones read. A file
// that cannot be read, or that holds no token, changes nothing: the last
// good set stays in force and the problem is logged (once, until it
// changes). So does a file with a token shorter than config.MinTokenLength,
// which is refused at start. Tokens never appear in a log line, only their
// number, or the line of one that is refused.
type tokenFile struct {
	path   string
	tokens *server.Tokens
	log    *zap.Logger
	// seen is the digest of the tokens last read, good or not, and
	// problem the last problem logged: each is logged once.
	seen    [sha256.Size]byte
	problem string
}

// watchTokenFile returns the tokens of cfg.AuthTokens, kept in step with
// cfg.AuthTokenFile until ctx ends. Without a file it returns an empty
// (open) set and watches nothing.
func watchTokenFile(ctx context.Context, cfg *config.Config, log *zap.Logger, interval time.Duration, background *sync.WaitGroup) (*server.Tokens, error) {
	tokens, err := server.NewTokens(reveal(cfg.AuthTokens))
	if err != nil || cfg.AuthTokenFile == "" {
		return tokens, err
	}
	f := &tokenFile{path: cfg.AuthTokenFile, tokens: tokens, log: log, seen: digestTokens(reveal(cfg.AuthTokens))}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ticker := time.NewTicker(interval)
	background.Add(1)
	// Ends when ctx does: on shutdown, or when serve fails.
	go func() {
		defer background.Done()
		defer ticker.Stop()
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				f.reload(false)
			case <-hup:
				f.reload(true)
			}
		}
	}()
	return tokens, nil
}

// reload re-reads the file and replaces the tokens when they changed.
// asked is set on SIGHUP, when the operator expects a word either way.
func (f *tokenFile) reload(asked bool) {
	read, err := config.ReadTokens(f.path)
	switch {
	case errors.Is(err, config.ErrShortToken):
		// Named by file and line, never by content.
		f.warn("--auth-token-file holds a token that is too short; the tokens read before stay in force", err.Error())
		return
	case err != nil:
		// config's errors name the file and the reason, never content.
		f.warn("--auth-token-file cannot be read; the tokens read before stay in force", err.Error())
		return
	}
	values := reveal(read)
	sum := digestTokens(values)
	if sum == f.seen && f.problem == "" {
		if asked {
			f.log.Info("SIGHUP received; --auth-token-file is unchanged", zap.String("file", f.path), zap.Int("tokens", f.tokens.Len()))
		}
		return
	}
	if len(values) == 0 {
		f.seen = sum
		f.warn("--auth-token-file holds no token; the tokens read before stay in force (an empty file would not open the API)", "no tokens")
		return
	}
	if err := f.tokens.Replace(values); err != nil {
		f.warn("--auth-token-file was not applied; the tokens read before stay in force", err.Error())
		return
	}
	f.seen, f.problem = sum, ""
	f.log.Info("auth tokens reloaded", zap.String("file", f.path), zap.Int("tokens", len(values)), zap.Bool("sighup", asked))
}

// warn logs a problem with the file once, until another one replaces it or
// the file is read again.
func (f *tokenFile) warn(msg, problem string) {
	if problem == f.problem {
		return
	}
	f.problem = problem
	f.log.Warn(msg, zap.String("file", f.path), zap.String("problem", problem))
}

func reveal(secrets []config.Secret) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		out[i] = s.Reveal()
	}
	return out
}

// digestTokens is a digest of a set of tokens, to tell whether it changed
// without keeping the tokens.
func digestTokens(tokens []string) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join(tokens, "\n")))
}
