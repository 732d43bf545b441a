package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// TestJSONWritesHTMLCharactersAsTheyAre checks that canaryd's encoding
// writes <, > and & as they are, and otherwise what encoding/json writes.
func TestJSONWritesHTMLCharactersAsTheyAre(t *testing.T) {
	a := api.Analysis{ID: "x", Phase: api.PhaseFailed, Message: `Metric "m" assessed Failed due to failed (2) > failureLimit (1) && <more>`}
	const want = `"message":"Metric \"m\" assessed Failed due to failed (2) > failureLimit (1) && <more>"`

	compact, err := api.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := api.MarshalIndent(a, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var encoded bytes.Buffer
	if err := api.NewEncoder(&encoded).Encode(a); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{
		"Marshal":       string(compact),
		"MarshalIndent": strings.ReplaceAll(string(indented), `": "`, `":"`),
		"NewEncoder":    encoded.String(),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%s wrote %s\nwant it to contain %s", name, got, want)
		}
	}

	// Otherwise the same bytes as encoding/json's.
	std, _ := json.Marshal(a)
	if got := string(compact); got != strings.NewReplacer(`\u003e`, ">", `\u003c`, "<", `\u0026`, "&").Replace(string(std)) {
		t.Errorf("Marshal = %s\nencoding/json = %s", got, std)
	}
	if strings.HasSuffix(string(compact), "\n") || strings.HasSuffix(string(indented), "\n") {
		t.Error("Marshal and MarshalIndent end with a newline; json.Marshal's do not")
	}
	if !strings.HasSuffix(encoded.String(), "}\n") {
		t.Errorf("Encode = %q, want one value and a newline", encoded.String())
	}
	stdIndent, _ := json.MarshalIndent(a, "", "  ")
	if strings.Count(string(indented), "\n") != strings.Count(string(stdIndent), "\n") {
		t.Errorf("MarshalIndent:\n%s\nencoding/json:\n%s", indented, stdIndent)
	}
}
