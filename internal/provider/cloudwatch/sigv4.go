package cloudwatch

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// signer signs GetMetricData requests with AWS Signature Version 4 in
// the Authorization header, as the AWS SDK's v4.Signer.SignHTTP signs
// them (TestSignerAsTheSDKs holds the two to the same header, byte for
// byte). The SDK's costs 46 allocations a request, a measurement's
// whole budget: it builds a map of the signed headers, sorts their
// names and joins each string of the signature anew. A GetMetricData
// request has the same headers every time, so their canonical form is
// written once (signedHeader), and a signature is written into the
// measurement's scratch: one string a request, the Authorization and
// X-Amz-Date values together. Keys are derived as the SDK derives them,
// once a day and region, and kept.
type signer struct {
	service, region string
	// headers are the signed headers, sorted by name, as the canonical
	// request lists them; names is their list, "accept;content-length;…".
	headers []signedHeader
	names   string

	mu  sync.Mutex
	key signingKey // the last one derived
}

// signedHeader is a header of every request, its name lowercase; value
// is its canonical value, or one of the values a request fills in
// (dynamicDate, dynamicLength, dynamicToken).
type signedHeader struct {
	name, value string
	dynamic     int
}

const (
	static = iota
	dynamicDate
	dynamicLength
	dynamicToken
)

// signingKey is the key of a day's signatures with one secret key.
type signingKey struct {
	secret, date string
	key          [sha256.Size]byte
}

// newSigner is the signer of requests to host with the headers static
// (canonical names: the values as sent), for service and region; a
// session token adds X-Amz-Security-Token.
func newSigner(service, region, host string, static map[string]string, token bool) *signer {
	s := &signer{service: service, region: region}
	s.headers = append(s.headers, signedHeader{name: "host", value: stripSpaces(host)},
		signedHeader{name: "content-length", dynamic: dynamicLength},
		signedHeader{name: "x-amz-date", dynamic: dynamicDate})
	if token {
		s.headers = append(s.headers, signedHeader{name: "x-amz-security-token", dynamic: dynamicToken})
	}
	for k, v := range static {
		s.headers = append(s.headers, signedHeader{name: strings.ToLower(k), value: stripSpaces(v)})
	}
	sortHeaders(s.headers)
	names := make([]string, len(s.headers))
	for i, h := range s.headers {
		names[i] = h.name
	}
	s.names = strings.Join(names, ";")
	return s
}

// sortHeaders sorts the headers by name (insertion: a dozen at most).
func sortHeaders(hs []signedHeader) {
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && hs[j].name < hs[j-1].name; j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
}

// stripSpaces is a header value as SigV4 signs it: without leading and
// trailing spaces, and each run of spaces inside one space.
func stripSpaces(v string) string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return v
	}
	return strings.Join(strings.Fields(v), " ")
}

// signScratch is what signing a request writes into, kept with a
// measurement's scratch.
type signScratch struct {
	buf []byte
	mac hash.Hash // HMAC-SHA256 keyed with key
	key [sha256.Size]byte
	sum [sha256.Size]byte
}

// sign returns the Authorization and X-Amz-Date values of a POST of body
// to the path uri (canonical: escaped as SigV4 escapes it) at t, with the
// credentials c. The two strings share one allocation.
func (s *signer) sign(sc *signScratch, c *aws.Credentials, uri string, body []byte, t time.Time) (authorization, date string) {
	var stamp [16]byte
	amzDate := t.UTC().AppendFormat(stamp[:0], "20060102T150405Z")
	day := amzDate[:8]

	// The canonical request, hashed.
	b := append(sc.buf[:0], "POST\n"...)
	b = append(b, uri...)
	b = append(b, "\n\n"...) // no query
	for _, h := range s.headers {
		b = append(b, h.name...)
		b = append(b, ':')
		switch h.dynamic {
		case dynamicDate:
			b = append(b, amzDate...)
		case dynamicLength:
			b = strconv.AppendInt(b, int64(len(body)), 10)
		case dynamicToken:
			b = append(b, stripSpaces(c.SessionToken)...)
		default:
			b = append(b, h.value...)
		}
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, s.names...)
	b = append(b, '\n')
	b = appendHash(b, body)
	canonical := len(b)
	b = appendHash(b, b)
	hashed := b[canonical:]

	// The string to sign, and its signature.
	scope := len(b)
	b = append(b, day...)
	b = append(b, '/')
	b = append(b, s.region...)
	b = append(b, '/')
	b = append(b, s.service...)
	b = append(b, "/aws4_request"...)
	scopeEnd := len(b)
	toSign := len(b)
	b = append(b, "AWS4-HMAC-SHA256\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, b[scope:scopeEnd]...)
	b = append(b, '\n')
	b = append(b, hashed...)
	mac := s.mac(sc, c.SecretAccessKey, day)
	mac.Reset()
	mac.Write(b[toSign:])
	var signature [2 * sha256.Size]byte
	hex.Encode(signature[:], mac.Sum(sc.sum[:0]))

	// Authorization, then X-Amz-Date, in one string.
	start := len(b)
	b = append(b, "AWS4-HMAC-SHA256 Credential="...)
	b = append(b, c.AccessKeyID...)
	b = append(b, '/')
	b = append(b, b[scope:scopeEnd]...)
	b = append(b, ", SignedHeaders="...)
	b = append(b, s.names...)
	b = append(b, ", Signature="...)
	b = append(b, signature[:]...)
	n := len(b) - start
	b = append(b, amzDate...)
	sc.buf = b[:0]
	both := string(b[start:])
	return both[:n], both[n:]
}

// appendHash appends the hexadecimal SHA-256 of p to b.
func appendHash(b []byte, p []byte) []byte {
	sum := sha256.Sum256(p)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return append(b, text[:]...)
}

// mac is sc's HMAC keyed with the signing key of secret on day, which is
// derived if it is not the last one.
func (s *signer) mac(sc *signScratch, secret string, day []byte) hash.Hash {
	s.mu.Lock()
	if s.key.secret != secret || s.key.date != string(day) {
		s.key = signingKey{secret: secret, date: string(day), key: deriveKey(secret, string(day), s.region, s.service)}
	}
	same := sc.mac != nil && sc.key == s.key.key
	if !same {
		sc.key = s.key.key
	}
	s.mu.Unlock()
	if !same {
		sc.mac = hmac.New(sha256.New, sc.key[:])
	}
	return sc.mac
}

// deriveKey is SigV4's signing key: HMAC-SHA256 of "aws4_request" with
// the key of service, with that of region, with that of day, with
// "AWS4" and the secret key.
func deriveKey(secret, day, region, service string) [sha256.Size]byte {
	k := []byte("AWS4" + secret)
	for _, part := range []string{day, region, service, "aws4_request"} {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(part))
		k = m.Sum(nil)
	}
	return [sha256.Size]byte(k)
}
