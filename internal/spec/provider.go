package spec

import "encoding/json"

// Config is the configuration of the provider named name (one of Names),
// as a registry of providers hands it to the provider: its JSON object,
// arguments substituted (plugin's whole object for a plugin).
func (p *MetricProvider) Config(name string) json.RawMessage {
	for _, o := range p.raw() {
		if o.name == name {
			return o.raw
		}
	}
	return p.Plugin
}

// raw lists the providers by their names in the metric (plugin aside:
// each of its entries is a provider).
func (p *MetricProvider) raw() []struct {
	name string
	raw  json.RawMessage
} {
	return []struct {
		name string
		raw  json.RawMessage
	}{
		{"prometheus", p.Prometheus}, {"judge", p.Judge},
		{"kayenta", p.Kayenta}, {"web", p.Web}, {"datadog", p.Datadog}, {"wavefront", p.Wavefront},
		{"newRelic", p.NewRelic}, {"job", p.Job}, {"cloudWatch", p.CloudWatch}, {"graphite", p.Graphite},
		{"influxdb", p.Influxdb}, {"skywalking", p.SkyWalking},
	}
}
