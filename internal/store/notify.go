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

// subscribers are a store's subscriptions by analysis id, at most max of
// them. The store calls every method with its own lock held.
type subscribers struct {
	max  int
	byID map[string]map[*subscription]struct{}
	n    int
}

func newSubscribers(max int) subscribers {
	return subscribers{max: max, byID: map[string]map[*subscription]struct{}{}}
}

// add subscribes to id, refusing ErrTooManySubscribers beyond max.
func (ss *subscribers) add(id string) (*subscription, error) {
	if ss.n >= ss.max {
		return nil, ErrTooManySubscribers
	}
	s := newSubscription()
	if ss.byID[id] == nil {
		ss.byID[id] = map[*subscription]struct{}{}
	}
	ss.byID[id][s] = struct{}{}
	ss.n++
	return s, nil
}

// remove ends s, once.
func (ss *subscribers) remove(id string, s *subscription) {
	if _, ok := ss.byID[id][s]; !ok {
		return
	}
	delete(ss.byID[id], s)
	if len(ss.byID[id]) == 0 {
		delete(ss.byID, id)
	}
	ss.n--
	s.close()
}

// notify tells the subscriptions of id.
func (ss *subscribers) notify(id string, version int64) {
	for s := range ss.byID[id] {
		s.notify(Notification{ID: id, Version: version})
	}
}

// missed tells every subscription that it may have missed notifications.
func (ss *subscribers) missed() {
	for id := range ss.byID {
		ss.notify(id, 0)
	}
}

// closeAll ends every subscription.
func (ss *subscribers) closeAll() {
	for id, set := range ss.byID {
		for s := range set {
			s.close()
		}
		delete(ss.byID, id)
	}
	ss.n = 0
}

// unavailable wraps the failure of an operation on a store that could not
// be reached, or did not answer in time.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
