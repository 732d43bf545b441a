package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/promreg"
	"github.com/canaryd/canaryd/internal/replica"
)

// Several replicas behind one Service.
//
// Everything but the analyses resource needs no shared state: a wait, a
// stream, a round, a gate and a webhook are answered by the replica the
// request reached, within that request. What outlives a request is an
// analysis started with 202, read and terminated later by id, from
// whichever replica the Service picks. So an id names its owner
// (replica.ID), and a request for an analysis another replica holds is
// forwarded to it (atOwner), once: the forwarded request carries
// ForwardedHeader and is answered where it lands. The list asks every
// replica (acrossReplicas).
//
// Where the owner is comes from the configuration only (replica.Peer): a
// static name → URL map, or a DNS name whose addresses are the replicas,
// each of which says its name in ReplicaHeader (asked with GET /healthz,
// remembered per address). The replica part of an id is only compared
// with those names: it never becomes an address.

// Headers of the replicas' protocol.
const (
	// ReplicaHeader names the replica that answered; every response of a
	// named replica carries it. A forwarded request's response carries
	// the owner's.
	ReplicaHeader = "Canaryd-Replica"
	// ForwardedHeader marks a request that a replica (named in it) has
	// forwarded: it is answered where it lands and never forwarded again,
	// so that replicas that disagree about who is who cannot pass a
	// request round.
	ForwardedHeader = "Canaryd-Forwarded"
)

// ProblemReplicaUnavailable is the 503 of a request for an analysis that
// another replica holds, when that replica cannot be reached. openapi.yaml
// lists it with the other problem types.
const ProblemReplicaUnavailable = typePrefix + "replica-unavailable"

// Bounds of the calls between replicas.
const (
	peerDialTimeout = 2 * time.Second
	// peerHeaderTimeout bounds the wait for a forwarded request's
	// response headers: the owner answers a GET at once, a DELETE once
	// the terminated run has cancelled its queries, and a stream with its
	// headers before the first event. The stream itself is not bounded:
	// it lasts as long as the analysis, or until its caller hangs up.
	peerHeaderTimeout = 10 * time.Second
	// probeTimeout bounds asking an address its name (GET /healthz).
	probeTimeout = 2 * time.Second
	// identityTTL is how long the name an address gave is trusted. A pod
	// keeps its address for life; an address that a new pod got sooner
	// is caught by the forwarded answer's ReplicaHeader.
	identityTTL = time.Minute
	// listTimeout bounds the fan-out of GET /v1/analyses: the replicas
	// that have not answered by then are listed as unreachable.
	listTimeout = 5 * time.Second
	// maxPeerList bounds a peer's page of the list read into memory: a
	// page is at most maxPageBytes as estimated, with room.
	maxPeerList = 4 * maxPageBytes
)

// Resolver resolves the DNS name of a discovery peer; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// ReplicasOptions configure this replica's name and its peers.
type ReplicasOptions struct {
	// Name is this replica's (replica.CheckName): in the ids of the
	// analyses it starts (give Analyses the same: AnalysesOptions.Replica)
	// and in ReplicaHeader. Required.
	Name string
	// Peers are the other replicas: static entries and DNS discovery. An
	// entry with this replica's own name is skipped, so that every
	// replica can be given the same list. None: nothing is forwarded, and
	// a request for another replica's analysis is a 404.
	Peers []replica.Peer
	// Resolver resolves discovery names; net.DefaultResolver when nil.
	Resolver Resolver
	// Logger receives a line for each request forwarded (debug) and each
	// peer that could not be reached (warn). Nop when nil.
	Logger *zap.Logger
	// Registerer receives canaryd_replica_forwards_total; none is kept
	// when nil.
	Registerer prometheus.Registerer
}

// Replicas is this replica's name and the way to its peers. Its methods
// are safe for concurrent use; a nil *Replicas is a canaryd on its own.
type Replicas struct {
	name      string
	static    map[string]*url.URL
	discover  []*url.URL
	resolver  Resolver
	transport *http.Transport
	// client asks peers their names and lists; it follows no redirect,
	// so a peer cannot send canaryd anywhere the configuration did not.
	client   *http.Client
	log      *zap.Logger
	forwards *prometheus.CounterVec

	mu sync.Mutex
	// names are the names discovered addresses gave, by base URL.
	names map[string]identity
}

type identity struct {
	name string
	at   time.Time
}

// Outcomes of a request for another replica's analysis, the label of
// canaryd_replica_forwards_total.
const (
	forwarded        = "forwarded"
	ownerGone        = "owner_gone"
	ownerUnreachable = "owner_unreachable"
	notForwarded     = "already_forwarded"
)

