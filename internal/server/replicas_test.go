package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/replica"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/spec"
)

// replicaNames are the replicas of every cluster of these tests.
var replicaNames = []string{"a", "b", "c"}

// discoveryHost is the name the discovery clusters resolve: a headless
// Service's, in Kubernetes.
const discoveryHost = "canaryd-peers.test"

// stubResolver answers for discoveryHost with the addresses it is given:
// the one part of discovery that a test on loopback cannot have for real
// (a DNS server for a headless Service). Everything else is real: each
// replica listens on its own loopback address, on the same port, as pods
// do.
type stubResolver struct {
	mu    sync.Mutex
	addrs []net.IPAddr
}

func (r *stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if host != discoveryHost {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.addrs), nil
}

// drop removes an address, as Kubernetes does when a pod is gone.
func (r *stubResolver) drop(ip string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = slices.DeleteFunc(r.addrs, func(a net.IPAddr) bool { return a.IP.String() == ip })
}

// replicaServer is one replica of a cluster: the API on a real listener,
// with its own analyses, registry and observed logs.
type replicaServer struct {
	*testServer
	name string
	srv  *httptest.Server
	host string // host:port
}

// cluster is the replicas of one Service.
type cluster struct {
	byName   map[string]*replicaServer
	resolver *stubResolver // discovery only
}

func (c *cluster) r(name string) *replicaServer { return c.byName[name] }

// clusterOptions say how the replicas find each other.
type clusterOptions struct {
	// discovery: the replicas listen on 127.0.0.1, .2 and .3, on one
	// port, and find each other by resolving discoveryHost. Otherwise
	// each is given the static list of all three.
	discovery bool
	// peers, when set, replaces the static list of one replica (by name),
	// to misconfigure it.
	peers  map[string][]string
	tokens []string
}

// startCluster starts replicas a, b and c against one real Prometheus.
func startCluster(t *testing.T, promURL string, o clusterOptions) *cluster {
	t.Helper()
	c := &cluster{byName: map[string]*replicaServer{}}
	var lns []net.Listener
	if o.discovery {
		lns = listenOnOnePort(t, len(replicaNames))
		c.resolver = &stubResolver{}
		for _, ln := range lns {
			c.resolver.addrs = append(c.resolver.addrs, net.IPAddr{IP: ln.Addr().(*net.TCPAddr).IP})
		}
	} else {
		for range replicaNames {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			lns = append(lns, ln)
		}
	}
	var static []string
	for i, name := range replicaNames {
		static = append(static, name+"=http://"+lns[i].Addr().String())
	}
	for i, name := range replicaNames {
		entries := static // every replica the same list, its own name in it
		if o.discovery {
			entries = []string{fmt.Sprintf("dns+http://%s:%d", discoveryHost, lns[0].Addr().(*net.TCPAddr).Port)}
		}
		if p, ok := o.peers[name]; ok {
			entries = p
		}
		var peers []replica.Peer
		for _, e := range entries {
			p, err := replica.ParsePeer(e)
			if err != nil {
				t.Fatalf("peer %q: %v", e, err)
			}
			peers = append(peers, p)
		}
		var resolver server.Resolver
		if c.resolver != nil {
			resolver = c.resolver
		}
		c.byName[name] = startReplica(t, name, lns[i], peers, resolver, promURL, o.tokens)
	}
	return c
}

// listenOnOnePort listens on 127.0.0.1 to 127.0.0.n, on one port.
func listenOnOnePort(t *testing.T, n int) []net.Listener {
	t.Helper()
	for range 20 {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns := []net.Listener{first}
		port := first.Addr().(*net.TCPAddr).Port
		for i := 2; i <= n; i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%d", i, port))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) == n {
			return lns
		}
		for _, ln := range lns {
			ln.Close()
		}
	}
	t.Fatalf("no port free on 127.0.0.1 to 127.0.0.%d", n)
	return nil
}

