package ui

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/canaryd/canaryd/internal/report"
)

// Prefix is where the page is served.
const Prefix = "/ui/"

// ContentSecurityPolicy is sent with every file of the page: the page's
// own script, styles and API only; no inline script, no plugin, no frame,
// no form sent anywhere (the page's forms are read by its script). Images
// may be data: URLs, as in the report.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// ReportStylesheet is the file under Prefix that holds the report's CSS
// (report.Stylesheet), for the report's charts shown in the page.
const ReportStylesheet = "report.css"

// file is one file of the page.
type file struct {
	body        []byte
	contentType string
}

// files are the page's files by their name under Prefix ("" is the shell).
func files() map[string]file {
	out := map[string]file{}
	entries, _ := fs.ReadDir(assets, "assets")
	for _, e := range entries {
		data, err := fs.ReadFile(assets, "assets/"+e.Name())
		if err != nil {
			continue
		}
		out[e.Name()] = file{body: data, contentType: contentType(e.Name())}
	}
	out[""] = out["index.html"]
	delete(out, "index.html")
	out[ReportStylesheet] = file{body: []byte(report.Stylesheet()), contentType: contentType(ReportStylesheet)}
	return out
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "application/octet-stream"
}

// Handler serves the page under Prefix: the shell at Prefix itself, and
// its script and stylesheets by name. Prefix without its slash redirects
// to it. Any other path is answered by notFound. The files are the
// binary's own: read once, and sent with the policy, nosniff and no-cache
// (the page of a newer canaryd is fetched again, not mixed with an older
// script).
func Handler(notFound http.Handler) http.Handler {
	served := files()
	modified := time.Now()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		f, found := served[name]
		if !ok || !found || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, name, modified, bytes.NewReader(f.body))
	})
}
