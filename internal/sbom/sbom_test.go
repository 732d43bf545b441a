package sbom

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

var testBinary = Binary{
	Name:     "canaryd_v1.2.3_linux_arm64",
	FileName: "canaryd",
	Version:  "v1.2.3",
	Commit:   "0123456789abcdef0123456789abcdef01234567",
	SHA256:   strings.Repeat("ab", 32),
	Created:  time.Date(2026, 11, 28, 9, 0, 0, 0, time.FixedZone("CET", 3600)),
	Tool:     "canaryd-writesbom-v1.2.3",
}

func testInfo() *debug.BuildInfo {
	return &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "github.com/canaryd/canaryd/cmd/canaryd",
		Main:      debug.Module{Path: "github.com/canaryd/canaryd", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "go.uber.org/zap", Version: "v1.28.0", Sum: "h1:x"},
			{Path: "github.com/BurntSushi/toml", Version: "v1.4.0"},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/new", Version: "v1.0.1"}},
			{Path: "example.com/local", Version: "v0.0.0", Replace: &debug.Module{Path: "../local"}},
			// Two paths that map to one identifier.
			{Path: "example.com/a_b", Version: "v1.0.0"},
			{Path: "example.com/a-b", Version: "v1.0.0"},
		},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"}, {Key: "CGO_ENABLED", Value: "0"},
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}, {Key: "-ldflags", Value: "-s -w"},
		},
	}
}

func TestSPDX(t *testing.T) {
	doc, err := SPDX(testInfo(), testBinary)
	if err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.Name != testBinary.Name {
		t.Errorf("document header: %+v", doc)
	}
	if want := "https://github.com/canaryd/canaryd/spdx/canaryd_v1.2.3_linux_arm64-" + testBinary.SHA256; doc.DocumentNamespace != want {
		t.Errorf("documentNamespace %q, want %q", doc.DocumentNamespace, want)
	}
	if doc.CreationInfo.Created != "2026-11-28T08:00:00Z" {
		t.Errorf("created %q, want UTC to the second", doc.CreationInfo.Created)
	}

	type want struct {
		version, location, purl, comment string
	}
	wants := map[string]want{
		"github.com/canaryd/canaryd": {"v1.2.3", "git+https://github.com/canaryd/canaryd@" + testBinary.Commit, "pkg:golang/github.com/canaryd/canaryd@v1.2.3", "built with go1.26.8 (-trimpath=true CGO_ENABLED=0 GOOS=linux GOARCH=arm64)"},
		"go.uber.org/zap":            {"v1.28.0", "https://proxy.golang.org/go.uber.org/zap/@v/v1.28.0.zip", "pkg:golang/go.uber.org/zap@v1.28.0", ""},
		// The proxy's case encoding.
		"github.com/BurntSushi/toml": {"v1.4.0", "https://proxy.golang.org/github.com/!burnt!sushi/toml/@v/v1.4.0.zip", "pkg:golang/github.com/BurntSushi/toml@v1.4.0", ""},
		// A replaced module is its replacement.
		"example.com/new": {"v1.0.1", "https://proxy.golang.org/example.com/new/@v/v1.0.1.zip", "pkg:golang/example.com/new@v1.0.1", "replaces example.com/old@v1.0.0"},
		"../local":        {"", "NOASSERTION", "", "replaces example.com/local@v0.0.0; from a local directory"},
		"example.com/a_b": {"v1.0.0", "https://proxy.golang.org/example.com/a_b/@v/v1.0.0.zip", "pkg:golang/example.com/a_b@v1.0.0", ""},
		"example.com/a-b": {"v1.0.0", "https://proxy.golang.org/example.com/a-b/@v/v1.0.0.zip", "pkg:golang/example.com/a-b@v1.0.0", ""},
		"stdlib":          {"go1.26.8", "https://go.dev/dl/", "pkg:golang/stdlib@1.26.8", "the Go standard library and runtime linked into the binary"},
	}
	if len(doc.Packages) != len(wants) {
		t.Errorf("%d packages, want %d", len(doc.Packages), len(wants))
	}
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		w, ok := wants[p.Name]
		if !ok {
			t.Errorf("unexpected package %q", p.Name)
			continue
		}
		got := want{p.VersionInfo, p.DownloadLocation, "", p.Comment}
		if len(p.ExternalRefs) == 1 {
			got.purl = p.ExternalRefs[0].ReferenceLocator
		}
		if got != w {
			t.Errorf("package %s:\n got %+v\nwant %+v", p.Name, got, w)
		}
		if ids[p.SPDXID] || strings.Trim(p.SPDXID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != "" {
			t.Errorf("package %s: SPDXID %q repeated or not of letters, digits, '.' and '-'", p.Name, p.SPDXID)
		}
		ids[p.SPDXID] = true
	}
	main := doc.Packages[0]
	if main.Checksums[0] != (Checksum{"SHA256", testBinary.SHA256}) || main.PackageFileName != "canaryd" || main.PrimaryPackagePurpose != "APPLICATION" {
		t.Errorf("the main package: %+v", main)
	}

	// The document describes the main package, which depends on every
	// other one.
	if len(doc.Relationships) != len(doc.Packages) {
		t.Fatalf("%d relationships for %d packages", len(doc.Relationships), len(doc.Packages))
	}
	if r := doc.Relationships[0]; r != (Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID}) {
		t.Errorf("first relationship %+v", r)
	}
	for i, r := range doc.Relationships[1:] {
		if r != (Relationship{main.SPDXID, "DEPENDS_ON", doc.Packages[i+1].SPDXID}) {
			t.Errorf("relationship %+v, want %s DEPENDS_ON %s", r, main.SPDXID, doc.Packages[i+1].SPDXID)
		}
	}

	// The same binary, the same bytes.
	again, _ := SPDX(testInfo(), testBinary)
	a, _ := json.Marshal(doc)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("two documents of one binary differ")
	}
}

func TestSPDXRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		info func(*debug.BuildInfo) *debug.BuildInfo
		bin  func(Binary) Binary
		want string
	}{
		{"no build information", func(*debug.BuildInfo) *debug.BuildInfo { return nil }, nil, "no main module"},
		{"no main module", func(i *debug.BuildInfo) *debug.BuildInfo { i.Main = debug.Module{}; return i }, nil, "no main module"},
		{"no version", nil, func(b Binary) Binary { b.Version = ""; return b }, "a name and a version"},
		{"no name", nil, func(b Binary) Binary { b.Name = ""; return b }, "a name and a version"},
		{"short checksum", nil, func(b Binary) Binary { b.SHA256 = "abc"; return b }, "not a hex SHA-256"},
		{"upper-case checksum", nil, func(b Binary) Binary { b.SHA256 = strings.Repeat("AB", 32); return b }, "not a hex SHA-256"},
	} {
		info, bin := testInfo(), testBinary
		if tc.info != nil {
			info = tc.info(info)
		}
		if tc.bin != nil {
			bin = tc.bin(bin)
		}
		_, err := SPDX(info, bin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
