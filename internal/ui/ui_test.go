package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/ui"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var notFound = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "not here", http.StatusTeapot)
})

// TestFiles checks what the handler serves: the shell at /ui/, its
// script and stylesheets by name, each with its type and the policy, the
// report's stylesheet as the report has it, and nothing else.
func TestFiles(t *testing.T) {
	h := ui.Handler(notFound)
	for _, f := range []struct{ path, typ, holds string }{
		{"/ui/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/ui/app.js", "text/javascript; charset=utf-8", "'use strict'"},
		{"/ui/app.css", "text/css; charset=utf-8", "nav.top"},
		{"/ui/" + ui.ReportStylesheet, "text/css; charset=utf-8", string(report.Stylesheet())},
	} {
		r := get(t, h, http.MethodGet, f.path)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != f.typ || !strings.Contains(b, f.holds) {
			t.Errorf("%s: %d %q, holds %q: %v", f.path, r.StatusCode, r.Header.Get("Content-Type"), f.holds, strings.Contains(b, f.holds))
		}
		for name, want := range map[string]string{
			"Content-Security-Policy": ui.ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := r.Header.Get(name); got != want {
				t.Errorf("%s: %s %q, want %q", f.path, name, got, want)
			}
		}
	}
	if r := get(t, h, http.MethodHead, "/ui/"); r.StatusCode != http.StatusOK || r.Header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || body(t, r) != "" {
		t.Errorf("HEAD /ui/: %d", r.StatusCode)
	}
	if r := get(t, h, http.MethodGet, "/ui"); r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	for _, path := range []string{"/ui/index.html", "/ui/nope.js", "/ui/assets/app.js", "/ui/../v1/analyses", "/elsewhere"} {
		if r := get(t, h, http.MethodGet, path); r.StatusCode != http.StatusTeapot {
			t.Errorf("%s: %d, want notFound's answer", path, r.StatusCode)
		}
	}
	if r := get(t, h, http.MethodPost, "/ui/"); r.StatusCode != http.StatusTeapot {
		t.Errorf("POST /ui/: %d, want notFound's answer", r.StatusCode)
	}
}

// TestPolicy checks that the policy is strict and that the page keeps to
// it: scripts, styles and requests of the service only; no inline script,
// no inline style, no handler attribute, nothing from elsewhere.
func TestPolicy(t *testing.T) {
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(ui.ContentSecurityPolicy, want) {
			t.Errorf("the policy lacks %q", want)
		}
	}
	if strings.Contains(ui.ContentSecurityPolicy, "unsafe") {
		t.Errorf("the policy allows something unsafe: %s", ui.ContentSecurityPolicy)
	}
	h := ui.Handler(notFound)
	shell := body(t, get(t, h, http.MethodGet, "/ui/"))
	for _, re := range []string{`<script(?:\s[^>]*)?>[^<]`, `\sstyle=`, `\son[a-z]+=`, `<style`, `https?://`} {
		if m := regexp.MustCompile(re).FindString(shell); m != "" {
			t.Errorf("the shell holds %q (%s)", m, re)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(shell, -1) {
		if !strings.Contains(tag, ` src="`) {
			t.Errorf("the shell holds an inline script: %s", tag)
		}
	}
	// The script builds the page from the API's data as text, never as
	// markup, and evaluates nothing; the report's HTML, made by the
	// service, is parsed with DOMParser, where no script runs.
	js := body(t, get(t, h, http.MethodGet, "/ui/app.js"))
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "http://", "https://", "EventSource"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %q", bad)
		}
	}
	// The shell holds no data: the same bytes whatever is served.
	if strings.Contains(shell, "/v1/analyses/") {
		t.Error("the shell names an analysis")
	}
}
