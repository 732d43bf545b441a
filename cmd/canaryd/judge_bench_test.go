package main

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

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
// fixed seed.
func aaStream(n int) []byte {
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
// work (reading each line and writing its result, on one fixed result).
// Each reports looks/s and ns/look.
func BenchmarkJudgeLooks(b *testing.B) {
	n := benchJudgeLooks(b)
	stream := aaStream(n)
	var looks []judge.CountLook
	for line := range bytes.Lines(stream) {
		l, err := countjson.ParseLook(line)
		if err != nil {
			b.Fatal(err)
		}
		looks = append(looks, l)
	}
	cfg := judge.CountConfig{}.WithDefaults()
	report := func(b *testing.B) {
		perLook := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(n)
		b.ReportMetric(perLook, "ns/look")
		b.ReportMetric(1e9/perLook, "looks/s")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("command", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			decision, err := judgeLooks(bytes.NewReader(stream), io.Discard, cfg, n, true)
			if err != nil || decision == "" {
				b.Fatalf("judgeLooks: %q, %v", decision, err)
			}
		}
		report(b)
	})
	b.Run("observe", func(b *testing.B) {
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
		report(b)
	})
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
		report(b)
	})
}
