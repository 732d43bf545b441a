package store

import (
	"fmt"
	"sync"
)

// subscription is one Subscribe's channel. It holds one notification at
// most: a newer one replaces an unread one, since a reader fetches the
// analysis as it is, whatever it missed.
type subscription struct {
	mu     sync.Mutex
	ch     chan Notification
	closed bool
}

func newSubscription() *subscription {
	return &subscription{ch: make(chan Notification, 1)}
}

// notify hands n to the reader without waiting: an unread notification is
// replaced, keeping the lower version when one is 0 (fetch regardless).
func (s *subscription) notify(n Notification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case old := <-s.ch:
		if old.Version == 0 {
			n.Version = 0
		}
	default:
	}
	s.ch <- n
}

func (s *subscription) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// unavailable wraps the failure of an operation on a store that could not
// be reached, or did not answer in time.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
