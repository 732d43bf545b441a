package webhook

import (
	"errors"
	"net/url"

	"github.com/canaryd/canaryd/internal/outbound"
)

// ErrRefused is wrapped by every error of Check: the URL may not receive
// webhooks. The server answers such a request with a 400.
var ErrRefused = errors.New("webhook URL refused")

// refusal is the error of Check: it is ErrRefused, with the reason. The
// reason never quotes the URL: it may carry a password, or a token in its
// query.
type refusal struct{ reason string }

func (r *refusal) Error() string        { return ErrRefused.Error() + ": " + r.reason }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

func refused(reason string) error { return &refusal{reason} }

// check parses raw and matches it against the allow list. It returns the
// parsed URL when raw may receive webhooks.
func (s *Sender) check(raw string) (*url.URL, error) {
	if s.allow.Empty() {
		return nil, refused("webhooks are disabled: this canaryd allows no destination; its operator enables webhooks with --webhook-allow URL-PREFIX (repeatable)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refused("it is not a valid URL")
	}
	if err := s.checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL is check for a parsed URL, such as a redirect's target.
func (s *Sender) checkURL(u *url.URL) error {
	if reason := s.allow.Refusal(u); reason != "" {
		return refused(advise(reason))
	}
	return nil
}

// advise completes a reason of the allow list with what to do instead.
func advise(reason string) string {
	switch reason {
	case outbound.ReasonCredentials:
		return reason + "; sign deliveries with --webhook-secret-file instead"
	case outbound.ReasonNotAllowed:
		return reason + " (--webhook-allow)"
	}
	return reason
}
