package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// The chaos test's readers: a webhook receiver that keeps every delivery
// with its webhook-id, and readers that follow a sample of the analyses
// from every replica while the disturbances go on.

// chaosDelivery is one webhook request the receiver got.
type chaosDelivery struct {
	webhookID string
	event     api.Event
	at        time.Time
	refused   bool // answered 503 to make canaryd retry
}

// chaosHooks is a webhook receiver on loopback that keeps every delivery
// with its webhook-id, and refuses the first attempt of a seeded share of
// the events (503, Retry-After: 1) so that they are retried, perhaps by
// another replica.
type chaosHooks struct {
	srv *httptest.Server

	mu       sync.Mutex
	rng      *rand.Rand
	refuse   float64
	seen     map[string]int    // attempts by webhook-id
	bodies   map[string]string // the first attempt's body, by webhook-id
	byID     map[string][]chaosDelivery
	problems []string
}

func newChaosHooks(tb testing.TB, seed uint64, refuse float64) *chaosHooks {
	h := &chaosHooks{rng: rand.New(rand.NewPCG(seed, 1)), refuse: refuse, seen: map[string]int{}, bodies: map[string]string{}, byID: map[string][]chaosDelivery{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	tb.Cleanup(h.srv.Close)
	return h
}

func (h *chaosHooks) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	id := r.Header.Get("webhook-id")
	var ev api.Event
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || id == "" || ev.AnalysisID == "" {
		h.problems = append(h.problems, fmt.Sprintf("a chaosDelivery without a webhook-id or an event (webhook-id %q): %v %.200s", id, err, body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.seen[id]++
	// Every attempt of an event, from whichever replica, sends the same
	// bytes: the signature a receiver checked holds for the copy too.
	if first, ok := h.bodies[id]; !ok {
		h.bodies[id] = string(body)
	} else if first != string(body) {
		h.problems = append(h.problems, fmt.Sprintf("webhook-id %s was sent with two bodies:\n%.300s\n%.300s", id, first, body))
	}
	d := chaosDelivery{webhookID: id, event: ev, at: time.Now()}
	if h.seen[id] == 1 && h.rng.Float64() < h.refuse {
		d.refused = true
		h.byID[ev.AnalysisID] = append(h.byID[ev.AnalysisID], d)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h.byID[ev.AnalysisID] = append(h.byID[ev.AnalysisID], d)
	w.WriteHeader(http.StatusNoContent)
}

// completed returns the accepted completed deliveries of an analysis, and
// every completed delivery's webhook-id, accepted or refused.
func (h *chaosHooks) completed(id string) (accepted []chaosDelivery, ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.byID[id] {
		if d.event.Type != api.EventCompleted {
			continue
		}
		ids = append(ids, d.webhookID)
		if !d.refused {
			accepted = append(accepted, d)
		}
	}
	return accepted, ids
}

// chaosReader follows a sample of the analyses from every replica while
// the disturbances go on: GETs each of them in turn, and keeps an NDJSON
// stream of each open on each replica until it ends with the analysis'
// completed event. Any answer but 200 is a failure, except the
// documented 503 (problem+json, Retry-After) while the store is down; a
// replica meant to be up that does not answer is one too.
type chaosReader struct {
	tb       testing.TB
	replicas []*chaosReplica
	// storeDown is set while the store is down (and for a grace after).
	storeDown *atomic.Bool
	// storeGen counts the store's outages: a stream that ends while one
	// happened is opened again.
	storeGen *atomic.Int64
	client   *http.Client

	mu       sync.Mutex
	ids      []string
	failures []string
	gets     int
	outages  int
	streams  map[string]api.Phase // "replica id" → phase of its completed event
	// last says what each stream did last, for a failure.
	last     map[string]string
	reopened int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newChaosReader(tb testing.TB, replicas []*chaosReplica, storeDown *atomic.Bool, storeGen *atomic.Int64) *chaosReader {
	s := &chaosReader{tb: tb, replicas: replicas, storeDown: storeDown, storeGen: storeGen,
		client:  &http.Client{Timeout: 10 * time.Second},
		streams: map[string]api.Phase{}, last: map[string]string{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	// Ends at close.
	go s.poll()
	return s
}

func (s *chaosReader) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 50 {
		s.failures = append(s.failures, time.Now().UTC().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
}

// add follows id from now on: GETs and a stream on every replica.
func (s *chaosReader) add(id string) {
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.mu.Unlock()
	for _, r := range s.replicas {
		s.wg.Add(1)
		// Ends when the stream has seen the completed event, or at close.
		go s.follow(r, id)
	}
}

func (s *chaosReader) stopped() bool { return s.ctx.Err() != nil }

func (s *chaosReader) poll() {
	defer s.wg.Done()
	for i := 0; !s.stopped(); i++ {
		s.mu.Lock()
		ids := append([]string(nil), s.ids...)
		s.mu.Unlock()
		if len(ids) == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		id := ids[i%len(ids)]
		for _, r := range s.replicas {
			if !r.up.Load() {
				continue
			}
			gen := r.gen.Load()
			outage := s.storeDown.Load()
			resp, err := s.client.Get(r.base + "/v1/analyses/" + url.PathEscape(id))
			if err != nil {
				if r.up.Load() && r.gen.Load() == gen {
					s.fail("GET %s from %s: %v", id, r.name, err)
				}
				continue
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			s.mu.Lock()
			s.gets++
			s.mu.Unlock()
			switch {
			case resp.StatusCode == http.StatusOK:
				var a api.Analysis
				if err := json.Unmarshal(data, &a); err != nil || a.ID != id {
					s.fail("GET %s from %s: 200 but not the analysis: %.200s", id, r.name, data)
				}
			case (outage || s.storeDown.Load()) && chaosOutage(resp.StatusCode, resp):
				s.mu.Lock()
				s.outages++
				s.mu.Unlock()
			default:
				s.fail("GET %s from %s: %d %s", id, r.name, resp.StatusCode, chaosDetail(resp, data))
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// follow keeps a stream of id open on r until it ends with the completed
// event. A stream cut by its replica going away, or by a store outage, is
// opened again; one that ends otherwise without the completed event is a
// failure.
func (s *chaosReader) follow(r *chaosReplica, id string) {
	defer s.wg.Done()
	note := func(format string, args ...any) {
		s.mu.Lock()
		k := r.name + " " + id
		s.last[k] = tail(s.last[k]+"; "+time.Now().UTC().Format("15:04:05.000 ")+fmt.Sprintf(format, args...), 600)
		s.mu.Unlock()
	}
	client := &http.Client{} // a stream lasts as long as the analysis
	for !s.stopped() {
		if !r.up.Load() {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		gen, storeGen := r.gen.Load(), s.storeGen.Load()
		outage := s.storeDown.Load()
		req, _ := http.NewRequestWithContext(s.ctx, http.MethodGet, r.base+"/v1/analyses/"+url.PathEscape(id), nil)
		req.Header.Set("Accept", "application/x-ndjson")
		note("opening")
		resp, err := client.Do(req)
		if err != nil {
			note("open: %v", err)
			if !s.stopped() && r.up.Load() && r.gen.Load() == gen {
				s.fail("stream of %s from %s: %v", id, r.name, err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			note("%d %s", resp.StatusCode, chaosDetail(resp, data))
			if !((outage || s.storeDown.Load()) && chaosOutage(resp.StatusCode, resp)) {
				s.fail("stream of %s from %s: %d %s", id, r.name, resp.StatusCode, chaosDetail(resp, data))
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		note("%d, reading", resp.StatusCode)
		phase, err := chaosCompletedOf(resp.Body, id)
		resp.Body.Close()
		note("read %q: %v", phase, err)
		if phase != "" {
			s.mu.Lock()
			s.streams[r.name+" "+id] = phase
			s.mu.Unlock()
			return
		}
		if s.stopped() {
			return
		}
		if r.gen.Load() != gen || !r.up.Load() || s.storeGen.Load() != storeGen || s.storeDown.Load() {
			s.mu.Lock()
			s.reopened++
			s.mu.Unlock()
			continue
		}
		s.fail("stream of %s from %s ended without the completed event: %v", id, r.name, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// chaosCompletedOf reads an NDJSON stream until the completed event of id and
// returns its phase; "" when the stream ended before it.
func chaosCompletedOf(r io.Reader, id string) (api.Phase, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return "", fmt.Errorf("a line that is not an event: %.200s", sc.Text())
		}
		if ev.AnalysisID != id {
			return "", fmt.Errorf("an event of another analysis: %.200s", sc.Text())
		}
		if ev.Type == api.EventCompleted {
			if ev.Analysis == nil {
				return "", fmt.Errorf("a completed event without the analysis")
			}
			return ev.Analysis.Phase, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", io.ErrUnexpectedEOF
}

// close stops reading and waits for every reader.
func (s *chaosReader) close() {
	s.cancel()
	s.wg.Wait()
}

// chaosOutage says whether a refusal is the documented answer of a store
// outage: 503, problem+json, with Retry-After.
func chaosOutage(status int, resp *http.Response) bool {
	return status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json")
}
