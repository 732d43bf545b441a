// Package providertest is the conformance suite of metric providers: what
// every provider canaryd registers must do, whatever its backend. Run it
// over the service's own registry (cmd/canaryd assembles it), so that a
// provider registered there without passing it fails the build's tests.
//
// Each provider:
//   - declares the languages of its query fields (an empty map when every
//     field is a value) and its credential fields;
//   - masks, by those declarations, every credential its configuration
//     sends (Credentials), and shows none in what its report declares
//     (Report: the queries, a link, a request);
//   - refuses a configuration with an unknown field or of the wrong type
//     with a problem naming the field, under provider.NAME, and builds no
//     source then;
//   - builds a source for a good configuration, whose measurement
//     returns soon after its context is cancelled or its deadline passes,
//     and ends with an error, never a crash or a hang, when its backend
//     answers without end.
package providertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/provider"
)

// Suite is what the conformance suite needs of a service's providers.
type Suite struct {
	// Registry assembles the providers as the service does, each
	// querying backend (an http:// URL) wherever a configuration does not
	// say where to.
	Registry func(backend string) *provider.Registry
	// Configs give, by provider name, a configuration that builds a
	// source querying backend. Every registered provider must have one.
	Configs map[string]func(backend string) json.RawMessage
	// Credentialed give, by provider name, a configuration that holds
	// credentials. Every registered provider that lists credentials
	// (provider.Credentials) must have one.
	Credentialed map[string]json.RawMessage
}

// patience bounds how long a measurement may take to end once it has
// to: its context cancelled, its deadline passed, its backend's answer
// over the provider's bounds.
var patience = 10 * time.Second

// Run runs the suite over every provider s.Registry registers.
func Run(t *testing.T, s Suite) {
	backend := httptest.NewServer(http.HandlerFunc(endless))
	defer backend.Close()
	reg := s.Registry(backend.URL)
	if len(reg.Names()) == 0 {
		t.Fatal("the registry has no provider")
	}
	for _, name := range reg.Names() {
		p, _ := reg.Lookup(name)
		t.Run(name, func(t *testing.T) {
			config, ok := s.Configs[name]
			if !ok {
				t.Fatalf("no configuration of %s: Suite.Configs must have one for every registered provider", name)
			}
			declares(t, p)
			masks(t, name, p, s.Credentialed[name])
			refuses(t, name, p)
			measures(t, name, p, config(backend.URL))
		})
	}
}

// endless answers 200 with a JSON body that never ends, as a broken or
// hostile backend might.
func endless(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
	chunk := []byte(strings.Repeat(`{"metric":{},"value":[1,"1"]},`, 1024))
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// declares: the languages and the credential fields.
func declares(t testing.TB, p provider.Provider) {
	langs := p.Languages()
	if langs == nil {
		t.Error("Languages is nil: a provider whose fields are all values declares an empty map")
	}
	for path, l := range langs {
		if path == "" || l == nil || l.Name() == "" || l.Noun() == "" {
			t.Errorf("Languages: %q is declared %v, which is not a language", path, l)
		}
	}
	for _, f := range p.CredentialFields() {
		if f.Path == "" || strings.HasPrefix(f.Path, ".") || strings.HasSuffix(f.Path, ".") {
			t.Errorf("CredentialFields: %+v has no path", f)
		}
	}
}

// masks: every credential that a configuration sends is masked by the
// fields the provider declares.
func masks(t testing.TB, name string, p provider.Provider, config json.RawMessage) {
	c, lists := p.(provider.Credentials)
	if !lists {
		return
	}
	if config == nil {
		t.Fatalf("%s lists credentials: Suite.Credentialed must have a configuration of it that holds some", name)
	}
	secrets := c.Credentials(config)
	if len(secrets) == 0 {
		t.Fatalf("Credentials lists none of %s", config)
	}
	var tree any
	if err := json.Unmarshal(config, &tree); err != nil {
		t.Fatal(err)
	}
	provider.Mask(tree, p.CredentialFields())
	shown, _ := json.Marshal(tree)
	reported := report(p, config)
	for _, s := range secrets {
		if strings.Contains(string(shown), s) {
			t.Errorf("the credential %q is shown, its field not declared (CredentialFields): %s", s, shown)
		}
		if strings.Contains(reported, s) {
			t.Errorf("the credential %q is in the report: %s", s, reported)
		}
	}
}

// report is all that the report shows of a metric of config beyond its
// measurements, every declared metadata key holding a query.
func report(p provider.Provider, config json.RawMessage) string {
	r := p.Report(config, provider.ReportOptions{Datasource: func(address string) string { return address }})
	md := map[string]string{}
	for _, k := range r.Metadata {
		md[k] = "up"
	}
	var b strings.Builder
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if r.Link != nil {
		b.WriteString(r.Link(md, at, time.Hour) + "\n")
	}
	if r.Request != nil {
		command, note := r.Request(md, at)
		b.WriteString(command + "\n" + note)
	}
	return b.String()
}

// refuses: an unknown field and a value of the wrong type are problems on
// the provider's own fields, and no source is built.
func refuses(t testing.TB, name string, p provider.Provider) {
	for _, bad := range []string{`{"canarydNoSuchField": true}`, `"a string"`, `[1, 2]`} {
		_ = report(p, json.RawMessage(bad)) // declares nothing, without a panic
		source, _, problems := p.Source(json.RawMessage(bad))
		if len(problems) == 0 || source != nil {
			t.Errorf("Source(%s): %d problems and a source %v; want a problem and no source", bad, len(problems), source)
			continue
		}
		for _, e := range problems {
			if e.Field != "provider."+name && !strings.HasPrefix(e.Field, "provider."+name+".") || e.Message == "" {
				t.Errorf("Source(%s): the problem %+v does not name a field of provider.%s", bad, e, name)
			}
		}
	}
}

// measures: a good configuration builds a source; its measurement ends,
// with an error, when its context is cancelled, when the backend's answer
// has no end (the provider's bounds on bytes and values), and when its
// deadline passes.
func measures(t testing.TB, name string, p provider.Provider, config json.RawMessage) {
	source, _, problems := p.Source(config)
	if len(problems) > 0 || source == nil {
		t.Fatalf("Source(%s): %v", config, problems)
	}
	within := func(what string, ctx context.Context) {
		t.Helper()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- source.Measure(ctx, time.Now()).Err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: the measurement has no error", what)
			}
		case <-time.After(patience):
			t.Fatalf("%s: the measurement has not ended after %s", what, time.Since(start))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	within("a cancelled context", ctx)

	within("an endless answer", context.Background())

	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	within("a deadline", ctx)
}