func startReplica(t *testing.T, name string, ln net.Listener, peers []replica.Peer, resolver server.Resolver, promURL string, tokens []string) *replicaServer {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core).With(zap.String("replica", name))
	reg := promclient.NewRegistry()
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: promURL}}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	analyses, err := server.NewAnalyses(server.AnalysesOptions{
		Logger: log, Registerer: reg, Replica: name,
		MaxRunning: 100, MaxFinished: 1000, Retention: time.Hour,
		ErrorRetryInterval: 50 * time.Millisecond, MaxDuration: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := server.NewReplicas(server.ReplicasOptions{Name: name, Peers: peers, Resolver: resolver, Logger: log, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := server.New(server.Options{
		Logger: log, Registerer: reg, Gatherer: reg,
		Analyses: analyses, Providers: compile.Builtin(p.Source), AuthTokens: tokens, Replicas: replicas,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: handler}}
	srv.Start()
	// As start's: the analyses are aborted, then the server closes, then
	// no connection is left idle, to be counted as a leak.
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	t.Cleanup(srv.Close)
	t.Cleanup(replicas.CloseIdleConnections)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		analyses.Drain(ctx)
	})
	return &replicaServer{
		testServer: &testServer{t: t, url: srv.URL, analyses: analyses, registry: reg, logs: logs},
		name:       name,
		srv:        srv,
		host:       ln.Addr().String(),
	}
}

// startForever starts an analysis that runs until it is stopped.
func (r *replicaServer) startForever(headers ...string) api.Analysis {
	r.t.Helper()
	resp := r.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good"), headers...)
	if resp.status != http.StatusAccepted {
		r.t.Fatalf("POST on %s: %d %s", r.name, resp.status, resp.body)
	}
	return resp.analysis(r.t)
}

// forwards returns canaryd_replica_forwards_total{outcome} of the replica.
func (r *replicaServer) forwards(outcome string) string {
	r.t.Helper()
	body := string(r.do(http.MethodGet, "/metrics", "", "").body)
	m := regexp.MustCompile(`(?m)^canaryd_replica_forwards_total\{outcome="` + outcome + `"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		r.t.Fatalf("%s: /metrics has no canaryd_replica_forwards_total{outcome=%q}", r.name, outcome)
	}
	return m[1]
}

// logged reports whether the replica logged a request with the id.
func (r *replicaServer) logged(requestID string) bool {
	for _, e := range r.logs.FilterMessage("request").All() {
		if e.ContextMap()["request_id"] == requestID {
			return true
		}
	}
	return false
}

const unknownLocal = "3qkd7vbl2rcw6xjh5m4fyzeonu"

// TestReplicas runs three replicas behind one imagined Service, each with
// its analyses in its own memory, and checks that a request for an
// analysis reaches it from whichever replica it lands on; with the peers
// listed statically, and found by DNS.
func TestReplicas(t *testing.T) {
	prom := promtest.Start(t)
	for _, discovery := range []bool{false, true} {
		mode := "static peers"
		if discovery {
			mode = "DNS discovery"
		}
		t.Run(mode, func(t *testing.T) {
			testReplicas(t, prom.URL, discovery)
		})
	}
}

func testReplicas(t *testing.T, promURL string, discovery bool) {
	o := clusterOptions{discovery: discovery}

	t.Run("an analysis started on a is read through b and c", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		a := c.r("a").startForever()
		if owner, named := replica.Owner(a.ID); !named || owner != "a" {
			t.Errorf("id %q names replica %q (%v), want a", a.ID, owner, named)
		}
		if !regexp.MustCompile(`^a\.[a-z2-7]{35}$`).MatchString(a.ID) {
			t.Errorf("id %q is not a.<26 characters of base32>", a.ID)
		}
		for _, via := range []string{"a", "b", "c"} {
			resp := c.r(via).do(http.MethodGet, "/v1/analyses/"+a.ID, "", "")
			if resp.status != http.StatusOK || resp.analysis(t).ID != a.ID {
				t.Fatalf("GET through %s: %d %s", via, resp.status, resp.body)
			}
			if got := resp.header.Get(server.ReplicaHeader); got != "a" {
				t.Errorf("GET through %s: %s %q, want the owner, a", via, server.ReplicaHeader, got)
			}
			if got := resp.header.Values("X-Request-Id"); len(got) != 1 {
				t.Errorf("GET through %s: X-Request-Id %q, want one", via, got)
			} else if !c.r("a").logged(got[0]) {
				t.Errorf("GET through %s: replica a logged no request with the id %s the caller got", via, got[0])
			}
		}
		if got := c.r("b").forwards("forwarded"); got != "1" {
			t.Errorf("b forwarded %s requests, want 1", got)
		}
		if got := c.r("a").forwards("forwarded"); got != "0" {
			t.Errorf("a, the owner, forwarded %s requests, want 0", got)
		}
	})

	t.Run("an analysis started on a is streamed through c", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		for _, accept := range []string{"application/x-ndjson", "text/event-stream"} {
			resp := c.r("a").do(http.MethodPost, "/v1/analyses?arg.namespace=echo-good", yamlType, seed(t))
			if resp.status != http.StatusAccepted {
				t.Fatalf("POST: %d %s", resp.status, resp.body)
			}
			id := resp.analysis(t).ID
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, stream := c.r("c").openStream(ctx, http.MethodGet, "/v1/analyses/"+id, "", "", accept)
			if got := stream.Header.Get("Content-Type"); !strings.HasPrefix(got, accept) {
				t.Errorf("%s through c: Content-Type %q", accept, got)
			}
			events := newEventReader(t, stream).all()
			cancel()
			var measurements int
			for _, ev := range events {
				if ev.AnalysisID != id && ev.Type != "heartbeat" {
					t.Errorf("%s through c: an event of %q", accept, ev.AnalysisID)
				}
				if ev.Type == api.EventMeasurement {
					measurements++
				}
			}
			if len(events) == 0 || events[len(events)-1].Type != api.EventCompleted || measurements != 3 {
				t.Fatalf("%s through c: %d measurements, last event %+v; want 3 and completed", accept, measurements, events[len(events)-1:])
			}
			if final := events[len(events)-1].Analysis; final.Phase != api.PhaseSuccessful {
				t.Errorf("%s through c: %s (%s), want Successful", accept, final.Phase, final.Message)
			}
		}
	})

	t.Run("an analysis started on a is terminated through b", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		a := c.r("a").startForever()
		resp := c.r("b").do(http.MethodDelete, "/v1/analyses/"+a.ID, "", "")
		if resp.status != http.StatusOK {
			t.Fatalf("DELETE through b: %d %s", resp.status, resp.body)
		}
		if got := resp.analysis(t); got.Phase != api.PhaseSuccessful || got.Message != "Run Terminated" {
			t.Errorf("DELETE through b: %s %q, want Successful, Run Terminated", got.Phase, got.Message)
		}
		if got := c.r("a").do(http.MethodGet, "/v1/analyses/"+a.ID, "", "").analysis(t); !got.Phase.Completed() {
			t.Errorf("on a after DELETE through b: %s, want finished", got.Phase)
		}
	})

	t.Run("the list holds every replica's analyses", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		onA, onB := c.r("a").startForever(), c.r("b").startForever()
		c.r("b").do(http.MethodDelete, "/v1/analyses/"+onB.ID, "", "")
		for _, tc := range []struct {
			name  string
			query string
			via   string
			// header is sent with the request
			header []string
			want   []string
		}{
			{name: "every phase, from c", via: "c", want: []string{onA.ID, onB.ID}},
			{name: "running ones, from b", via: "b", query: "?phase=Running", want: []string{onA.ID}},
			{name: "finished ones, from a", via: "a", query: "?phase=Successful", want: []string{onB.ID}},
			{name: "a forwarded list is the replica's own", via: "a", header: []string{server.ForwardedHeader, "b"}, want: []string{onA.ID}},
		} {
			resp := c.r(tc.via).do(http.MethodGet, "/v1/analyses"+tc.query, "", "", tc.header...)
			if resp.status != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.name, resp.status, resp.body)
			}
			var got []string
			for _, a := range decodeList(t, resp).Analyses {
				got = append(got, a.ID)
			}
			slices.Sort(got)
			slices.Sort(tc.want)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
			if l := decodeList(t, resp); len(l.UnreachableReplicas) > 0 {
				t.Errorf("%s: unreachable %v, want none", tc.name, l.UnreachableReplicas)
			}
		}
		if resp := c.r("c").do(http.MethodGet, "/v1/analyses?phase=Finished", "", ""); resp.status != http.StatusBadRequest {
			t.Errorf("a bad phase: %d, want 400 from the replica asked", resp.status)
		}
		// A page at a time, across replicas: each page is the first of
		// every replica's, and the next starts after it on every one.
		onA2 := c.r("a").startForever()
		var paged []string
		cursor := ""
		for page := 0; ; page++ {
			resp := c.r("c").do(http.MethodGet, "/v1/analyses?limit=1&cursor="+cursor, "", "")
			if page > 5 || resp.status != http.StatusOK {
				t.Fatalf("page %d: %d %s", page, resp.status, resp.body)
			}
			l := decodeList(t, resp)
			if len(l.Analyses) != 1 {
				t.Fatalf("page %d of 1: %d analyses", page, len(l.Analyses))
			}
			paged = append(paged, l.Analyses[0].ID)
			if l.Next == "" {
				break
			}
			cursor = l.Next
		}
		want := []string{onA.ID, onA2.ID, onB.ID}
		slices.Sort(want)
		if got := slices.Sorted(slices.Values(paged)); !slices.Equal(got, want) {
			t.Errorf("pages of 1 across the replicas: %v, want %v", paged, want)
		}
	})

	t.Run("a draining owner still answers forwarded requests", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		a := c.r("a").startForever()
		grace, endGrace := context.WithCancel(context.Background())
		defer endGrace()
		drained := make(chan int, 1)
		// Ends when the analysis is terminated below (or aborted when
		// the grace is ended, should the test fail first).
		go func() { drained <- c.r("a").analyses.Drain(grace) }()
		waitFor(t, "a draining", func() bool {
			return c.r("a").do(http.MethodGet, "/readyz", "", "").status == http.StatusServiceUnavailable
		})
		if resp := c.r("b").do(http.MethodGet, "/v1/analyses/"+a.ID, "", ""); resp.status != http.StatusOK || resp.analysis(t).Phase != api.PhaseRunning {
			t.Errorf("GET through b from a draining a: %d %s, want 200 Running", resp.status, resp.body)
		}
		if resp := c.r("c").do(http.MethodDelete, "/v1/analyses/"+a.ID, "", ""); resp.status != http.StatusOK {
			t.Errorf("DELETE through c on a draining a: %d %s", resp.status, resp.body)
		}
		select {
		case aborted := <-drained:
			if aborted != 0 {
				t.Errorf("Drain aborted %d analyses, want 0: the DELETE ended the only one", aborted)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a did not finish draining after its analysis was terminated")
		}
	})

	t.Run("unknown owners, ids without one, and the loop guard", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		a := c.r("a").startForever()
		gone := "which is not among the peers of this replica (b, --peers)"
		if discovery {
			gone = "no longer among the replicas (" + discoveryHost + ")"
		}
		for _, tc := range []struct {
			name   string
			method string
			id     string
			header []string
			detail string
		}{
			{name: "an owner no replica knows", method: http.MethodGet, id: "nobody." + unknownLocal, detail: gone},
			{name: "an owner no replica knows, DELETE", method: http.MethodDelete, id: "nobody." + unknownLocal, detail: gone},
			{name: "an id that names no replica", method: http.MethodGet, id: unknownLocal, detail: "never existed here"},
			{name: "a request already forwarded", method: http.MethodGet, id: a.ID, header: []string{server.ForwardedHeader, "c"},
				detail: `its id names replica a and this is b; a request forwarded (by "c") is not forwarded again`},
		} {
			resp := c.r("b").do(tc.method, "/v1/analyses/"+tc.id, "", "", tc.header...)
			if resp.status != http.StatusNotFound {
				t.Errorf("%s: %d %s, want 404", tc.name, resp.status, resp.body)
				continue
			}
			if p := resp.problem(t); p.Type != server.ProblemNotFound || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("%s: %s %q, want not-found saying %q", tc.name, p.Type, p.Detail, tc.detail)
			}
		}
		if got := c.r("b").forwards("already_forwarded"); got != "1" {
			t.Errorf("b refused %s forwarded requests, want 1", got)
		}
		if got := c.r("b").forwards("owner_gone"); got != "2" {
			t.Errorf("b answered %s requests for gone owners, want 2", got)
		}
	})

	t.Run("an owner that is down is a 503", func(t *testing.T) {
		c := startCluster(t, promURL, o)
		a := c.r("a").startForever()
		onB := c.r("b").startForever()
		c.r("b").do(http.MethodGet, "/v1/analyses/"+a.ID, "", "") // b learns who a is
		c.r("a").srv.Close()
		for _, tc := range []struct {
			name, method, via string
		}{
			{"GET through b", http.MethodGet, "b"},
			{"DELETE through c", http.MethodDelete, "c"},
			{"a stream through c", http.MethodGet, "c"},
		} {
			var headers []string
			if strings.Contains(tc.name, "stream") {
				headers = []string{"Accept", "application/x-ndjson"}
			}
			resp := c.r(tc.via).do(tc.method, "/v1/analyses/"+a.ID, "", "", headers...)
			if resp.status != http.StatusServiceUnavailable {
				t.Errorf("%s: %d %s, want 503", tc.name, resp.status, resp.body)
				continue
			}
			p := resp.problem(t)
			if p.Type != server.ProblemReplicaUnavailable || !strings.Contains(p.Detail, "held by replica a, which cannot be reached") {
				t.Errorf("%s: %s %q", tc.name, p.Type, p.Detail)
			}
			if resp.header.Get("Retry-After") == "" {
				t.Errorf("%s: no Retry-After", tc.name)
			}
		}
		resp := c.r("c").do(http.MethodGet, "/v1/analyses", "", "")
		list := decodeList(t, resp)
		want := []string{"a"}
		if discovery {
			// c never heard a say its name: its address stands for it.
			want = []string{c.r("a").host}
		}
		if resp.status != http.StatusOK || !slices.Equal(list.UnreachableReplicas, want) || len(list.Analyses) != 1 || list.Analyses[0].ID != onB.ID {
			t.Errorf("the list through c with a down: %d, unreachable %v, %d analyses; want 200, %v, b's", resp.status, list.UnreachableReplicas, len(list.Analyses), want)
		}

		if discovery {
			// Once a's pod is gone, DNS no longer names it: its
			// analyses are gone with it.
			c.resolver.drop(strings.Split(c.r("a").host, ":")[0])
			resp := c.r("b").do(http.MethodGet, "/v1/analyses/"+a.ID, "", "")
			if resp.status != http.StatusNotFound || !strings.Contains(resp.problem(t).Detail, "no longer among the replicas") {
				t.Errorf("GET through b once a has left DNS: %d %s, want 404", resp.status, resp.body)
			}
			if l := decodeList(t, c.r("c").do(http.MethodGet, "/v1/analyses", "", "")); len(l.UnreachableReplicas) != 0 {
				t.Errorf("the list once a has left DNS: unreachable %v, want none", l.UnreachableReplicas)
			}
		}
	})

	t.Run("the caller's token goes with a forwarded request", func(t *testing.T) {
		c := startCluster(t, promURL, clusterOptions{discovery: discovery, tokens: []string{"s3cret"}})
		bearer := []string{"Authorization", "Bearer s3cret"}
		a := c.r("a").startForever(bearer...)
		if resp := c.r("b").do(http.MethodGet, "/v1/analyses/"+a.ID, "", "", bearer...); resp.status != http.StatusOK {
			t.Errorf("with the token through b: %d %s", resp.status, resp.body)
		}
		if resp := c.r("b").do(http.MethodGet, "/v1/analyses/"+a.ID, "", ""); resp.status != http.StatusUnauthorized {
			t.Errorf("without a token through b: %d, want 401", resp.status)
		}
		if got := c.r("b").forwards("forwarded"); got != "1" {
			t.Errorf("b forwarded %s requests, want 1: a request without a token must not leave b", got)
		}
		if l := decodeList(t, c.r("c").do(http.MethodGet, "/v1/analyses", "", "", bearer...)); len(l.Analyses) != 1 || len(l.UnreachableReplicas) != 0 {
			t.Errorf("the list with the token through c: %d analyses, unreachable %v; want a's, none", len(l.Analyses), l.UnreachableReplicas)
		}
	})
}

// TestReplicasMisconfigured gives replica b a static peer list that names
// c's URL for a: the forwarded request reaches c, which does not forward it
// again, and b says what is wrong instead of passing on c's 404.
func TestReplicasMisconfigured(t *testing.T) {
	prom := promtest.Start(t)
	c := startCluster(t, prom.URL, clusterOptions{})
	cURL, _ := url.Parse(c.r("c").url)
	b := startReplica(t, "b", mustListen(t), []replica.Peer{{Name: "a", URL: "http://" + cURL.Host}}, nil, prom.URL, nil)
	a := c.r("a").startForever()
	resp := b.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "")
	if resp.status != http.StatusServiceUnavailable {
		t.Fatalf("GET through the misconfigured b: %d %s, want 503", resp.status, resp.body)
	}
	if p := resp.problem(t); !strings.Contains(p.Detail, `answered as replica "c"; check --peers`) {
		t.Errorf("detail %q does not say that c answered for a", p.Detail)
	}
	if got := c.r("c").forwards("already_forwarded"); got != "1" {
		t.Errorf("c refused %s forwarded requests, want 1", got)
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func decodeList(t *testing.T, resp response) server.AnalysisList {
	t.Helper()
	var l server.AnalysisList
	if err := json.Unmarshal(resp.body, &l); err != nil {
		t.Fatalf("not a list (%d): %v\n%s", resp.status, err, resp.body)
	}
	return l
}

// TestNewReplicas checks the options a replica refuses.
func TestNewReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    server.ReplicasOptions
		problem string
	}{
		{"no name", server.ReplicasOptions{}, "Name"},
		{"a name that is no label", server.ReplicasOptions{Name: "A_1"}, "Name"},
		{"one peer at two URLs", server.ReplicasOptions{Name: "a", Peers: []replica.Peer{
			{Name: "b", URL: "http://b1:8080"}, {Name: "b", URL: "http://b2:8080"}}}, "given twice"},
		{"a peer URL with credentials", server.ReplicasOptions{Name: "a", Peers: []replica.Peer{
			{Name: "b", URL: "http://u:p@b:8080"}}}, "peer b"},
	} {
		_, err := server.NewReplicas(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("%s: %v, want an error on %s", tc.name, err, tc.problem)
		}
	}
	rs, err := server.NewReplicas(server.ReplicasOptions{Name: "a", Peers: []replica.Peer{{Name: "a", URL: "http://self:1"}}})
	if err != nil || rs.Name() != "a" {
		t.Errorf("a list with this replica in it: %v", err)
	}

	// Analyses and the API must name the same replica.
	analyses, err := server.NewAnalyses(server.AnalysesOptions{Replica: "b", MaxRunning: 1, MaxFinished: 1, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	nopSources := func(*spec.PrometheusMetric) (analysis.Source, map[string]string, []api.FieldError) {
		return nil, nil, nil
	}
	if _, err := server.New(server.Options{Analyses: analyses, Providers: compile.Builtin(nopSources), Replicas: rs}); err == nil {
		t.Error("server.New with replica a and analyses of b: no error")
	}
	if _, err := server.NewAnalyses(server.AnalysesOptions{Replica: "B", MaxRunning: 1, MaxFinished: 1, Retention: time.Hour}); err == nil {
		t.Error("NewAnalyses with the replica B: no error")
	}
}
