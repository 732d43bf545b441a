package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
)

// storedProblem maps an error of the store (an analyses.StoreError) to the problem
// of a request; false for any other error.
func storedProblem(err error) (api.Problem, bool) {
	var se *analyses.SecretError
	var fe *analyses.FilterError
	var st *analyses.StoreError
	if !errors.As(err, &st) {
		return api.Problem{}, false
	}
	switch {
	case errors.As(err, &se):
		return invalid("the request holds a secret the store cannot keep", []api.FieldError{{Field: se.Field, Message: se.Error()}}), true
	case errors.As(err, &fe):
		return invalid("the list's query has a problem", []api.FieldError{{Field: fe.Field, Message: fe.Message}}), true
	}
	return storeUnavailable(), true
}

// handedOver is the 503 of a wait on an analysis that this replica
// stopped running (it shuts down, or lost the lease): another replica
// goes on with it.
func handedOver() api.Problem {
	return problem(http.StatusServiceUnavailable, ProblemShuttingDown,
		"this replica stopped running the analysis (it is shutting down, or another replica took it over); the analysis goes on: GET its Location for its result")
}

// storeUnavailable is the 503 of a request the store could not answer.
func storeUnavailable() api.Problem {
	return problem(http.StatusServiceUnavailable, ProblemStoreUnavailable,
		"the store (--store) does not answer; retry later")
}

// ProblemStoreUnavailable is the 503 of a request that needs the store
// while it does not answer; it carries Retry-After.
const ProblemStoreUnavailable = typePrefix + "store-unavailable"

// tooManyRounds is the 429 beyond MaxRounds.
func tooManyRounds(max int64) api.Problem {
	return problem(http.StatusTooManyRequests, ProblemTooManyAnalyses, fmt.Sprintf(
		"%d rounds and gates are being answered, the most this canaryd answers at once (--max-rounds); retry later", max))
}