// NewReplicas checks the options and returns the replicas. It does not
// call any peer: a replica starts whether its peers are up or not.
func NewReplicas(opts ReplicasOptions) (*Replicas, error) {
	if err := replica.CheckName(opts.Name); err != nil {
		return nil, fmt.Errorf("server: ReplicasOptions.Name: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	rs := &Replicas{
		name:     opts.Name,
		static:   map[string]*url.URL{},
		resolver: opts.Resolver,
		log:      opts.Logger,
		names:    map[string]identity{},
	}
	for _, p := range opts.Peers {
		u, err := url.Parse(p.URL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			return nil, fmt.Errorf("server: peer %s: not a URL replica.ParsePeer accepts", p.Name)
		}
		switch {
		case p.Discover:
			rs.discover = append(rs.discover, u)
		case p.Name == opts.Name:
		default:
			if err := replica.CheckName(p.Name); err != nil {
				return nil, fmt.Errorf("server: peer: %w", err)
			}
			if prev, dup := rs.static[p.Name]; dup && prev.String() != u.String() {
				return nil, fmt.Errorf("server: peer %s is given twice, at two URLs", p.Name)
			}
			rs.static[p.Name] = u
		}
	}
	f, registered := promreg.With(opts.Registerer)
	rs.forwards = f.NewCounterVec(prometheus.CounterOpts{
		Name: "canaryd_replica_forwards_total",
		Help: "Requests for an analysis that another replica holds, by outcome: forwarded, owner_gone (404), owner_unreachable (503), already_forwarded (404: a forwarded request is not forwarded again).",
	}, []string{"outcome"})
	for _, o := range []string{forwarded, ownerGone, ownerUnreachable, notForwarded} {
		rs.forwards.WithLabelValues(o)
	}
	if err := registered(); err != nil {
		return nil, err
	}
	// No proxy: peers are pods, never behind the environment's proxy.
	// The forwards to a peer are as many as the requests the server
	// admits, so no bound of their own.
	rs.transport = outbound.NewTransport(outbound.TransportOptions{
		DialTimeout:           peerDialTimeout,
		ResponseHeaderTimeout: peerHeaderTimeout,
		MaxIdleConnsPerHost:   8,
		HTTP1:                 true,
	})
	rs.client = &http.Client{Transport: rs.transport, CheckRedirect: outbound.NoRedirects}
	return rs, nil
}

// Name returns this replica's name; "" for a nil *Replicas.
func (rs *Replicas) Name() string {
	if rs == nil {
		return ""
	}
	return rs.name
}

// CloseIdleConnections closes the idle connections to peers; for shutdown.
func (rs *Replicas) CloseIdleConnections() {
	if rs != nil {
		rs.transport.CloseIdleConnections()
	}
}

func (rs *Replicas) hasPeers() bool { return len(rs.static) > 0 || len(rs.discover) > 0 }

// nameReplica puts this replica's name on every response.
func (s *server) nameReplica(next http.Handler) http.Handler {
	if s.replicas == nil {
		return next
	}
	name := s.replicas.name
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ReplicaHeader, name)
		next.ServeHTTP(w, r)
	})
}

// atOwner serves a request for one analysis (GET or DELETE
// /v1/analyses/{id}) here when the id names this replica or none, and
// forwards it to the replica the id names otherwise: the answer, a stream
// included, is the owner's. It answers 404 when that replica is known to
// be gone (or there are no peers), and 503 when it may be there but
// cannot be reached.
func (s *server) atOwner(next http.Handler) http.Handler {
	rs := s.replicas
	if rs == nil || s.analyses.opts.Store != nil {
		// With a store, every replica reads every analysis from it,
		// whatever replica its id names.
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		owner, named := replica.Owner(id)
		if !named || owner == rs.name {
			next.ServeHTTP(w, r)
			return
		}
		setAnalysisID(r, id)
		if by := r.Header.Get(ForwardedHeader); by != "" {
			rs.forwards.WithLabelValues(notForwarded).Inc()
			writeProblem(w, r, problem(http.StatusNotFound, ProblemNotFound, fmt.Sprintf(
				"no analysis %s here: its id names replica %s and this is %s; a request forwarded (by %s) is not forwarded again, so check --peers",
				quote(id), owner, rs.name, quote(by))))
			return
		}
		base, err := rs.locate(r.Context(), owner)
		var gone *ownerGoneError
		switch {
		case err == nil:
			rs.forward(w, r, id, owner, base)
		case r.Context().Err() != nil:
			// The caller hung up while the owner was looked for.
		case errors.As(err, &gone):
			rs.forwards.WithLabelValues(ownerGone).Inc()
			writeProblem(w, r, problem(http.StatusNotFound, ProblemNotFound,
				fmt.Sprintf("no analysis %s: it was held by replica %s, %s", quote(id), owner, gone.why)))
		default:
			rs.forwards.WithLabelValues(ownerUnreachable).Inc()
			rs.log.Warn("the replica that holds an analysis cannot be reached", zap.String("request_id", infoOf(r).id),
				zap.String("analysis_id", id), zap.String("replica", owner), zap.Error(err))
			writeProblem(w, r, ownerUnavailable(id, owner))
		}
	})
}

