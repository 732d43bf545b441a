package release

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/test/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// TestDist runs `make dist` for this machine's target and checks each file
// it makes as a user of the release would use it.
func TestDist(t *testing.T) {
	dist := harness.Release(t)
	name := "canaryd_" + harness.ReleaseVersion + "_" + strings.ReplaceAll(harness.DistTarget(), "/", "_")
	archive, sbomFile := name+".tar.gz", name+".spdx.json"

	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := []string{"SHA256SUMS", sbomFile, archive}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("make dist made %v, want %v", got, want)
	}

	// SHA256SUMS: sha256sum -c accepts it, and it names the archive and
	// the SBOM.
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^[0-9a-f]{64}  (\S+)$`)
	var summed []string
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("SHA256SUMS line %q is not sha256sum's", l)
			continue
		}
		summed = append(summed, m[1])
	}
	if strings.Join(summed, " ") != archive+" "+sbomFile {
		t.Errorf("SHA256SUMS sums %v, want %s and %s", summed, archive, sbomFile)
	}
	if out, err := command(t, dist, "sha256sum", "-c", "SHA256SUMS"); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}
	// A damaged download fails the check.
	damaged := t.TempDir()
	for _, f := range []string{"SHA256SUMS", sbomFile} {
		copyFile(t, filepath.Join(dist, f), filepath.Join(damaged, f))
	}
	if err := os.WriteFile(filepath.Join(damaged, archive), []byte("not the archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := command(t, damaged, "sha256sum", "-c", "--ignore-missing", "SHA256SUMS"); err == nil {
		t.Errorf("sha256sum -c passed a damaged archive:\n%s", out)
	}

	// The archive: the binary alone, executable, owned by root.
	listing, err := command(t, dist, "tar", "-tvzf", archive, "--numeric-owner")
	if err != nil {
		t.Fatalf("tar -t: %v\n%s", err, listing)
	}
	if f := strings.Fields(listing); len(f) != 6 || f[0] != "-rwxr-xr-x" || f[1] != "0/0" || f[5] != "canaryd" {
		t.Errorf("the archive holds:\n%s\nwant canaryd alone, -rwxr-xr-x 0/0", listing)
	}
	dir := t.TempDir()
	if out, err := command(t, dir, "tar", "-xzf", filepath.Join(dist, archive)); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "canaryd")
	version, err := command(t, dir, bin, "version")
	if err != nil {
		t.Fatalf("canaryd version: %v\n%s", err, version)
	}
	wantVersion := regexp.MustCompile(`^canaryd ` + regexp.QuoteMeta(harness.ReleaseVersion) + `\ncommit: [0-9a-f]{40}\ngo: go1\.\S+ ` + regexp.QuoteMeta(harness.DistTarget()) + `\n$`)
	if !wantVersion.MatchString(version) {
		t.Errorf("canaryd version printed:\n%s\nwant it to match %s", version, wantVersion)
	}
	// Static and trimmed, as the Makefile builds it, whatever the
	// environment of make (make test runs the tests with CGO_ENABLED=1).
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	// (-trimpath leaves -ldflags out of them; canaryd version shows
	// what -X set.)
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings %v: want CGO_ENABLED=0 and -trimpath", settings)
	}

	checkSBOM(t, filepath.Join(dist, sbomFile), name, bin, info)
}

// checkSBOM checks the SPDX document of the binary bin: SPDX 2.3, the main
// package at the release's version with the binary's checksum, and every
// module the binary links, at the version go.mod requires.
func checkSBOM(t *testing.T, path, name, bin string, info *buildinfo.BuildInfo) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion       string `json:"spdxVersion"`
		DataLicense       string `json:"dataLicense"`
		SPDXID            string `json:"SPDXID"`
		Name              string `json:"name"`
		DocumentNamespace string `json:"documentNamespace"`
		CreationInfo      struct {
			Created  string   `json:"created"`
			Creators []string `json:"creators"`
		} `json:"creationInfo"`
		Packages []struct {
			Name        string `json:"name"`
			SPDXID      string `json:"SPDXID"`
			VersionInfo string `json:"versionInfo"`
			Checksums   []struct {
				Algorithm     string `json:"algorithm"`
				ChecksumValue string `json:"checksumValue"`
			} `json:"checksums"`
		} `json:"packages"`
		Relationships []struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
			Related string `json:"relatedSpdxElement"`
		} `json:"relationships"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s is not JSON: %v", filepath.Base(path), err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.Name != name ||
		!strings.HasPrefix(doc.DocumentNamespace, "https://") || doc.CreationInfo.Created == "" || len(doc.CreationInfo.Creators) == 0 {
		t.Errorf("the SBOM's header: spdxVersion %q, dataLicense %q, SPDXID %q, name %q, documentNamespace %q, creationInfo %+v",
			doc.SPDXVersion, doc.DataLicense, doc.SPDXID, doc.Name, doc.DocumentNamespace, doc.CreationInfo)
	}
	if len(doc.Packages) == 0 {
		t.Fatal("the SBOM lists no package")
	}
	main := doc.Packages[0]
	sum, err := command(t, filepath.Dir(bin), "sha256sum", "canaryd")
	if err != nil {
		t.Fatal(err)
	}
	if main.Name != "github.com/canaryd/canaryd" || main.VersionInfo != harness.ReleaseVersion ||
		len(main.Checksums) != 1 || main.Checksums[0].Algorithm != "SHA256" || main.Checksums[0].ChecksumValue != strings.Fields(sum)[0] {
		t.Errorf("the SBOM's main package %+v: want github.com/canaryd/canaryd %s with the binary's SHA-256 %s", main, harness.ReleaseVersion, strings.Fields(sum)[0])
	}
	if len(doc.Relationships) == 0 || doc.Relationships[0].Type != "DESCRIBES" || doc.Relationships[0].Related != main.SPDXID {
		t.Errorf("the SBOM does not describe its main package first: %+v", doc.Relationships)
	}

	listed := map[string]string{}
	dependsOn := map[string]bool{}
	for _, r := range doc.Relationships {
		if r.Element == main.SPDXID && r.Type == "DEPENDS_ON" {
			dependsOn[r.Related] = true
		}
	}
	for _, p := range doc.Packages[1:] {
		listed[p.Name] = p.VersionInfo
		if !dependsOn[p.SPDXID] {
			t.Errorf("the SBOM lists %s, but not as a dependency of canaryd", p.Name)
		}
	}
	if listed["stdlib"] != info.GoVersion {
		t.Errorf("the SBOM's stdlib is %q, want %s", listed["stdlib"], info.GoVersion)
	}
	// Every module the binary links is listed at go.mod's version; and
	// canaryd's own direct requirements that it links are among them.
	required := goModRequires(t)
	if len(info.Deps) < 10 {
		t.Fatalf("the binary records %d modules: built without module information?", len(info.Deps))
	}
	for _, d := range info.Deps {
		if listed[d.Path] != d.Version {
			t.Errorf("the SBOM lists %s at %q, the binary links %s", d.Path, listed[d.Path], d.Version)
		}
		if required[d.Path] != d.Version {
			t.Errorf("the binary links %s %s, go.mod requires %q", d.Path, d.Version, required[d.Path])
		}
	}
	for _, direct := range []string{"github.com/go-chi/chi/v5", "github.com/expr-lang/expr", "go.uber.org/zap", "github.com/jackc/pgx/v5", "github.com/prometheus/client_golang"} {
		if listed[direct] == "" || listed[direct] != required[direct] {
			t.Errorf("the SBOM lists %s at %q, go.mod requires %q", direct, listed[direct], required[direct])
		}
	}
	if len(listed) != len(info.Deps)+1 {
		t.Errorf("the SBOM lists %d packages besides canaryd, the binary links %d modules and the standard library", len(listed), len(info.Deps))
	}
}

// goModRequires is the root go.mod's requirements, path to version.
func goModRequires(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(harness.RepoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req := map[string]string{}
	inBlock := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "require" && fields[1] == "(":
			inBlock = true
		case inBlock && len(fields) == 1 && fields[0] == ")":
			inBlock = false
		case inBlock && len(fields) == 2:
			req[fields[0]] = fields[1]
		case len(fields) == 3 && fields[0] == "require":
			req[fields[1]] = fields[2]
		}
	}
	return req
}

func command(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
