// Package redact keeps credentials out of every text canaryd shows: logs,
// errors, problems, resources and webhook statuses. It is the one place
// that decides what looks like a credential and how it is hidden:
//
//   - URLs (URL, URLString): userinfo and fragment dropped, a query
//     replaced whole by Placeholder, since any of its parameters may be a
//     token ("https://hooks.example.com/ci?REDACTED"); in a text shown
//     whole (Userinfo), the userinfo of every URL replaced by Mask;
//   - names (IsSecretName, IsCredentialHeader): the one list of words that
//     make an argument's value or a header's value a secret;
//   - errors (Error, Scrub): the cause of a *url.Error without the URL it
//     quotes, and given secret values replaced by Placeholder.
//
// Values shown whole where a secret may be (arguments named like secrets,
// credential headers, passwords in a template's spec, arguments a store
// keeps in clear) are replaced by Mask, not Placeholder: a spec reads the
// same with it.
package redact

import (
	"cmp"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Placeholder replaces what of a URL or an error text must not be shown.
const Placeholder = "REDACTED"

// Mask replaces a secret value shown whole: an argument's, a header's or a
// password's in a spec as canaryd shows it or a store keeps it, and the
// password of a URL's userinfo there. spec.Masked is the same text.
const Mask = "*****"

// userinfo matches the credentials of a URL (scheme://user:password@) in
// a text, wherever in the text it is.
var userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]+@`)

// Userinfo returns text with the userinfo of every URL in it replaced by
// Mask ("http://*****@prometheus:9090"), the rest as it is: for a value
// shown whole, an argument or a template's address, that may hold a URL
// with credentials.
func Userinfo(text string) string {
	return userinfo.ReplaceAllString(text, "${1}"+Mask+"@")
}

// URL returns u as it may be shown: without userinfo and fragment, and
// with its query, if any, replaced by Placeholder. "" for nil.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" || c.ForceQuery {
		c.RawQuery, c.ForceQuery = Placeholder, false
	}
	return c.String()
}

// URLString is URL for a URL given as text, which may not even parse; the
// text of one that does not is never quoted.
func URLString(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return URL(u)
}

// URLSecrets are the texts of u that must not appear in a message: the
// whole URL, its query, and its userinfo, user name and password. Nil for
// nil.
func URLSecrets(u *url.URL) []string {
	if u == nil {
		return nil
	}
	out := []string{u.String(), u.RawQuery}
	if u.User != nil {
		out = append(out, u.User.String(), u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	return out
}

// Scrub returns msg with every one of secrets in it replaced by
// Placeholder, the longest first, so that a secret holding another is
// replaced whole. Empty secrets are ignored; the caller decides how short
// a secret may be and still be worth hiding.
//
// A message clipped before it is scrubbed (an answer's start quoted, cut
// with Clipped, "…") may end a quote with the start of a secret: the
// longest start of a secret just before a Clipped is replaced too.
func Scrub(msg string, secrets ...string) string {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == "" })
	slices.SortStableFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, Placeholder)
	}
	if !strings.Contains(msg, Clipped) {
		return msg
	}
	for _, s := range secrets {
		msg = scrubClippedStart(msg, s)
	}
	return msg
}

// Clipped ends a text that was cut short.
const Clipped = "…"

// scrubClippedStart replaces, before each Clipped of msg, the longest start
// of secret that the text there ends with.
func scrubClippedStart(msg, secret string) string {
	var b strings.Builder
	rest := msg
	for {
		i := strings.Index(rest, Clipped)
		if i < 0 {
			break
		}
		before := rest[:i]
		for n := len(secret) - 1; n > 0; n-- {
			if strings.HasSuffix(before, secret[:n]) {
				before = before[:len(before)-n] + Placeholder
				break
			}
		}
		b.WriteString(before)
		b.WriteString(Clipped)
		rest = rest[i+len(Clipped):]
	}
	if b.Len() == 0 {
		return msg
	}
	b.WriteString(rest)
	return b.String()
}

// Cause returns the cause of err when err is or wraps a *url.Error, whose
// text quotes the whole URL, query and userinfo included; err otherwise.
func Cause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Error is the text of an error of a request to u that may be shown: the
// cause of its *url.Error (see Cause), with u's secrets (URLSecrets) and
// the given ones scrubbed. "" for nil.
func Error(err error, u *url.URL, secrets ...string) string {
	if err == nil {
		return ""
	}
	return Scrub(Cause(err).Error(), append(URLSecrets(u), secrets...)...)
}

// secretWords make a name a secret's: an argument (IsSecretName) or a
// header (IsCredentialHeader) whose name holds one of them, in any case,
// has a value that is never shown.
var secretWords = []string{"token", "secret", "password", "passwd", "apikey", "api-key", "api_key", "credential", "auth"}

// credentialWords make a header name a credential's besides secretWords:
// X-Api-Key, Cookie, X-Session-Id.
var credentialWords = []string{"key", "cookie", "session"}

// IsSecretName reports whether an argument named name holds a secret
// (api-token, DB_PASSWORD, auth): its value is masked in resources, logs
// and messages.
func IsSecretName(name string) bool {
	return holdsAny(strings.TrimSpace(name), secretWords)
}

// IsCredentialHeader reports whether a header's value is likely a
// credential (Authorization, X-Api-Key, Cookie, …), to be kept out of
// every text shown. It runs on every header of every request, so it does
// not allocate.
func IsCredentialHeader(name string) bool {
	if slices.Contains(plainHeaders[:], name) {
		return false
	}
	return holdsAny(name, secretWords) || holdsAny(name, credentialWords)
}

// plainHeaders are headers that every query carries, as net/http
// spells them, and that hold none of the words: they are answered
// without a search of each word (a query's headers are seen before it is
// sent and again as it was sent, on the path of every measurement).
var plainHeaders = [...]string{"Accept", "Accept-Encoding", "Content-Length", "Content-Type", "User-Agent"}

func holdsAny(s string, words []string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			// As a case-insensitive regular expression would: "\u212a"
			// (the Kelvin sign) is a "k".
			s = strings.Map(foldASCII, s)
			break
		}
	}
	for _, w := range words {
		if containsFold(s, w) {
			return true
		}
	}
	return false
}

// foldASCII is the ASCII letter r is a case of, in lower case, or r.
func foldASCII(r rune) rune {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return unicode.ToLower(f)
		}
	}
	return r
}

// containsFold reports whether s contains word, a lower-case ASCII word,
// in any case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for ; j < len(word); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}
