package harness

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// ReleaseVersion is the release the recipes and README's Install pin: the
// tests build it with `make dist VERSION=ReleaseVersion` and serve it where
// they download it from.
const ReleaseVersion = "v0.1.0"

// ReleasesURL is where GitHub serves canaryd's releases:
// ReleasesURL/download/VERSION/FILE. ServeRelease stands in for it.
const ReleasesURL = "https://github.com/canaryd/canaryd/releases"

// release is the release built by `make dist`, shared by the tests of one
// test binary.
var release struct {
	once sync.Once
	dir  string
	err  error
}

// DistTarget is this machine's OS/ARCH, the one target a test's make
// dist builds.
func DistTarget() string { return runtime.GOOS + "/" + runtime.GOARCH }

// Release runs `make dist` for this machine's target with VERSION
// ReleaseVersion, once per test binary, and returns the directory holding
// the archive, its SBOM and SHA256SUMS.
func Release(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	makeTool := lookPath(t, "make", "apt-get install -y make")
	release.once.Do(func() {
		release.dir, release.err = os.MkdirTemp("", "canaryd-test-dist-")
		if release.err != nil {
			return
		}
		cmd := exec.Command(makeTool, "--no-print-directory", "dist", "DIST="+release.dir,
			"DIST_TARGETS="+DistTarget(), "VERSION="+ReleaseVersion)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			release.err = fmt.Errorf("make dist: %v\n%s", err, out)
		}
	})
	if release.err != nil {
		t.Fatalf("harness: %v", release.err)
	}
	return release.dir
}

// ServeRelease serves Release's files as GitHub serves a release's, at
// URL/download/ReleaseVersion/FILE, and returns the URL that stands for
// ReleasesURL; a download of another version, or of a file the release
// does not hold, is a 404. The server stops when the test ends.
func ServeRelease(t testing.TB) string {
	t.Helper()
	return ServeReleaseDir(t, Release(t))
}

// ServeReleaseDir serves the files of dir as ServeRelease serves a
// release's: for a test of a damaged or incomplete download.
func ServeReleaseDir(t testing.TB, dir string) string {
	t.Helper()
	prefix := "/download/" + ReleaseVersion + "/"
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok || name == "" || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		r.URL.Path = "/" + name
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// releaseCleanup removes Release's directory; Main calls it.
func releaseCleanup() {
	if release.dir != "" {
		_ = os.RemoveAll(release.dir)
	}
}
