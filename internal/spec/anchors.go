package spec

import (
	"errors"
	"unicode/utf8"
)

// maxAnchorErrors bounds the anchors and aliases reported one by one; one
// more error says there are more, and the rest of the input is not read
// (readYAML). A hostile body holds hundreds of thousands of them, and one
// is enough to say what to change.
const maxAnchorErrors = 5

// errAnchors is AnchorError's message when it holds no field error.
var errAnchors = errors.New("YAML anchors and aliases are not accepted")

// anchorAdvice says why anchors are refused and what to do instead.
const anchorAdvice = "canaryd does not accept YAML anchors and aliases (an Argo Rollouts document never needs them, " +
	"and each alias would be copied in full where it is used): write the value out where it is needed"

// clipLength is the most of a caller's text that a message quotes.
const clipLength = 64

// clip shortens s for a message, at a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= clipLength {
		return s
	}
	cut := clipLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
