package argo

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	argonr "github.com/argoproj/argo-rollouts/metricproviders/newrelic"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"k8s.io/client-go/kubernetes"

	"github.com/canaryd/canaryd/internal/provider/newrelic"
)

// TestNewRelicProvider runs Argo Rollouts' New Relic provider
// (metricproviders/newrelic, its client built as the controller builds
// it, from the profile's Secret, with newrelic-client-go's NerdGraph
// client) and canaryd's on every recorded answer of canaryd's New Relic
// tests, with several conditions, and holds canaryd to Argo's phase,
// value and message, but for the rows of docs/differences.md that say
// where canaryd differs.
func TestNewRelicProvider(t *testing.T) {
	t.Parallel()
	s := newStandIn(t)
	keys := newSecrets(t)
	answers := recorded(t, "newrelic", answer{file: "not_json.html", status: 404})
	templates := make([]string, len(answers))
	for i, a := range answers {
		name := "newrelic-" + strconv.Itoa(i)
		keys.add(t, name, map[string]string{"personal-api-key": "NRAK-0123456789ABCDEFGHIJKLMNOPQ", "account-id": "1234567",
			"base-url-nerdgraph": s.address("newrelic", a) + "/graphql"})
		b, _ := json.Marshal(map[string]string{"profile": name, "query": "FROM Transaction SELECT count(*) SINCE 5 minutes ago"})
		templates[i] = string(b)
	}
	kube := keys.kube()
	ours, err := newrelic.New(newrelic.Options{Credentials: keys.dir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.CloseIdleConnections()

	conditions := [][2]string{
		{"result.count == 10", "result.count != 10"},
		{"result.count == 10 and result['average.duration'] < 15.0", "result.count != 10 or result['average.duration'] >= 15.0"},
		{"result[0].count == 10", "result[2].count < 20"},
		{"result['average.duration'] == nil", "result['average.duration'] != nil"},
		{"", ""},
	}
	// Argo's client retries some answers for seconds (a status of 500,
	// NerdGraph's errors), sleeping between its attempts: Argo's
	// measurements of every answer are taken at once, each in its own
	// goroutine, rather than as many at a time as the test may run.
	argo := make([][]outcome, len(answers))
	var wg sync.WaitGroup
	for i := range answers {
		var provider v1alpha1.NewRelicMetric
		if err := json.Unmarshal([]byte(templates[i]), &provider); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			argo[i] = argoNewRelic(kube, provider, conditions)
		}()
	}
	wg.Wait()
	for i, a := range answers {
		t.Run(a.String(), func(t *testing.T) {
			src, _, errs := ours.Source(json.RawMessage(templates[i]))
			if len(errs) > 0 {
				t.Fatalf("canaryd refuses Argo's template %s: %v", templates[i], errs)
			}
			for j, conds := range conditions {
				got := measureOnce(t, src, conds[0], conds[1])
				compare(t, a, conds, got, argo[i][j], newRelicDiffers)
			}
		})
	}
}

// argoNewRelic measures provider with Argo's New Relic provider once for
// each pair of conditions. An Error that is not the conditions' (a
// status, NerdGraph's errors, a body that does not decode) comes before
// they are read: Argo is asked once for it, since its client retries such
// an answer for seconds.
func argoNewRelic(kube kubernetes.Interface, provider v1alpha1.NewRelicMetric, conditions [][2]string) []outcome {
	var before *outcome
	out := make([]outcome, len(conditions))
	for j, conds := range conditions {
		if before != nil {
			out[j] = *before
			continue
		}
		metric := v1alpha1.Metric{Name: "rate", SuccessCondition: conds[0], FailureCondition: conds[1],
			Provider: v1alpha1.MetricProvider{NewRelic: &provider}}
		client, err := argonr.NewNewRelicAPIClient(metric, kube)
		if err != nil {
			out[j] = outcome{phase: "Argo's client", message: err.Error()}
			continue
		}
		out[j] = argoOutcome(argonr.NewNewRelicProvider(client, quiet()).Run(&v1alpha1.AnalysisRun{}, metric))
		if out[j].phase == string(v1alpha1.AnalysisPhaseError) && !strings.HasPrefix(out[j].message, "could not evaluate ") {
			before = &out[j]
		}
	}
	return out
}

// newRelicDiffers says which row of docs/differences.md an answer's
// outcome in canaryd follows rather than Argo's, and checks canaryd's.
func newRelicDiffers(_ answer, _ [2]string, got, want outcome) (string, bool) {
	const retries = "New Relic's client retries a failed NerdGraph request"
	switch {
	case strings.HasPrefix(want.message, "maximum retries reached: "):
		// A NerdGraph error its client retries (a NRQL timeout, an
		// invalid key answered 200): the same message, without the
		// client's count.
		return retries, got.phase == want.phase && got.message == strings.TrimPrefix(want.message, "maximum retries reached: ")
	case strings.HasSuffix(want.message, " giving up after 4 attempt(s)"):
		// A status its client retries (500, 502 and over): canaryd's
		// message is the status and NerdGraph's words, as the client's
		// when it does not retry.
		return retries, got.phase == want.phase && strings.Contains(got.message, " response returned")
	case strings.Contains(want.message, "nrdb.NRDBResult"):
		// A condition that indexes a row, or a row that does not
		// decode: the message names canaryd's type of a row.
		return typesRow, got.phase == want.phase && got.value == want.value &&
			strings.ReplaceAll(got.message, "map[string]interface {}", "nrdb.NRDBResult") == want.message || sameButTypes(got, want)
	}
	return "", false
}
