package store

import (
	"encoding/json"
	"errors"

	"github.com/canaryd/canaryd/api"
)

// Mutation is what one step of an analysis writes to the store, at once
// (Store.Commit): the webhook events it now owes, the measurements that
// finished, the state they led to, and the webhook events done. A replica's
// writer commits one per step, so that what a replica that adopts the
// analysis reads is always one step's whole: never a measurement without
// its state, nor a state without the events it owes.
type Mutation struct {
	// Owed are webhook events to record as owed, each before its first
	// attempt; one already recorded (same webhook id) is left as it is.
	Owed []Delivery
	// Measurements are finished measurements; one already stored (same
	// metric and index) is left as it is.
	Measurements []Measurement
	// State, when set, is the analysis' state after them.
	State *api.Analysis
	// Delivered are the webhook ids of events done: delivered, or given
	// up. One never recorded (delivered before it could be) is skipped.
	Delivered []string
}

// empty says whether m writes nothing.
func (m *Mutation) empty() bool {
	return len(m.Owed) == 0 && len(m.Measurements) == 0 && m.State == nil && len(m.Delivered) == 0
}

// check refuses a mutation no store can write: an owed event that is not
// JSON.
func (m *Mutation) check() error {
	for _, d := range m.Owed {
		if !json.Valid(d.Event) {
			return errors.New("store: a delivery's event must be JSON")
		}
	}
	return nil
}
