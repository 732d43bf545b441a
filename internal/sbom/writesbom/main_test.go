package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/sbom"
)

// TestRun writes the document of this test binary, which holds build
// information as any Go binary does.
func TestRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SOURCE_DATE_EPOCH": "1795856400"}
	out := filepath.Join(t.TempDir(), "sbom.spdx.json")
	args := []string{"-name", "canaryd_v1.2.3_linux_amd64", "-version", "v1.2.3", "-commit", "abc", "-o", out, self}
	now := func() time.Time { t.Fatal("SOURCE_DATE_EPOCH is set: the clock must not be read"); return time.Time{} }
	if err := run(args, func(k string) string { return env[k] }, nil, now); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc sbom.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-11-28T09:00:00Z" {
		t.Errorf("spdxVersion %q, created %q", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	main := doc.Packages[0]
	if main.Name != "github.com/canaryd/canaryd" || main.VersionInfo != "v1.2.3" || main.PackageFileName != filepath.Base(self) {
		t.Errorf("main package %+v", main)
	}

	// Standard output, and the clock, without -o and SOURCE_DATE_EPOCH.
	var stdout bytes.Buffer
	at := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := run(args[:6], func(string) string { return "" }, &stdout, func() time.Time { return at }); err == nil {
		t.Errorf("no binary: want an error")
	}
	if err := run(append(args[:6:6], self), func(string) string { return "" }, &stdout, func() time.Time { return at }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"created": "2027-01-02T03:04:05Z"`) {
		t.Errorf("standard output has not the clock's time:\n%.400s", stdout.String())
	}

	for _, bad := range []map[string]string{{"SOURCE_DATE_EPOCH": "yesterday"}} {
		if err := run(args, func(k string) string { return bad[k] }, nil, time.Now); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
			t.Errorf("%v: error %v, want one naming SOURCE_DATE_EPOCH", bad, err)
		}
	}
	if err := run(append(args[:6:6], filepath.Join(t.TempDir(), "missing")), os.Getenv, nil, time.Now); err == nil {
		t.Errorf("a missing binary: want an error")
	}
}
