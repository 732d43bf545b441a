package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// fixture reads a file of testdata/specs.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "specs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustParse parses input that the test expects to be valid.
func mustParse(t testing.TB, input string) *Document {
	t.Helper()
	doc, errs := Parse([]byte(input))
	if len(errs) > 0 {
		t.Fatalf("Parse(%q): unexpected errors:\n%s", input, formatErrors(errs))
	}
	return doc
}

func formatErrors(errs []api.FieldError) string {
	if len(errs) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.Field, e.Message)
	}
	return b.String()
}

// checkErrors fails the test when got is not want, naming the case.
func checkErrors(t *testing.T, name string, got, want []api.FieldError) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ngot\n%swant\n%s", name, formatErrors(got), formatErrors(want))
	}
}

func fe(field, msg string) api.FieldError { return api.FieldError{Field: field, Message: msg} }

func intOrStr(i int32) *IntOrString { return &IntOrString{Int: i} }

func strOrStr(s string) *IntOrString { return &IntOrString{IsString: true, Str: s} }

// testSecret holds secret the arguments whose names say they are, as a
// service's ResolveOptions.SecretArg does (internal/compile.IsSecretArg):
// these tests name them api-token, password, canaryd-token.
func testSecret(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "token") || strings.Contains(n, "password") || strings.Contains(n, "secret")
}

// resolveArgs resolves s with overrides as the command line does, without
// bounds, arguments named like secrets (testSecret) secret.
func resolveArgs(s *Spec, overrides map[string]string) (*Spec, []api.FieldError) {
	res, errs := s.Resolve(overrides, ResolveOptions{SecretArg: testSecret, Conditions: Expr, Languages: testLanguages})
	if res == nil {
		return nil, errs
	}
	return res.Spec, errs
}
