package browsertest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/browsertest"
)

// TestBrowserSeesWhatAPageDoes opens a file that asks for an image from
// elsewhere and logs a console error, offline, and checks that the helper
// saw both: the checks the report's and the page's tests rely on can fail.
func TestBrowserSeesWhatAPageDoes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	html := `<!DOCTYPE html><html><body><p id="x">hello <b>there</b></p><p class="n">1</p><p class="n">2</p>
<img src="http://example.invalid/pixel.png" alt="">
<script>console.error("broken " + 42)</script></body></html>`
	if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t, browsertest.Options{Width: 390, Height: 700})
	b.Offline()
	b.Navigate("file://" + file)
	if got := b.Text("#x"); got != "hello there" {
		t.Errorf("text of #x: %q", got)
	}
	if got := b.Count("p.n"); got != 2 {
		t.Errorf("count of p.n: %d", got)
	}
	if got := b.Text("#missing"); got != "" {
		t.Errorf("text of a missing element: %q", got)
	}
	out := browsertest.Outside(b.Requests())
	if !slices.Contains(out, "http://example.invalid/pixel.png") {
		t.Errorf("the image request was not seen: requests %q", b.Requests())
	}
	if slices.ContainsFunc(out, func(u string) bool { return strings.HasPrefix(u, "file://") }) {
		t.Errorf("Outside kept a file:// URL: %q", out)
	}
	errs := b.Errors()
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "broken 42") }) {
		t.Errorf("the console error was not seen: %q", errs)
	}
	png := b.Screenshot("browsertest.png")
	data, err := os.ReadFile(png)
	if err != nil || len(data) < 8 || string(data[1:4]) != "PNG" {
		t.Errorf("screenshot %s is not a PNG (%d bytes, %v)", png, len(data), err)
	}
}

func TestNotLocal(t *testing.T) {
	got := browsertest.NotLocal([]string{"file:///x", "data:,", "about:blank", "http://127.0.0.1:8080/ui/",
		"http://localhost/x", "http://[::1]:9/", "https://fonts.example.com/a.woff", "http://10.0.0.1/"})
	want := []string{"https://fonts.example.com/a.woff", "http://10.0.0.1/"}
	if !slices.Equal(got, want) {
		t.Errorf("NotLocal: %q, want %q", got, want)
	}
}

// TestLoopbackOnly opens a page served on loopback that asks for an image
// from elsewhere: the page loads, and the image does not.
func TestLoopbackOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!DOCTYPE html><p id="x">served</p><img id="i" src="http://192.0.2.1/pixel.png" alt="">`)
	}))
	defer srv.Close()
	b := browsertest.Start(t, browsertest.Options{})
	b.Navigate(srv.URL + "/")
	if got := b.Text("#x"); got != "served" {
		t.Errorf("the loopback page did not load: %q", got)
	}
	var loaded bool
	b.Eval(`(i => i.complete && i.naturalWidth > 0)(document.getElementById('i'))`, &loaded)
	if loaded {
		t.Error("an image from elsewhere loaded")
	}
	if !slices.Contains(browsertest.NotLocal(b.Requests()), "http://192.0.2.1/pixel.png") {
		t.Errorf("the image request was not seen: %q", b.Requests())
	}
	srv.CloseClientConnections()
}
