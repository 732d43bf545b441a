package spec

import "encoding/json"

// The Prometheus and judge configurations as this package's tests write
// and read them: internal/provider/prometheus and internal/provider/judge
// own them, and spec keeps every provider's configuration as its JSON.
type (
	PrometheusMetric struct {
		Address        string                    `json:"address,omitempty"`
		Query          string                    `json:"query,omitempty"`
		Authentication *Authentication           `json:"authentication,omitempty"`
		Timeout        *int64                    `json:"timeout,omitempty"`
		Insecure       bool                      `json:"insecure,omitempty"`
		Headers        []Header                  `json:"headers,omitempty"`
		RangeQuery     *PrometheusRangeQueryArgs `json:"rangeQuery,omitempty"`
	}
	PrometheusRangeQueryArgs struct {
		Start string `json:"start,omitempty"`
		End   string `json:"end,omitempty"`
		Step  string `json:"step,omitempty"`
	}
	Header struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	Authentication struct {
		OAuth2    *OAuth2Config    `json:"oauth2,omitempty"`
		BasicAuth *BasicAuthConfig `json:"basicAuth,omitempty"`
	}
	OAuth2Config struct {
		TokenURL     string   `json:"tokenUrl,omitempty"`
		ClientID     string   `json:"clientId,omitempty"`
		ClientSecret string   `json:"clientSecret,omitempty"`
		Scopes       []string `json:"scopes,omitempty"`
	}
	BasicAuthConfig struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
	}
	JudgeMetric struct {
		Canary   string `json:"canary,omitempty"`
		Baseline string `json:"baseline,omitempty"`
		Control  *struct {
			Offset string `json:"offset,omitempty"`
		} `json:"control,omitempty"`
		Lookback string `json:"lookback,omitempty"`
		Step     string `json:"step,omitempty"`
		Critical bool   `json:"critical,omitempty"`
		Group    string `json:"group,omitempty"`
	}
)

// raw is a configuration's JSON.
func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// prom reads a metric's Prometheus configuration.
func prom(p MetricProvider) *PrometheusMetric {
	var m PrometheusMetric
	if err := json.Unmarshal(p.Prometheus, &m); err != nil {
		panic(err)
	}
	return &m
}

// testLanguages are the languages of the Prometheus and judge providers'
// fields, as those providers declare them.
var testLanguages = map[string]Language{
	"provider.prometheus.query": PromQL, "provider.prometheus.rangeQuery.start": Expr, "provider.prometheus.rangeQuery.end": Expr,
	"provider.judge.canary": PromQL, "provider.judge.baseline": PromQL,
}

// testScored tells a judge metric's group and critical as the judge's
// provider does.
func testScored(m *Metric) Scored {
	if !isSet(m.Provider.Judge) {
		return Scored{}
	}
	var j JudgeMetric
	_ = json.Unmarshal(m.Provider.Judge, &j)
	return Scored{Group: j.Group, Critical: j.Critical, Path: "provider.judge"}
}
