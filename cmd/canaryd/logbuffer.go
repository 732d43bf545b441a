package main

import (
	"io"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
)

// Serve's log lines are held in memory for a moment and written together,
// so that a busy canaryd does not pay a write to standard error (and
// whatever reads it a wake-up) for every request: a round of /v1/evaluate
// would otherwise cost one system call more than its answer and its query.
//
// What is promised, and tested (logbuffer_test.go):
//   - a line is written within logFlushDelay of being logged;
//   - a line at warn level or above is written at once, with every line
//     logged before it;
//   - every line is written before serve exits, whatever the exit: a
//     clean stop on SIGTERM or SIGINT, an error, or a bad configuration;
//   - at most logBufferSize bytes are held: a line that would take them
//     past it writes them out first.
//
// A process killed outright (SIGKILL, the out-of-memory killer) or one
// that crashes loses the lines of its last logFlushDelay at most, none of
// them a warning or an error.

// logFlushDelay is how long a line may wait before it is written.
const logFlushDelay = 100 * time.Millisecond

// logBufferSize bounds the bytes of lines held.
const logBufferSize = 64 << 10

// lineBuffer is a zapcore.WriteSyncer that holds what is written to it
// and writes it to w within delay, on Sync, or once it holds max bytes.
// Its timer is armed by the first line written to an empty buffer, so an
// idle canaryd is woken by nothing.
type lineBuffer struct {
	w     io.Writer
	delay time.Duration
	max   int

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while buf holds lines
	err   error       // the last write's, reported by the next Sync
}

func newLineBuffer(w io.Writer, delay time.Duration, max int) *lineBuffer {
	b := &lineBuffer{w: w, delay: delay, max: max}
	b.timer = time.AfterFunc(time.Hour, func() { _ = b.Sync() })
	b.timer.Stop()
	return b
}

// Write holds p, a whole line as zap writes it.
func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > b.max {
		b.flushLocked()
		if len(p) > b.max {
			_, err := b.w.Write(p)
			return len(p), err
		}
	}
	if len(b.buf) == 0 {
		b.timer.Reset(b.delay)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Sync writes what is held.
func (b *lineBuffer) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	err := b.err
	b.err = nil
	return err
}

func (b *lineBuffer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	b.timer.Stop()
	if _, err := b.w.Write(b.buf); err != nil {
		b.err = err
	}
	if cap(b.buf) > b.max {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
}

// flushAbove is a zapcore.Core that syncs its core after every entry at
// level or above: a warning or an error is written at once.
type flushAbove struct {
	zapcore.Core
	level zapcore.Level
}

func (c flushAbove) With(fields []zapcore.Field) zapcore.Core {
	return flushAbove{Core: c.Core.With(fields), level: c.level}
}

func (c flushAbove) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c flushAbove) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	err := c.Core.Write(ent, fields)
	if ent.Level >= c.level {
		if serr := c.Core.Sync(); err == nil {
			err = serr
		}
	}
	return err
}
