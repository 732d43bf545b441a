package outbound

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// The timeouts of every transport, Argo Rollouts' (and net/http's default
// transport's): a connection is dialled within DialTimeout, kept alive
// every KeepAlive, its TLS handshake done within TLSHandshakeTimeout, and
// closed after IdleConnTimeout unused. A request's own deadline bounds
// everything else, the wait for a connection included.
const (
	DialTimeout         = 30 * time.Second
	KeepAlive           = 30 * time.Second
	TLSHandshakeTimeout = 10 * time.Second
	IdleConnTimeout     = 90 * time.Second
	// MaxIdleConns bounds the idle connections of a transport, to all
	// hosts together, unless its MaxConnsPerHost is higher.
	MaxIdleConns = 100
)

// DialFunc is the DialContext of an http.Transport.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// TransportOptions configure NewTransport. Zero values take the defaults
// named.
type TransportOptions struct {
	// MaxConnsPerHost caps the connections (dialling, active and idle) to
	// one scheme, host and port; a request beyond it waits for one within
	// its deadline. Zero leaves them to a bound of the caller's own.
	MaxConnsPerHost int
	// MaxIdleConnsPerHost is how many of them stay open unused;
	// MaxConnsPerHost when zero (or net/http's 2 when that is zero too).
	MaxIdleConnsPerHost int
	// DialTimeout replaces the package's DialTimeout, and bounds the TLS
	// handshake too when it is shorter than TLSHandshakeTimeout.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers once
	// the request is sent; none when zero (the request's deadline does).
	ResponseHeaderTimeout time.Duration
	// MaxResponseHeaderBytes bounds a response's headers; net/http's
	// 1 MiB when zero.
	MaxResponseHeaderBytes int64
	// TLS is the TLS configuration; net/http's default when nil.
	TLS *tls.Config
	// Dial replaces the net.Dialer that makes the connections (see
	// AllowList.Dial, which wraps one).
	Dial DialFunc
}

// Dialer returns the dialler of a transport: DialTimeout (or timeout when
// it is not zero) to connect, KeepAlive.
func Dialer(timeout time.Duration) DialFunc {
	if timeout == 0 {
		timeout = DialTimeout
	}
	return (&net.Dialer{Timeout: timeout, KeepAlive: KeepAlive}).DialContext
}

// NewTransport returns the transport of an outbound client. Its Proxy is
// nil: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY are never read, or
// a proxy and not canaryd's configuration would decide where requests go
// (and what a proxy's operator can read of them).
func NewTransport(o TransportOptions) *http.Transport {
	dial := o.Dial
	if dial == nil {
		dial = Dialer(o.DialTimeout)
	}
	handshake := TLSHandshakeTimeout
	if o.DialTimeout != 0 && o.DialTimeout < handshake {
		handshake = o.DialTimeout
	}
	idlePerHost := o.MaxIdleConnsPerHost
	if idlePerHost == 0 {
		idlePerHost = o.MaxConnsPerHost
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        o.TLS,
		TLSHandshakeTimeout:    handshake,
		ResponseHeaderTimeout:  o.ResponseHeaderTimeout,
		MaxResponseHeaderBytes: o.MaxResponseHeaderBytes,
		MaxConnsPerHost:        o.MaxConnsPerHost,
		MaxIdleConnsPerHost:    idlePerHost,
		MaxIdleConns:           max(MaxIdleConns, o.MaxConnsPerHost),
		IdleConnTimeout:        IdleConnTimeout,
		ExpectContinueTimeout:  time.Second,
	}
}
