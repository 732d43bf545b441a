package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// syncedBuffer is a bytes.Buffer that the log's timer may write to while
// a test reads it, counting the writes it was given.
type syncedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncedBuffer) read() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String(), s.writes
}

// TestLogLinesAreHeldUntilSync checks that info lines are held, not
// written one by one, and that Sync (serve's exit) writes all of them in
// one write, in order.
func TestLogLinesAreHeldUntilSync(t *testing.T) {
	var out syncedBuffer
	log := newBufferedLogger(zapcore.InfoLevel, &out, time.Hour, logBufferSize)
	for i := range 3 {
		log.Info("request", zap.Int("n", i))
	}
	if got, _ := out.read(); got != "" {
		t.Fatalf("info lines were written before the delay or a Sync:\n%s", got)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	got, writes := out.read()
	if writes != 1 || strings.Count(got, `"msg":"request"`) != 3 ||
		!(strings.Index(got, `"n":0`) < strings.Index(got, `"n":1`) && strings.Index(got, `"n":1`) < strings.Index(got, `"n":2`)) {
		t.Errorf("after Sync: %d writes of\n%s\nwant the three lines in order, in one write", writes, got)
	}
}

// TestLogWarningsAreWrittenAtOnce checks that a warning or an error is
// written when it is logged, after the lines held before it.
func TestLogWarningsAreWrittenAtOnce(t *testing.T) {
	for _, level := range []zapcore.Level{zapcore.WarnLevel, zapcore.ErrorLevel} {
		var out syncedBuffer
		log := newBufferedLogger(zapcore.InfoLevel, &out, time.Hour, logBufferSize)
		log.Info("before")
		log.Named("http").With(zap.String("k", "v")).Check(level, "bad").Write()
		got, _ := out.read()
		if before, bad := strings.Index(got, `"msg":"before"`), strings.Index(got, `"msg":"bad"`); before < 0 || bad < before {
			t.Errorf("%s: the log holds\n%s\nwant the info line, then the %s line, written at once", level, got, level)
		}
	}
}

// TestLogLinesAreWrittenWithinTheDelay checks that a line held is written
// once the delay has passed, with no Sync.
func TestLogLinesAreWrittenWithinTheDelay(t *testing.T) {
	var out syncedBuffer
	log := newBufferedLogger(zapcore.InfoLevel, &out, time.Millisecond, logBufferSize)
	log.Info("held")
	deadline := time.Now().Add(time.Minute)
	for {
		if got, _ := out.read(); strings.Contains(got, `"msg":"held"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the line was not written a minute after a delay of 1ms")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLogBufferIsBounded checks that the lines held never exceed the
// bound: a line that would pass it writes those held first, and a line
// longer than the bound is written as it is.
func TestLogBufferIsBounded(t *testing.T) {
	var out syncedBuffer
	const max = 200
	b := newLineBuffer(&out, time.Hour, max)
	line := []byte(strings.Repeat("x", 79) + "\n")
	for i := range 10 {
		if _, err := b.Write(line); err != nil {
			t.Fatal(err)
		}
		got, _ := out.read()
		if held := (i+1)*len(line) - len(got); held > max || held < 0 {
			t.Fatalf("after %d lines, %d bytes held, over the bound of %d", i+1, held, max)
		}
	}
	_ = b.Sync()
	long := []byte(strings.Repeat("y", 3*max) + "\n")
	if _, err := b.Write(long); err != nil {
		t.Fatal(err)
	}
	if got, _ := out.read(); len(got) != 10*len(line)+len(long) || !strings.HasSuffix(got, string(long)) {
		t.Errorf("a line over the bound was held or cut: %d bytes written, want %d", len(got), 10*len(line)+len(long))
	}
}
