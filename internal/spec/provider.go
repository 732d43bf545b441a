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

// ProviderConfigs are the providers' configurations of a document that
// Parse could not decode, by the path of each relative to the spec
// ("metrics[0].provider.prometheus"), read from the value Parse decoded
// (Value), so that they can be checked by their providers and their
// problems listed with the document's others (unless its apiVersion or
// kind is wrong, which keeps Parse from checking the spec at all): the
// configuration of every metric that names exactly one provider. It
// returns nothing for input that is not a document or a bare spec at all.
func (in *Input) ProviderConfigs() map[string]json.RawMessage {
	obj, ok := in.Value().(map[string]any)
	if !ok {
		return nil
	}
	if isDocument(obj) {
		// A wrong apiVersion or kind: the spec is not checked at all.
		if !(&checker{}).document(obj) {
			return nil
		}
		if obj, ok = obj["spec"].(map[string]any); !ok {
			return nil
		}
	}
	metrics, _ := obj["metrics"].([]any)
	out := map[string]json.RawMessage{}
	for i, m := range metrics {
		metric, _ := m.(map[string]any)
		provider, _ := metric["provider"].(map[string]any)
		var set []string
		for name, v := range provider {
			if v != nil {
				set = append(set, name)
			}
		}
		if len(set) != 1 {
			continue
		}
		if raw, err := json.Marshal(provider[set[0]]); err == nil {
			out[indexPath("metrics", i)+".provider."+set[0]] = raw
		}
	}
	return out
}
