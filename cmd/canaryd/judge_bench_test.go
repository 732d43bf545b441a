package main

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/judge/countjson"
)

// benchJudgeLooks is the length of the A/A stream of BenchmarkJudgeLooks;
// CANARYD_BENCH_JUDGE_LOOKS sets it (make bench-once, a few).
func benchJudgeLooks(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("CANARYD_BENCH_JUDGE_LOOKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("CANARYD_BENCH_JUDGE_LOOKS=%q: want a number of looks", v)
		}
	}
	return n
}

// aaStream is an A/A canary of n looks as NDJSON: each side serves 1,000
// events a look, each bad with probability 1% (Poisson counts), from a
// fixed seed. With varying, each side serves 900 to 1,100 events a look
// instead (uniformly), so that the exposure odds change at every look, as
// they do for totals counted from live traffic.
func aaStream(n int, varying bool) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	poisson := func(lambda float64) float64 {
		l, k, p := math.Exp(-lambda), 0.0, 1.0
		for {
			p *= rng.Float64()
			if p <= l {
				return k
			}
			k++
		}
	}
	var (
		buf       bytes.Buffer
		l         judge.CountLook
		scratch   []byte
		lineStart = []byte(`{"canary":{"bad":`)
	)
	for i := 0; i < n; i++ {
		l.Canary.Bad += poisson(10)
		l.Canary.Total += 1000
		l.Baseline.Bad += poisson(10)
		l.Baseline.Total += 1000
		if varying {
			l.Canary.Total += float64(rng.IntN(201) - 100)
			l.Baseline.Total += float64(rng.IntN(201) - 100)
		}
		scratch = append(scratch[:0], lineStart...)
		scratch = strconv.AppendFloat(scratch, l.Canary.Bad, 'f', -1, 64)
		scratch = append(scratch, `,"total":`...)
		scratch = strconv.AppendFloat(scratch, l.Canary.Total, 'f', -1, 64)
		scratch = append(scratch, `},"baseline":{"bad":`...)
		scratch = strconv.AppendFloat(scratch, l.Baseline.Bad, 'f', -1, 64)
		scratch = append(scratch, `,"total":`...)
		scratch = strconv.AppendFloat(scratch, l.Baseline.Total, 'f', -1, 64)
		scratch = append(scratch, "}}\n"...)
		buf.Write(scratch)
	}
	return buf.Bytes()
}

// BenchmarkJudgeLooks measures canaryd judge --all on a long A/A stream:
// the command's read-judge-write loop (judgeLooks) from memory to
// io.Discard, and its two parts apart: the count test alone
// (CountTest.Observe on the looks already read) and the command's own
// work (reading each line and writing one fixed result, every number
// formatted: AppendResult, not the command's Writer, which copies a
// number that repeats). Then the command and the count test again on a
// stream whose totals vary at every look. Each reports looks/s and
// ns/look.
func BenchmarkJudgeLooks(b *testing.B) {
	n := benchJudgeLooks(b)
	stream := aaStream(n, false)
	looks := parseLooks(b, stream)
	cfg := judge.CountConfig{}.WithDefaults()
	// report gives the time a look, and the process' CPU time a look
	// since cpu0 (cpuTime before the loop), which a busy machine
	// stretches less than the time.
	report := func(b *testing.B, cpu0 time.Duration) {
		looks := float64(b.N) * float64(n)
		perLook := float64(b.Elapsed().Nanoseconds()) / looks
		b.ReportMetric(perLook, "ns/look")
		b.ReportMetric(1e9/perLook, "looks/s")
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/looks, "cpu-ns/look")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("command", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		cpu0 := cpuTime()
		for b.Loop() {
			decision, err := judgeLooks(bytes.NewReader(stream), io.Discard, cfg, n, true)
			if err != nil || decision == "" {
				b.Fatalf("judgeLooks: %q, %v", decision, err)
			}
		}
		report(b, cpu0)
	})
	observe := func(b *testing.B, looks []judge.CountLook) {
		cpu0 := cpuTime()
		for b.Loop() {
			t, err := judge.NewCountTest(cfg)
			if err != nil {
				b.Fatal(err)
			}
			for _, l := range looks {
				if _, err := t.Observe(l); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, cpu0)
	}
	b.Run("observe", func(b *testing.B) { observe(b, looks) })
	b.Run("read-write", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		t, err := judge.NewCountTest(cfg)
		if err != nil {
			b.Fatal(err)
		}
		result, err := t.Observe(looks[0])
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime()
		for b.Loop() {
			var out []byte
			for line := range bytes.Lines(stream) {
				l, err := countjson.ParseLook(bytes.TrimSuffix(line, []byte("\n")))
				if err != nil || l.Canary.Total == 0 {
					b.Fatal(err)
				}
				out = append(countjson.AppendResult(out[:0], result), '\n')
				_, _ = io.Discard.Write(out)
			}
		}
		report(b, cpu0)
	})
	// The same with totals that vary: no look repeats the odds of the one
	// before, so the count test computes the grid's logarithms at every
	// look with bad events.
	stream, looks = nil, nil
	varying := aaStream(n, true)
	b.Run("command-varying-totals", func(b *testing.B) {
		b.SetBytes(int64(len(varying)))
		cpu0 := cpuTime()
		for b.Loop() {
			decision, err := judgeLooks(bytes.NewReader(varying), io.Discard, cfg, n, true)
			if err != nil || decision == "" {
				b.Fatalf("judgeLooks: %q, %v", decision, err)
			}
		}
		report(b, cpu0)
	})
	looks = parseLooks(b, varying)
	varying = nil
	b.Run("observe-varying-totals", func(b *testing.B) { observe(b, looks) })
}

// cpuTime is the process' user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parseLooks reads the looks of an NDJSON stream.
func parseLooks(b *testing.B, stream []byte) []judge.CountLook {
	var looks []judge.CountLook
	for line := range bytes.Lines(stream) {
		l, err := countjson.ParseLook(line)
		if err != nil {
			b.Fatal(err)
		}
		looks = append(looks, l)
	}
	return looks
}
