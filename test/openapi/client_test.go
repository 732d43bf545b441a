package openapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"

	// The runtime of the generated client: imported here so that this
	// module's go.mod and go.sum pin it, and the client is compiled with
	// the modules this module requires, from the module cache.
	_ "github.com/oapi-codegen/runtime"
)

// TestGenerateClient generates a Go client from ../../openapi.yaml with
// oapi-codegen's default options and builds and vets it in a module of
// its own, offline: every module it needs is one this module requires.
func TestGenerateClient(t *testing.T) {
	doc, err := util.LoadSwagger("../../openapi.yaml")
	if err != nil {
		t.Fatalf("oapi-codegen cannot load openapi.yaml: %v", err)
	}
	code, err := codegen.Generate(doc, codegen.Configuration{
		PackageName:         "canaryd",
		Generate:            codegen.GenerateOptions{Client: true, Models: true},
		AllowRemoteRefsFrom: []string{}, // openapi.yaml refers to nothing outside itself
	})
	if err != nil {
		t.Fatalf("oapi-codegen cannot generate a client from openapi.yaml: %v", err)
	}
	// Every operation has its method on the client, and each webhook
	// callback its request builder.
	for _, want := range []string{
		"func (c *Client) CreateAnalysis(", "func (c *Client) CreateTemplateAnalysis(", "func (c *Client) Evaluate(",
		"func (c *Client) EvaluateTemplate(", "func (c *Client) Backtest(", "func (c *Client) BacktestTemplate(",
		"func (c *Client) Gate(", "func (c *Client) TemplateGate(", "func (c *Client) GetAnalysis(",
		"func NewWebhookCallbackRequest(", "func NewTemplateWebhookCallbackRequest(", "func NewTemplateBodyWebhookCallbackRequest(",
	} {
		if !strings.Contains(code, want) {
			t.Errorf("the generated client has no %s", strings.TrimSuffix(want, "("))
		}
	}

	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("client.gen.go", []byte(code))
	write("go.mod", clientGoMod(t, code))
	sums, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", sums)

	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Offline: the modules come from the cache this test's own build
		// filled; -mod=mod lets go add the indirect requirements the
		// client's go.mod leaves out.
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s of the client generated from openapi.yaml: %v\n%s", strings.Join(args, " "), err, excerpt(out, code))
		}
	}
}

// clientGoMod is the go.mod of the generated client: each module it
// imports, at the version this test module requires (its go.mod).
func clientGoMod(t *testing.T, code string) []byte {
	t.Helper()
	pkgs := imports(code)
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.Module.Path}} {{.Module.Version}}"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", pkgs, err)
	}
	var b bytes.Buffer
	b.WriteString("module example.com/canarydclient\n\ngo 1.26\n\n")
	var required []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !slices.Contains(required, line) {
			required = append(required, line)
			b.WriteString("require " + line + "\n")
		}
	}
	if !slices.ContainsFunc(required, func(r string) bool { return strings.HasPrefix(r, "github.com/oapi-codegen/runtime ") }) {
		t.Fatalf("the generated client does not import oapi-codegen's runtime; go.mod:\n%s", b.String())
	}
	return b.Bytes()
}

// imports lists the import paths of a Go file that are not the standard
// library's (their first element has a dot).
func imports(code string) []string {
	var out []string
	_, rest, ok := strings.Cut(code, "\nimport (")
	if !ok {
		return nil
	}
	block, _, _ := strings.Cut(rest, "\n)")
	for _, line := range strings.Split(block, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		path := strings.Trim(fields[len(fields)-1], `"`)
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			out = append(out, path)
		}
	}
	return out
}

// excerpt is the go command's output, with the generated lines it names
// when there are few.
func excerpt(out []byte, code string) string {
	s := string(out)
	if len(s) > 4000 {
		s = s[:4000] + "…"
	}
	lines := strings.Split(code, "\n")
	for _, l := range strings.Split(string(out), "\n") {
		_, rest, ok := strings.Cut(l, "client.gen.go:")
		if !ok {
			continue
		}
		n := 0
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		if n > 0 && n <= len(lines) {
			s += "\n  " + strings.TrimSpace(lines[n-1])
		}
	}
	return s
}