func ownerUnavailable(id, owner string) api.Problem {
	return problem(http.StatusServiceUnavailable, ProblemReplicaUnavailable, fmt.Sprintf(
		"analysis %s is held by replica %s, which cannot be reached now; retry (a replica that has stopped is forgotten once it leaves the peers, and its analyses are then a 404)",
		quote(id), owner))
}

// ownerGoneError says that the owner is not among the peers: it has
// stopped (its analyses with it), or it never was one.
type ownerGoneError struct{ why string }

func (e *ownerGoneError) Error() string { return e.why }

// locate returns the base URL of the replica named owner. It fails with an
// *ownerGoneError when no peer has that name, and with another error when
// the peers cannot all be asked (DNS fails, or an address does not
// answer), since the owner may be among those not heard from.
func (rs *Replicas) locate(ctx context.Context, owner string) (*url.URL, error) {
	if u, ok := rs.static[owner]; ok {
		return u, nil
	}
	if len(rs.discover) == 0 {
		if len(rs.static) == 0 {
			return nil, &ownerGoneError{why: "and this replica (" + rs.name + ") has no peers to ask (--peers)"}
		}
		return nil, &ownerGoneError{why: "which is not among the peers of this replica (" + rs.name + ", --peers)"}
	}
	// What the addresses said last, then, if the owner is not among them,
	// what every address says now: a new pod may have an old address.
	for _, fresh := range []bool{false, true} {
		peers, err := rs.discovered(ctx, fresh)
		if err != nil {
			return nil, err
		}
		silent := 0
		for _, p := range peers {
			switch p.name {
			case owner:
				return p.base, nil
			case "":
				silent++
			}
		}
		if fresh && silent > 0 {
			return nil, fmt.Errorf("%d of %d replicas did not say their name", silent, len(peers))
		}
	}
	return nil, &ownerGoneError{why: "which is no longer among the replicas (" + rs.discoveryNames() + "): it has stopped, and its analyses with it"}
}

func (rs *Replicas) discoveryNames() string {
	names := make([]string, len(rs.discover))
	for i, u := range rs.discover {
		names[i] = u.Hostname()
	}
	return strings.Join(names, ", ")
}

// peer is a replica to call: its name, "" when it did not say.
type peer struct {
	name string
	base *url.URL
}

// discovered resolves the discovery names and returns a peer per address
// (this replica's own included), named by what each address said within
// identityTTL, or, when fresh or not known, says now.
func (rs *Replicas) discovered(ctx context.Context, fresh bool) ([]peer, error) {
	var peers []peer
	seen := map[string]bool{}
	for _, d := range rs.discover {
		addrs, err := rs.resolver.LookupIPAddr(ctx, d.Hostname())
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", d.Hostname(), err)
		}
		for _, a := range addrs {
			base := &url.URL{Scheme: d.Scheme, Host: net.JoinHostPort(a.IP.String(), d.Port())}
			if !seen[base.String()] {
				seen[base.String()] = true
				peers = append(peers, peer{base: base})
			}
		}
	}

	now := time.Now()
	ask := make([]bool, len(peers))
	rs.mu.Lock()
	for k := range rs.names {
		if !seen[k] {
			delete(rs.names, k) // gone from DNS: forget it
		}
	}
	for i := range peers {
		id, ok := rs.names[peers[i].base.String()]
		if ok && !fresh && now.Sub(id.at) < identityTTL {
			peers[i].name = id.name
		} else {
			ask[i] = true
		}
	}
	rs.mu.Unlock()

	var wg sync.WaitGroup
	for i := range peers {
		if !ask[i] {
			continue
		}
		wg.Add(1)
		// Ends when the address answers, or at probeTimeout.
		go func() {
			defer wg.Done()
			peers[i].name = rs.probe(ctx, peers[i].base)
		}()
	}
	wg.Wait()

	rs.mu.Lock()
	for i, p := range peers {
		if ask[i] && p.name != "" {
			rs.names[p.base.String()] = identity{name: p.name, at: now}
		}
	}
	rs.mu.Unlock()
	return peers, nil
}

