package server

import (
	"net/http"

	"github.com/canaryd/canaryd"
	"github.com/canaryd/canaryd/internal/analyses"
)

// Health is the body of /healthz and /readyz when all is well.
type Health struct {
	Status string `json:"status"`
}

// handleHealthz answers while the process can serve at all.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, Health{Status: "ok"})
	})
}

// handleReadyz answers 503 from the moment the service starts draining, so
// that load balancers stop sending it new analyses, and while its store
// (analyses.AnalysesOptions.Store) does not answer.
func handleReadyz(svc *analyses.Analyses) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if svc.Draining() {
			writeProblem(w, r, shuttingDown())
			return
		}
		if svc.StoreReady(r.Context()) != nil {
			writeProblem(w, r, storeUnavailable())
			return
		}
		writeJSON(w, http.StatusOK, Health{Status: "ready"})
	})
}

// handleOpenAPI serves the OpenAPI document the binary was built with.
func handleOpenAPI() http.Handler {
	doc := canaryd.OpenAPI()
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(doc)
	})
}
