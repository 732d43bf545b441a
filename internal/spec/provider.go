package spec

import "encoding/json"

// Config is the configuration of the provider named name (one of Names),
// as a registry of providers hands it to the provider: typed for
// prometheus (*PrometheusMetric) and judge (*JudgeMetric), whose
// configurations spec decodes, and the JSON object, arguments substituted,
// for every other provider (plugin's whole object for a plugin).
func (p *MetricProvider) Config(name string) any {
	switch name {
	case "prometheus":
		return p.Prometheus
	case "judge":
		return p.Judge
	}
	for _, o := range p.raw() {
		if o.name == name {
			return o.raw
		}
	}
	return p.Plugin
}

// raw lists the providers whose configuration is kept as JSON, by their
// names in the metric (plugin aside: each of its entries is a provider).
func (p *MetricProvider) raw() []struct {
	name string
	raw  json.RawMessage
} {
	return []struct {
		name string
		raw  json.RawMessage
	}{
		{"kayenta", p.Kayenta}, {"web", p.Web}, {"datadog", p.Datadog}, {"wavefront", p.Wavefront},
		{"newRelic", p.NewRelic}, {"job", p.Job}, {"cloudWatch", p.CloudWatch}, {"graphite", p.Graphite},
		{"influxdb", p.Influxdb}, {"skywalking", p.SkyWalking},
	}
}