// probe asks the replica at base its name: GET /healthz, open to all,
// answers with ReplicaHeader. It returns "" when it gets no name.
func (rs *Replicas) probe(ctx context.Context, base *url.URL) string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("/healthz").String(), nil)
	if err != nil {
		return ""
	}
	req.Header.Set(ForwardedHeader, rs.name)
	resp, err := rs.client.Do(req)
	if err != nil {
		rs.log.Debug("a replica did not say its name", zap.String("peer", base.Host), zap.Error(err))
		return ""
	}
	defer outbound.DrainAndClose(resp.Body, 4096)
	name := resp.Header.Get(ReplicaHeader)
	if resp.StatusCode != http.StatusOK || replica.CheckName(name) != nil {
		rs.log.Debug("a replica did not say its name", zap.String("peer", base.Host), zap.Int("status", resp.StatusCode))
		return ""
	}
	return name
}

// forget drops what the address at base said, once it has answered as
// another replica.
func (rs *Replicas) forget(base *url.URL) {
	rs.mu.Lock()
	delete(rs.names, base.String())
	rs.mu.Unlock()
}

// wrongReplica is a forwarded answer from another replica than the owner.
type wrongReplica struct{ got string }

func (e *wrongReplica) Error() string { return "answered as replica " + quote(e.got) }

// forward relays the request to the owner at base and its answer back, a
// stream event by event. The request keeps its method, path, query and
// headers (Authorization among them: the owner checks the caller's token
// too), and gains ForwardedHeader and this request's id, so that both
// replicas log it under one id.
func (rs *Replicas) forward(w http.ResponseWriter, r *http.Request, id, owner string, base *url.URL) {
	log := rs.log.With(zap.String("request_id", infoOf(r).id), zap.String("analysis_id", id),
		zap.String("replica", owner), zap.String("peer", base.Host))
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base)
			pr.Out.Header.Set(ForwardedHeader, rs.name)
			pr.Out.Header.Set(requestIDHeader, infoOf(pr.In).id)
		},
		Transport: rs.transport,
		// Every write at once: events must not wait in a buffer.
		FlushInterval: -1,
		ErrorLog:      zap.NewStdLog(log),
		ModifyResponse: func(resp *http.Response) error {
			if got := resp.Header.Get(ReplicaHeader); got != owner {
				rs.forget(base)
				return &wrongReplica{got: got}
			}
			resp.Header.Del(requestIDHeader) // ours, echoed
			rs.forwards.WithLabelValues(forwarded).Inc()
			log.Debug("request forwarded to the replica that holds the analysis", zap.Int("status", resp.StatusCode))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set(ReplicaHeader, rs.name)
			if r.Context().Err() != nil {
				return // the caller hung up: no one to answer
			}
			rs.forwards.WithLabelValues(ownerUnreachable).Inc()
			p := ownerUnavailable(id, owner)
			var wrong *wrongReplica
			if errors.As(err, &wrong) {
				// A static peer's URL that reaches another replica (a
				// Service rather than the pod), or a pod that took a
				// stopped one's address: the owner was not asked.
				log.Warn("a peer answered as another replica than the one its configuration names; check --peers", zap.Error(err))
				p.Detail = fmt.Sprintf("analysis %s is held by replica %s, but the peer this replica knows it by (%s) %s; check --peers",
					quote(id), owner, base.Host, wrong.Error())
			} else {
				log.Warn("the replica that holds an analysis cannot be reached", zap.Error(err))
			}
			writeProblem(w, r, p)
		},
	}
	// The owner's name is the one to show: it answers.
	w.Header().Del(ReplicaHeader)
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: streamWriteTimeout}
	defer func() { _ = dw.rc.SetWriteDeadline(time.Time{}) }()
	proxy.ServeHTTP(dw, r)
}

// deadlineWriter bounds each write of a relayed response as a stream's
// own writes are bounded (streamWriteTimeout): a caller that stops
// reading a relayed stream does not hold the relay forever.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.ResponseWriter.Write(p)
}

