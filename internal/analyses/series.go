package analyses

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/internal/redact"
)

// A series is the calls that make one analysis over time: Argo Rollouts'
// web provider sends one round a measurement, and the rounds of one
// AnalysisRun are the same call again, interval after interval; Flagger
// calls a gate at every step of a canary. canaryd keeps each round (and
// each gate) as an analysis of its own, and gives the calls that belong
// together one key, api.Analysis.Series, that the list filters on
// (?series=) and the page groups by.
//
// The key is the SHA-256 of
//
//   - the kind of call (round or gate),
//   - the template's name (a named template's, or the posted document's
//     metadata.name) and the SHA-256 of the posted document, if any,
//   - the arguments the caller gave, sorted by name, the values of those
//     named like secrets (redact.IsSecretName) left out and URLs' userinfo
//     redacted, and
//   - the caller: the SHA-256 of the bearer token that let it in (none on
//     an open API),
//
// its first 100 bits written as 20 characters of lower-case base32. It
// holds nothing a reader could recover: no argument, no token.
//
// Two AnalysisRuns that send the same call (the next revision of the same
// Rollout, with the same arguments) share a key; they follow each other
// in time. An argument that differs between them makes the key exact: the
// Rollout's pod-template-hash (args: [{name: canary-hash, valueFrom:
// {podTemplateHashValue: Latest}}], sent as {{args.canary-hash}}), which
// also selects the canary's pods in the query.

// seriesVersion starts the hashed text, so that another key could be made
// one day without colliding with these.
const seriesVersion = "canaryd-series-1"

// SeriesOf is the series key of a call (see above): kind, the template's
// name, the posted document (nil for a named template), the arguments the
// caller gave and the caller's identity (CallerOf).
func SeriesOf(kind, template string, document []byte, args map[string]string, caller string) string {
	h := sha256.New()
	write := func(s string) {
		// Each field is preceded by its length: no two lists of fields
		// write the same bytes.
		var n [8]byte
		for i, l := 0, uint64(len(s)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(seriesVersion)
	write(kind)
	write(template)
	if document != nil {
		sum := sha256.Sum256(document)
		write(hex.EncodeToString(sum[:]))
	} else {
		write("")
	}
	write(caller)
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := redact.Userinfo(args[name])
		if redact.IsSecretName(name) {
			value = ""
		}
		write(name)
		write(value)
	}
	return IDEncoding.EncodeToString(h.Sum(nil))[:SeriesLength]
}

// SeriesLength is the length of a series key: 20 characters of base32,
// 100 bits.
const SeriesLength = 20

// CheckSeries says whether s can be a series key: ?series= is compared
// with keys only when it is one.
func CheckSeries(s string) bool {
	return len(s) == SeriesLength && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz234567") == ""
}

// CallerOf is the identity of a caller let in by token, for its series:
// the token's SHA-256 in hex. Only its hash in the series key leaves the
// process.
func CallerOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
