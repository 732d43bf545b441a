package recipes

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// tested names every file of deploy/examples but Markdown and the test
// that runs it. A file added without a test fails TestEveryExampleIsTested.
var tested = map[string]string{
	"argo/analysistemplate.yaml":         "test/argo TestWebMetricProvider",
	"argo/rollout.yaml":                  "test/argo TestWebMetricProvider",
	"argo/secret.yaml":                   "test/argo TestWebMetricProvider",
	"flagger/canary.yaml":                "TestFlagger",
	"github-actions/canary-gate.yml":     "TestGitHubActions",
	"gitlab-ci/.gitlab-ci.yml":           "TestGitLabCI",
	"spinnaker/orca-local.yml":           "TestSpinnaker",
	"spinnaker/pipeline.json":            "TestSpinnaker",
	"spinnaker/webhook-stage.json":       "TestSpinnaker",
	"tekton/task.yaml":                   "TestTekton",
	"tekton/taskrun.yaml":                "TestTekton",
	"templates/canary-success-rate.yaml": "test/argo TestWebMetricProvider",
	"templates/success-rate-round.yaml":  "TestFlagger (served by every test's canaryd)",
}

// TestEveryExampleIsTested lists deploy/examples and checks that each file
// has a test, and that every YAML and JSON file parses: each YAML document
// of it, and the whole of a JSON file.
func TestEveryExampleIsTested(t *testing.T) {
	root := examplesDir(t)
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if filepath.Ext(rel) != ".md" {
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	seen := map[string]bool{}
	for _, rel := range found {
		seen[rel] = true
		if _, ok := tested[rel]; !ok {
			t.Errorf("deploy/examples/%s has no test: add one to test/recipes (or test/argo) and list it in tested", rel)
		}
		if strings.HasSuffix(rel, ".go") {
			t.Errorf("deploy/examples/%s: no Go files here, deploy is a module of its own", rel)
		}
		b := readExample(t, rel)
		switch filepath.Ext(rel) {
		case ".yaml", ".yml":
			dec := yaml.NewDecoder(bytes.NewReader(b))
			for n := 1; ; n++ {
				var v any
				err := dec.Decode(&v)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Errorf("%s: document %d: %v", rel, n, err)
					break
				}
			}
		case ".json":
			if !json.Valid(b) {
				t.Errorf("%s: invalid JSON", rel)
			}
		}
	}
	for rel := range tested {
		if !seen[rel] {
			t.Errorf("tested lists %s, which deploy/examples no longer has", rel)
		}
	}
}
