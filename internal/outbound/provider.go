package outbound

import (
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"github.com/canaryd/canaryd/internal/limits"
)

// ProviderBounds checks the bounds a metric provider is given, its cap on
// a request's timeout and its --max-result-values, and returns the values
// an answer may have (limits.MaxResultValues when maxValues is 0) and the
// bytes it may take: limits.ResponseBytesPerValue for each value, plus
// limits.ResponseBytesFixed, up to maxResponseBytes. A negative bound is
// an error that names the provider.
func ProviderBounds(provider string, maxTimeout time.Duration, maxValues int, maxResponseBytes int64) (values int, responseBytes int64, err error) {
	if maxTimeout < 0 || maxValues < 0 {
		return 0, 0, errors.New(provider + ": the bounds must not be negative")
	}
	if maxValues == 0 {
		maxValues = limits.MaxResultValues
	}
	return maxValues, min(maxResponseBytes, int64(maxValues)*limits.ResponseBytesPerValue+limits.ResponseBytesFixed), nil
}

// NewProviderTransport returns the transport of a metric provider's
// client (see NewTransport): at most maxConnsPerHost connections to one
// host, response headers up to 64 KiB, TLS 1.2 or later; dial makes the
// connections, Dialer(0) when nil.
func NewProviderTransport(maxConnsPerHost int, dial DialFunc) *http.Transport {
	return NewTransport(TransportOptions{
		MaxConnsPerHost:        maxConnsPerHost,
		MaxResponseHeaderBytes: 64 << 10,
		Dial:                   dial,
		TLS:                    &tls.Config{MinVersion: tls.VersionTLS12},
	})
}
