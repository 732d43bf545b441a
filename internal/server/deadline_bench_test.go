package server

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRoundContext is a round's context as /v1/evaluate makes and
// uses it: made from its request's (a cancelCtx, as net/http's), watched
// for its end (analyses.Analyses.Evaluate's watch), a child made for its
// query (as net/http's Transport does), and all of it ended.
func BenchmarkRoundContext(b *testing.B) {
	var d roundDeadlines
	b.ReportAllocs()
	for b.Loop() {
		req, cancelReq := context.WithCancel(context.Background())
		ctx, cancel := d.withTimeout(req, 8*time.Second)
		ctx.(*roundContext).AfterDone(func() {})
		child, cancelChild := context.WithCancelCause(ctx)
		_ = child.Done()
		cancelChild(nil)
		ctx.(*roundContext).StopAfterDone()
		cancel()
		cancelReq()
	}
}
