package server

import (
	"github.com/canaryd/canaryd/api"
)

// round is the body of the evaluate endpoints: the evaluated round as an
// analysis whose every key is present, empty or not. Argo Rollouts' web
// provider reads one value of it with a jsonPath, and a path that finds no
// key is an Error measurement ("Could not find JSONPath in body") rather
// than an empty result: `{$.message}` must find "" on a Successful round,
// and `{$.metricResults[0].measurements[0].metadata}` must find {}.
//
// The types embed the api types and shadow only the fields whose key
// would be omitted when empty (encoding/json takes the shallower of two
// fields of one name), so that whatever the api types gain is answered
// too. The times are always set on a round; they keep omitempty because
// null is no date-time.
type round struct {
	api.Analysis
	Message       string            `json:"message"`
	Template      string            `json:"template"`
	Args          map[string]string `json:"args"`
	MetricResults []roundMetric     `json:"metricResults"`
}

// roundMetric is api.MetricResult with every key present.
type roundMetric struct {
	api.MetricResult
	Message      string             `json:"message"`
	Metadata     map[string]string  `json:"metadata"`
	Measurements []roundMeasurement `json:"measurements"`
}

// roundMeasurement is api.Measurement with every key present.
type roundMeasurement struct {
	api.Measurement
	Message  string            `json:"message"`
	Metadata map[string]string `json:"metadata"`
}

// roundOf renders an evaluated round.
func roundOf(a api.Analysis) round {
	out := round{
		Analysis:      a,
		Message:       a.Message,
		Template:      a.Template,
		Args:          orEmpty(a.Args),
		MetricResults: make([]roundMetric, len(a.MetricResults)),
	}
	for i, m := range a.MetricResults {
		rm := roundMetric{
			MetricResult: m,
			Message:      m.Message,
			Metadata:     orEmpty(m.Metadata),
			Measurements: make([]roundMeasurement, len(m.Measurements)),
		}
		for j, ms := range m.Measurements {
			rm.Measurements[j] = roundMeasurement{Measurement: ms, Message: ms.Message, Metadata: orEmpty(ms.Metadata)}
		}
		out.MetricResults[i] = rm
	}
	return out
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
