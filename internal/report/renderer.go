package report

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/limits"
)

// MaxShading is how many reports of one process may evaluate their
// metrics' conditions for the shaded bands at once. Shading is CPU and
// nothing else: one at a time takes at most one processor, whatever the
// number of reports asked for, and never a place in the pool of evaluators
// that measurements are judged on (condition.Conditions.JudgeContext). A
// report that finds no room within RegionBudget is drawn without the bands
// it could not find, and says so.
const MaxShading = 1

// SeriesFreshness is how long the series of a running analysis' metric,
// once fetched, are drawn again rather than asked for again: reloading the
// report of a running analysis sends its range queries at most this often.
// A finished analysis' series, its window closed, are kept (Renderer's
// cache) until evicted.
const SeriesFreshness = 5 * time.Second

// QueryBurst is how many range queries the reports of one process may send
// at once beyond their rate (RendererOptions.QueryRate): the queries of one
// report of the most metrics an analysis may have.
const QueryBurst = limits.MaxMetrics

// The outcomes of a report's range query, as RendererOptions.Counted is
// told them.
const (
	// QueryAnswered is a range query sent and answered.
	QueryAnswered = "answered"
	// QueryFailed is a range query sent that failed.
	QueryFailed = "failed"
	// QueryCached is a metric's series drawn from the cache: no query sent.
	QueryCached = "cached"
	// QueryLimited is a range query not sent: the reports' rate was spent.
	QueryLimited = "rate_limited"
	// QueryNotRun is a range query not sent: the report's SeriesBudget
	// was spent, or MaxFetching reports were running theirs.
	QueryNotRun = "not_run"
)

// QueryOutcomes are every outcome RendererOptions.Counted is told.
var QueryOutcomes = []string{QueryAnswered, QueryFailed, QueryCached, QueryLimited, QueryNotRun}

// RendererOptions configure a Renderer. A zero field takes its default.
type RendererOptions struct {
	// CacheBytes bounds, in bytes as estimated, the shaded bands and the
	// series kept for reports drawn again (limits.ReportCacheBytes).
	CacheBytes int64
	// QueryRate is how many range queries a second the reports may send,
	// all together, with bursts of QueryBurst (limits.ReportQueryRate).
	QueryRate float64
	// Counted, when set, is told the outcome of each metric's range query
	// (QueryAnswered and the others), for a metric.
	Counted func(outcome string)
}

// Renderer is what the reports drawn by one process share, so that however
// many are asked for, and however often, they cost a bounded share of the
// process and of Prometheus: a pool of MaxShading places to evaluate
// conditions in for the shaded bands; MaxFetching places to run range
// queries in and a rate for them (RendererOptions.QueryRate); and a cache,
// bounded in bytes, of the bands found and the series fetched for reports
// with a Report.Key. A Report without a Renderer is drawn with one of its
// own: its bounds are the report's alone.
type Renderer struct {
	shaders  chan struct{}
	fetching chan struct{}
	queries  *rate.Limiter
	counted  func(string)
	cache    *byteCache
	// shadeWait bounds the wait for a place to shade in; now is the clock
	// of SeriesFreshness. Tests set them.
	shadeWait time.Duration
	now       func() time.Time
}

// NewRenderer returns a Renderer with opts' bounds.
func NewRenderer(opts RendererOptions) *Renderer {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = limits.ReportCacheBytes
	}
	if opts.QueryRate <= 0 {
		opts.QueryRate = limits.ReportQueryRate
	}
	if opts.Counted == nil {
		opts.Counted = func(string) {}
	}
	return &Renderer{
		shaders:   make(chan struct{}, MaxShading),
		fetching:  make(chan struct{}, MaxFetching),
		queries:   rate.NewLimiter(rate.Limit(opts.QueryRate), QueryBurst),
		counted:   opts.Counted,
		cache:     newByteCache(opts.CacheBytes),
		shadeWait: RegionBudget,
		now:       time.Now,
	}
}

// renderer is r's Renderer, or one of its own.
func (r *Report) renderer() *Renderer {
	if r.Renderer == nil {
		r.Renderer = NewRenderer(RendererOptions{})
	}
	return r.Renderer
}

// band is one shaded band, in values.
type band struct {
	from, to float64
	outcome  string
}

// shaded is what evaluating a metric's conditions across its chart found:
// the range widened to show the nearest change of outcome, and the bands.
type shaded struct {
	lo, hi float64
	bands  []band
	// tooLong is set when the evaluation did not finish within a whole
	// RegionBudget: drawn again, the chart would not be shaded either.
	tooLong bool
}

func (s *shaded) size() int64 { return 64 + int64(len(s.bands))*48 }

