package provider

import "time"

// Report is what the report of an analysis shows of a metric beyond its
// measurements, as its provider declares it (Provider.Report): the
// queries its measurements carry, a link to the backend's own view, and
// the request to run by hand. Nothing in it holds a credential. The zero
// Report shows nothing more.
type Report struct {
	// Metadata are the keys of a measurement's metadata that the report
	// lists as the metric's queries, in order
	// ("ResolvedPrometheusQuery").
	Metadata []string
	// Link, when set, links to the backend's view of a measurement, from
	// the metric result's metadata, at its time, over span; "" for none.
	Link func(metadata map[string]string, at time.Time, span time.Duration) string
	// Request, when set, is a measurement's request as a command to run
	// by hand, every credential a placeholder, with a note on what it
	// leaves out; "" for none.
	Request func(metadata map[string]string, at time.Time) (command, note string)
}

// ReportOptions are what a provider's Report needs of the service.
type ReportOptions struct {
	// Datasource gives the base URL at which a metric with this address
	// is queried, as a report may show it ("" when it is not known, or
	// for no address, the default datasource's).
	Datasource func(address string) string
	// Secrets are values that must not be shown: the secret arguments'
	// values the spec was resolved with.
	Secrets []string
}
