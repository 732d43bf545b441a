package newrelic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRegions: region picks NerdGraph's address (newrelic-client-go's),
// a region the client does not know is the US's, as in Argo, and
// base-url-nerdgraph wins over both.
func TestRegions(t *testing.T) {
	for _, tt := range []struct{ region, base, want string }{
		{"", "", "https://api.newrelic.com/graphql"},
		{"us", "", "https://api.newrelic.com/graphql"},
		{"EU", "", "https://api.eu.newrelic.com/graphql"},
		{"prod", "", "https://api.newrelic.com/graphql"},
		{"eu", "https://nerdgraph.example/graphql", "https://nerdgraph.example/graphql"},
	} {
		e, err := newEndpoint("newrelic", keys{apiKey: "k", accountID: "1", region: tt.region, nerdGraph: tt.base})
		if err != nil || e.url.String() != tt.want {
			t.Errorf("region %q, base %q: %v %v; want %s", tt.region, tt.base, e, err, tt.want)
		}
	}
}

// TestDecodeAnswer: the decoder of the usual answer reads every recorded
// answer as encoding/json does, or leaves it to encoding/json.
func TestDecodeAnswer(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*") // the recorded answers, not the fuzz corpus
	extra := [][]byte{
		[]byte(`{"data":{"actor":{"account":{"nrql":{"results":[{"a":{"b":[1,"x",true,null]},"c":-1.5e3}]}}}},"extensions":{"x":[1,{"y":"}"}]}}`),
		[]byte(`{"Data":{"Actor":{"Account":{"Nrql":{"Results":[{"k":"v\"q"}]}}}}}`),
		[]byte(`{"errors":null,"data":null}`),
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, b)
	}
	for _, body := range extra {
		var fast, slow answer
		ok := decodeAnswer(body, &fast)
		err := json.Unmarshal(body, &slow)
		for _, a := range []*answer{&fast, &slow} { // an empty list is as good as none
			if len(a.Errors) == 0 {
				a.Errors = nil
			}
			if len(a.Data.Actor.Account.NRQL.Results) == 0 {
				a.Data.Actor.Account.NRQL.Results = nil
			}
		}
		if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
			t.Errorf("%s: decoded %+v; encoding/json %+v, %v", body, fast, slow, err)
		}
	}
}
