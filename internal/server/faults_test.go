package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// TestFaultsPrometheus is the fault matrix's Prometheus rows at the
// service: each fault a real Prometheus cannot be made to show, served by
// an httptest server, and the phase and messages an analysis started with
// ?wait=true ends with.
func TestFaultsPrometheus(t *testing.T) {
	vector := func(values ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			samples := make([]string, len(values))
			for i, v := range values {
				samples[i] = fmt.Sprintf(`{"metric":{"pod":"p%d"},"value":[1,%q]}`, i, v)
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(samples, ","))
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc // nil: a closed port
		// extra fields of the metric, after name, condition and provider.
		extra string
		want  api.Phase
		// wantMessage is the analysis' message and wantMeasurement its
		// measurement's; %s stands for the fake Prometheus' URL.
		wantMessage, wantMeasurement string
	}{
		{name: "refusing connections", want: api.PhaseError,
			wantMessage:     `Metric "m" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: Post "%s/api/v1/query": dial tcp %h: connect: connection refused"`,
			wantMeasurement: `Post "%s/api/v1/query": dial tcp %h: connect: connection refused`},
		{name: "answering 503", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}, want: api.PhaseError,
			wantMessage:     `Metric "m" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: server_error: server error: 503"`,
			wantMeasurement: "server_error: server error: 503"},
		{name: "stalling past the timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, extra: `"provider": {"prometheus": {"query": "up", "timeout": 1}}`, want: api.PhaseError,
			wantMessage: `Metric "m" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: Post "%s/api/v1/query": context deadline exceeded"`,
			// The stall would end in an empty answer of its own after
			// 10 s; the message says the 1 s timeout ended it instead.
			wantMeasurement: `Post "%s/api/v1/query": context deadline exceeded`},
		{name: "answering broken JSON", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
		}, want: api.PhaseError,
			wantMessage:     `Metric "m" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: bad_response: unexpected end of JSON input"`,
			wantMeasurement: "bad_response: unexpected end of JSON input"},
		{name: "answering NaN", handler: vector("NaN"), want: api.PhaseFailed,
			wantMessage:     `Metric "m" assessed Failed due to failed (1) > failureLimit (0)`,
			wantMeasurement: ""},
		{name: "answering NaN, noData: Inconclusive", handler: vector("NaN"), extra: `"noData": "Inconclusive"`, want: api.PhaseInconclusive,
			// Argo's run message quotes the last measurement's message,
			// which only Error measurements have in Argo.
			wantMessage:     `Metric "m" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0): "Error Message: no data: the query returned only NaN (noData: Inconclusive)"`,
			wantMeasurement: "no data: the query returned only NaN (noData: Inconclusive)"},
		{name: "answering an empty vector", handler: vector(), want: api.PhaseError,
			wantMessage:     `Metric "m" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: could not evaluate successCondition "result[0] >= 0.99": metric result is nil or empty: no data returned from the metric provider"`,
			wantMeasurement: `could not evaluate successCondition "result[0] >= 0.99": metric result is nil or empty: no data returned from the metric provider`},
		{name: "answering an empty vector, noData: Failed", handler: vector(), extra: `"noData": "Failed"`, want: api.PhaseFailed,
			wantMessage:     `Metric "m" assessed Failed due to failed (1) > failureLimit (0): "Error Message: no data: the query returned an empty result (noData: Failed)"`,
			wantMeasurement: "no data: the query returned an empty result (noData: Failed)"},
		{name: "a healthy answer, for contrast", handler: vector("0.995"), want: api.PhaseSuccessful},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prom *httptest.Server
			if tt.handler == nil {
				prom = httptest.NewServer(http.NotFoundHandler())
				prom.Close()
			} else {
				prom = httptest.NewServer(tt.handler)
				defer prom.Close()
			}
			s := start(t, options{prometheus: []string{prom.URL}})
			fields := `"provider": {"prometheus": {"query": "up"}}`
			switch {
			case strings.HasPrefix(tt.extra, `"provider"`):
				fields = tt.extra
			case tt.extra != "":
				fields += ", " + tt.extra
			}
			body := `{"metrics": [{"name": "m", "consecutiveErrorLimit": 0, "successCondition": "result[0] >= 0.99", ` + fields + `}]}`
			resp := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, body)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", resp.status, resp.body)
			}
			expand := func(s string) string {
				return strings.NewReplacer("%s", prom.URL, "%h", strings.TrimPrefix(prom.URL, "http://")).Replace(s)
			}
			a := resp.analysis(t)
			if a.Phase != tt.want || a.Message != expand(tt.wantMessage) {
				t.Errorf("phase %s, message %q\nwant %s, %q", a.Phase, a.Message, tt.want, expand(tt.wantMessage))
			}
			if ms := a.MetricResults[0].Measurements; len(ms) != 1 || ms[0].Message != expand(tt.wantMeasurement) {
				t.Errorf("measurements %+v, want one with message %q", ms, expand(tt.wantMeasurement))
			}
		})
	}
}

