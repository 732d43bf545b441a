package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/canaryd/canaryd/internal/analyses"
)

// Tokens is the set of bearer tokens the /v1 API accepts. It can be
// replaced while the server runs (a reloaded --auth-token-file): each
// request checks against the set as it stands when the request arrives.
// An empty set lets every request in, so Replace refuses one: a set that
// turned empty by mistake must not open the API.
//
// Only SHA-256 digests of the tokens are kept, and a presented token is
// compared with every one of them in constant time, so that neither the
// time taken nor an early exit tells how much of a guess was right.
type Tokens struct {
	digests atomic.Pointer[[][sha256.Size]byte]
}

// errNoTokens is Replace's error for an empty set.
var errNoTokens = errors.New("server: an empty set of auth tokens would let every request in")

// NewTokens returns the set of tokens; with none, every request is let in
// (the API is open), and Replace can never close it.
func NewTokens(tokens []string) (*Tokens, error) {
	t := &Tokens{}
	digests, err := digest(tokens)
	if err != nil {
		return nil, err
	}
	t.digests.Store(&digests)
	return t, nil
}

// Replace makes tokens the accepted set. It refuses an empty set, an empty
// token, and a server started open (without tokens), leaving the set as it
// was.
func (t *Tokens) Replace(tokens []string) error {
	if len(*t.digests.Load()) == 0 {
		return errors.New("server: the API was started without auth tokens; restart it to require them")
	}
	if len(tokens) == 0 {
		return errNoTokens
	}
	digests, err := digest(tokens)
	if err != nil {
		return err
	}
	t.digests.Store(&digests)
	return nil
}

// Len returns how many tokens are accepted.
func (t *Tokens) Len() int { return len(*t.digests.Load()) }

func digest(tokens []string) ([][sha256.Size]byte, error) {
	out := make([][sha256.Size]byte, 0, len(tokens))
	for _, tok := range tokens {
		if tok == "" {
			return nil, errors.New("server: an empty auth token would let every request in")
		}
		out = append(out, sha256.Sum256([]byte(tok)))
	}
	return out, nil
}

// Accepts reports whether token is one of the set, in constant time over
// the whole set.
func (t *Tokens) Accepts(token string) bool {
	sum := sha256.Sum256([]byte(token))
	match := 0
	for _, d := range *t.digests.Load() {
		match |= subtle.ConstantTimeCompare(sum[:], d[:])
	}
	return match == 1
}

// requireToken lets a request through only with one of the tokens as its
// bearer token. A server started without tokens lets everything through.
func requireToken(tokens *Tokens) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tokens.Len() == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
				writeProblem(w, r, problem(http.StatusUnauthorized, ProblemUnauthorized,
					"this canaryd requires a bearer token: send Authorization: Bearer <token>"))
				return
			}
			if !tokens.Accepts(strings.TrimSpace(token)) {
				writeProblem(w, r, problem(http.StatusUnauthorized, ProblemUnauthorized, "the bearer token is not valid"))
				return
			}
			infoOf(r).caller = analyses.CallerOf(strings.TrimSpace(token))
			next.ServeHTTP(w, r)
		})
	}
}