// Unwrap lets the relay flush each event through to the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// acrossReplicas answers GET /v1/analyses with the analyses of every
// replica: this one's (local, which also checks the query), and those of
// each peer, asked at once with the same query and the caller's
// Authorization. A peer that has not answered within listTimeout is named
// in unreachableReplicas, and its analyses are missing. A forwarded list
// request is answered with this replica's analyses only.
func (s *server) acrossReplicas(local http.Handler) http.Handler {
	rs := s.replicas
	if rs == nil || !rs.hasPeers() || s.analyses.opts.Store != nil {
		return local
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" {
			local.ServeHTTP(w, r)
			return
		}
		mine := &bufferedResponse{header: http.Header{}}
		local.ServeHTTP(mine, r)
		if mine.status != http.StatusOK {
			mine.copyTo(w)
			return
		}
		var list AnalysisList
		if err := json.Unmarshal(mine.body.Bytes(), &list); err != nil {
			internalError(s.log, w, r, fmt.Errorf("reading this replica's own list: %w", err))
			return
		}
		// Every replica answered a page of the same query: the merged
		// page is the first of their analyses in the list's order, and
		// the next starts after its last, on every replica.
		o, _ := listQuery(r.URL.Query()) // valid: this replica took it
		theirs, theirMore, unreachable := rs.listPeers(r)
		page, more := mergePage(append(list.Analyses, theirs...), o.Limit, list.Next != "" || theirMore)
		merged := AnalysisList{Analyses: page, UnreachableReplicas: unreachable}
		if more && len(page) > 0 {
			merged.Next = cursorOf(page[len(page)-1]).String()
		}
		writeJSON(w, http.StatusOK, merged)
	})
}

// listPeers asks every peer but this replica for its page of the list, at
// once, within listTimeout. It returns their analyses, whether any has
// more, and the peers that did not answer (their names, or for an address
// that did not say one, the address).
func (rs *Replicas) listPeers(r *http.Request) ([]api.Analysis, bool, []string) {
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	var unreachable []string
	targets := map[string]*url.URL{} // by name, or by address when unnamed
	for name, u := range rs.static {
		targets[name] = u
	}
	if len(rs.discover) > 0 {
		peers, err := rs.discovered(ctx, false)
		if err != nil {
			rs.log.Warn("the replicas could not be listed", zap.String("request_id", infoOf(r).id), zap.Error(err))
			for _, u := range rs.discover {
				unreachable = append(unreachable, u.Host)
			}
		}
		for _, p := range peers {
			switch p.name {
			case rs.name:
			case "":
				unreachable = append(unreachable, p.base.Host)
			default:
				if _, dup := targets[p.name]; !dup {
					targets[p.name] = p.base
				}
			}
		}
	}

	type answer struct {
		name string
		list AnalysisList
		err  error
	}
	answers := make(chan answer, len(targets))
	for name, base := range targets {
		// Ends when the peer has answered, or at listTimeout.
		go func() {
			list, err := rs.listOne(ctx, r, name, base)
			answers <- answer{name: name, list: list, err: err}
		}()
	}
	var all []api.Analysis
	more := false
	for range targets {
		a := <-answers
		if a.err != nil {
			rs.log.Warn("a replica did not list its analyses", zap.String("request_id", infoOf(r).id),
				zap.String("replica", a.name), zap.Error(a.err))
			unreachable = append(unreachable, a.name)
			continue
		}
		all = append(all, a.list.Analyses...)
		more = more || a.list.Next != ""
	}
	slices.Sort(unreachable)
	return all, more, unreachable
}

// listOne asks the replica name at base for its own page of the list.
func (rs *Replicas) listOne(ctx context.Context, r *http.Request, name string, base *url.URL) (AnalysisList, error) {
	u := base.JoinPath("/v1/analyses")
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return AnalysisList{}, err
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Accept", jsonContentType)
	req.Header.Set(ForwardedHeader, rs.name)
	req.Header.Set(requestIDHeader, infoOf(r).id)
	resp, err := rs.client.Do(req)
	if err != nil {
		return AnalysisList{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return AnalysisList{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get(ReplicaHeader); got != name {
		rs.forget(base)
		return AnalysisList{}, &wrongReplica{got: got}
	}
	var list AnalysisList
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPeerList)).Decode(&list); err != nil {
		return AnalysisList{}, fmt.Errorf("reading its list: %w", err)
	}
	return list, nil
}

// newestFirst sorts analyses as Analyses.List does, newest first, and
// drops repeated ids (a replica reached both statically and by DNS).
func newestFirst(list []api.Analysis) []api.Analysis {
	started := func(a api.Analysis) time.Time {
		if a.StartedAt == nil {
			return time.Time{}
		}
		return *a.StartedAt
	}
	slices.SortFunc(list, func(x, y api.Analysis) int {
		if c := started(y).Compare(started(x)); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	list = slices.CompactFunc(list, func(x, y api.Analysis) bool { return x.ID == y.ID })
	if list == nil {
		list = []api.Analysis{}
	}
	return list
}

// bufferedResponse holds a response in memory, for a handler whose answer
// is merged with others before it is written.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// copyTo writes the response held to w, as it was.
func (b *bufferedResponse) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}
