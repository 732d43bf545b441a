package server

import (
	"fmt"
	"net/http"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge/countjson"
	"github.com/canaryd/canaryd/internal/spec"
)

// handleJudge runs the judge's sequential count test on the posted looks,
// with the baseline's history when posted (judge.CountConfig.History), as
// `canaryd judge` does on its input, and answers with the same lines as
// a JSON array (countjson.Request.AppendResults): one a look, up to the
// first decision (every look when all), the last carrying the last look's
// rule (CountTest.Conclude) when no look decided. Bad input is a 400
// naming the field, looks and the history's intervals by index
// (looks[6].canary.bad, history[2].bad; countjson.ParseRequest); nothing
// is judged then. The looks, and the history's intervals, are bounded by
// the body's size and by maxLooks each, the requests judged at once by the
// decode slots (a 429 beyond them).
func handleJudge(in *inputReader, maxLooks int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isJSON, p := bodyMediaType(r)
		if p == nil && !isJSON {
			p = ptr(problem(http.StatusUnsupportedMediaType, ProblemUnsupportedMedia,
				fmt.Sprintf("Content-Type %q is not accepted; send the looks as application/json", r.Header.Get("Content-Type"))))
		}
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		body, p := in.readBody(w, r)
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		// A body of looks takes a decode slot as a spec's does: decoding
		// a MiB of looks and judging them holds a few MB.
		if p := in.acquireDecode(r.Context()); p != nil {
			writeProblem(w, r, *p)
			return
		}
		defer in.decodes.release()
		if err := spec.CheckJSON(body); err != nil {
			writeProblem(w, r, invalidInput([]api.FieldError{inBody(api.FieldError{Field: fieldBody, Message: err.Error()})}))
			return
		}
		req, errs := countjson.ParseRequest(body, maxLooks)
		if len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		out, errs := req.AppendResults(nil)
		if len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		w.Header().Set("Content-Type", jsonContentType)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out) // the client may be gone
	})
}