// TestFaultsWebhook is the fault matrix's webhook rows: a receiver that is
// down, slow, or failing then recovering. The analysis' verdict never
// depends on its webhook; the webhook field says how the deliveries went.
func TestFaultsWebhook(t *testing.T) {
	prom := httptest.NewServer(http.HandlerFunc(promAnswer))
	defer prom.Close()
	tests := []struct {
		name    string
		respond func(n int, w http.ResponseWriter) // nil: the receiver is down
		want    api.WebhookStatus                  // URL and LastError aside
		// wantError is how LastError ends: an event given up says how
		// many attempts it took first.
		wantError string
		// wantAttempts is how many attempts the receiver gets; 0 for
		// as many as the retry budget allows.
		wantAttempts int
	}{
		{name: "down", want: api.WebhookStatus{Failed: 1}, wantError: "; last: no response: dial tcp %h: connect: connection refused"},
		{name: "slow, then on time", respond: func(n int, w http.ResponseWriter) {
			if n == 0 {
				time.Sleep(600 * time.Millisecond) // past the 200 ms attempt timeout
			}
			w.WriteHeader(http.StatusNoContent)
		}, want: api.WebhookStatus{Delivered: 1, LastStatus: http.StatusNoContent}, wantAttempts: 2},
		{name: "500, then 200", respond: statuses(http.StatusInternalServerError, http.StatusOK),
			want: api.WebhookStatus{Delivered: 1, LastStatus: http.StatusOK}, wantAttempts: 2},
		{name: "500 for good", respond: statuses(http.StatusInternalServerError),
			want: api.WebhookStatus{Failed: 1, LastStatus: http.StatusInternalServerError}, wantError: "; last: the receiver answered 500 Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t, tt.respond)
			hook := rc.prefix() + "/deploy"
			if tt.respond == nil {
				rc.srv.Close()
			}
			s := start(t, options{prometheus: []string{prom.URL}, webhookAllow: []string{rc.prefix()},
				webhookMaxElapsed: 1500 * time.Millisecond, webhookAttemptTimeout: 200 * time.Millisecond})
			a := s.do(http.MethodPost, "/v1/analyses?wait=true&webhook="+url.QueryEscape(hook), jsonType,
				`{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up"}}}]}`).analysis(t)
			if a.Phase != api.PhaseSuccessful {
				t.Fatalf("analysis %s %q, want Successful whatever its webhook", a.Phase, a.Message)
			}
			st := s.waitWebhook(a.ID, "the delivery to end", func(st api.WebhookStatus) bool { return st.Delivered+st.Failed == 1 })
			want := tt.want
			want.URL = hook
			wantError := strings.ReplaceAll(tt.wantError, "%h", strings.TrimPrefix(rc.srv.URL, "http://"))
			lastError := st.LastError
			st.LastError = ""
			if st != want || !strings.HasSuffix(lastError, wantError) || (wantError == "") != (lastError == "") {
				t.Errorf("webhook %+v with lastError %q\nwant    %+v with lastError ending %q", st, lastError, want, wantError)
			}
			got := rc.deliveries()
			if tt.wantAttempts > 0 && len(got) != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", len(got), tt.wantAttempts)
			}
			for _, d := range got {
				if id := d.header.Get("webhook-id"); id != a.ID+".1" {
					t.Errorf("webhook-id %q, want %s.1 on every attempt", id, a.ID)
				}
			}
		})
	}
}
