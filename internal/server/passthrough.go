package server

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
)

// Replicas no longer forward requests to each other: with a store every
// replica answers from it, and with memory: each answers for the analyses
// it holds. These wrappers of the routes pass every request through as
// it is.

// nameReplica leaves the response as it is: no header names the replica.
func (s *server) nameReplica(next http.Handler) http.Handler { return next }

// atOwner serves a request for one analysis here.
func (s *server) atOwner(next http.Handler) http.Handler { return next }

// acrossReplicas serves the list here.
func (s *server) acrossReplicas(local http.Handler) http.Handler { return local }

// newestFirst sorts analyses as Analyses.List does, newest first, and
// drops repeated ids.
func newestFirst(list []api.Analysis) []api.Analysis {
	started := func(a api.Analysis) time.Time {
		if a.StartedAt == nil {
			return time.Time{}
		}
		return *a.StartedAt
	}
	slices.SortFunc(list, func(x, y api.Analysis) int {
		if c := started(y).Compare(started(x)); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	list = slices.CompactFunc(list, func(x, y api.Analysis) bool { return x.ID == y.ID })
	if list == nil {
		list = []api.Analysis{}
	}
	return list
}