// shading is the shading of one report being drawn: one place of the
// Renderer's pool, taken when the first band not cached is to be found
// and held until done, and RegionBudget from then for every band to find.
type shading struct {
	rd  *Renderer
	key string
	// taken is set once a place was asked for; ctx is nil when none was
	// found.
	taken   bool
	ctx     context.Context
	cancel  context.CancelFunc
	release func()
	// evaluated is set once a metric's conditions were evaluated: those
	// evaluated after it had less than the whole budget.
	evaluated bool
	// behind is the evaluation left behind when the budget was spent, if
	// one was: the place is given back when it ends.
	behind <-chan api.Phase
}

func (r *Report) newShading() *shading {
	return &shading{rd: r.renderer(), key: r.Key}
}

// done gives back the place, if one was taken, once no evaluation of this
// report's runs on it.
func (s *shading) done() {
	if s.release == nil {
		return
	}
	s.cancel()
	release, behind := s.release, s.behind
	s.release = nil
	if behind == nil {
		release()
		return
	}
	// Ends when the evaluation left behind does, within its conditions'
	// cost bound.
	go func() {
		<-behind
		release()
	}()
}

// take waits, at most the Renderer's wait, for a place to shade in; false
// when there is none.
func (s *shading) take() bool {
	if s.taken {
		return s.ctx != nil
	}
	s.taken = true
	t := time.NewTimer(s.rd.shadeWait)
	defer t.Stop()
	select {
	case s.rd.shaders <- struct{}{}:
	case <-t.C:
		return false
	}
	s.ctx, s.cancel = context.WithTimeout(context.Background(), RegionBudget)
	s.release = func() { <-s.rd.shaders }
	return true
}

// shadeNote is the chart's note when its bands were not found.
var (
	busyNote    = fmt.Sprintf("Not shaded: other reports were evaluating their conditions, %d at once at most.", MaxShading)
	tooLongNote = "The conditions took too long to evaluate across the chart: no regions are shaded."
)

// shade finds the bands of a metric's chart over [lo, hi] (the values
// drawn) for results of shape sh: from the cache when the report has a
// Key and they were found before for the same range and shape (the
// conditions of one analysis never change), by evaluating the conditions
// otherwise. note is set when there are none to draw.
func (s *shading) shade(metric string, lo, hi float64, sh shape, judge analysis.Judge) (found *shaded, note string) {
	key := ""
	if s.key != "" {
		key = "regions\x00" + s.key + "\x00" + metric + "\x00" + strconv.FormatFloat(lo, 'g', -1, 64) + "\x00" +
			strconv.FormatFloat(hi, 'g', -1, 64) + "\x00" + strconv.FormatBool(sh.vector) + strconv.Itoa(sh.n)
		if v, ok := s.rd.cache.get(key); ok {
			found = v.(*shaded)
			if found.tooLong {
				return nil, tooLongNote
			}
			return found, ""
		}
	}
	if !s.take() {
		return nil, busyNote
	}
	whole := !s.evaluated
	s.evaluated = true
	j := &judgeOf{j: judge, sh: s}
	found = &shaded{}
	found.lo, found.hi = widen(lo, hi, sh, j)
	found.bands = regions(found.lo, found.hi, sh, j)
	if s.ctx.Err() != nil {
		if whole && key != "" {
			s.rd.cache.add(key, &shaded{tooLong: true}, 64)
		}
		return nil, tooLongNote
	}
	if key != "" {
		s.rd.cache.add(key, found, found.size())
	}
	return found, ""
}

// byteCache is a least-recently-used cache bounded by the bytes its
// entries are estimated to take.
type byteCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, cached]
	bytes int64
	max   int64
}

type cached struct {
	v    any
	size int64
}

func newByteCache(max int64) *byteCache {
	c := &byteCache{max: max}
	// The bytes bound it; the count is only simplelru's own bound.
	l, err := simplelru.NewLRU[string, cached](math.MaxInt32, func(_ string, v cached) { c.bytes -= v.size })
	if err != nil {
		panic(err) // a positive size cannot fail
	}
	c.lru = l
	return c
}

func (c *byteCache) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(key)
	return v.v, ok
}

// add keeps v, evicting the least recently used entries until the cache
// is within its bound; v itself is not kept when it alone is beyond it.
func (c *byteCache) add(key string, v any, size int64) {
	size += int64(len(key))
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.max {
		c.lru.Remove(key)
		return
	}
	c.lru.Remove(key)
	c.lru.Add(key, cached{v: v, size: size})
	c.bytes += size
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}

// len is how many entries the cache holds.
func (c *byteCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
