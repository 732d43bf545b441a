// Package browsertest starts Debian's Chromium, headless, for tests that
// must see a page as a person's browser shows it: canaryd's HTML report,
// and the pages served under /ui/. It drives the browser from Go over the
// DevTools protocol (github.com/chromedp/chromedp) and records what a test
// must check besides the page itself: every request the page made, every
// console message of level error and every uncaught exception.
//
// A test calls Start, then Offline when the page must work with the
// network cut, Navigate, checks the page (Eval, Count, Text) and writes a
// Screenshot into the artifacts directory (env CANARYD_ARTIFACTS, else the
// test's temporary directory) for a person to look at.
//
// What this package must not do:
//   - skip a test: when chromium is missing it fails the test saying that
//     `make test` installs it (CI must never pass by testing nothing);
//   - let the browser reach anything but loopback: it is started with a
//     proxy that refuses everything (--proxy-server=127.0.0.1:9) for every
//     host but loopback, and without its background networking (updates,
//     sync, safe browsing), which a closed network refuses anyway;
//   - leave a browser running after its test, or share a profile between
//     tests: each Start has a fresh --user-data-dir, removed at the end.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium is where Debian's chromium package puts the browser.
const Chromium = "/usr/bin/chromium"

// ArtifactsEnv names the directory screenshots are written to.
const ArtifactsEnv = "CANARYD_ARTIFACTS"

// Browser is one headless Chromium and its one tab, for one test.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	requests []string
	errors   []string
}

// Options change how the browser starts.
type Options struct {
	// Width and Height are the window's size in CSS pixels; 1280×900 when
	// zero.
	Width, Height int
	// Timeout bounds the whole test's use of the browser; 60 s when zero.
	Timeout time.Duration
	// Exact sets the viewport to Width×Height itself: headless Chromium's
	// window is at least 500 px wide, so a phone's width needs it.
	Exact bool
}

// Path returns the Chromium to run: $CANARYD_CHROMIUM, else Chromium, else
// chromium on PATH. It fails the test when there is none.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CANARYD_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat(Chromium); err == nil {
		return Chromium
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatalf("chromium is needed for the browser tests and was not found at %s or on PATH: `make test` installs it (Debian's chromium package), or run 'apt-get install -y chromium'", Chromium)
	return ""
}

// Start starts Chromium for t, headless, with a fresh profile; it is
// stopped when t ends.
func Start(t testing.TB, o Options) *Browser {
	t.Helper()
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path(t)),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // as root, in a container
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		// Nothing but loopback is reachable: every other request goes to
		// a proxy that is not there. (Loopback bypasses a proxy unless
		// the list says "<-loopback>"; it is named here all the same.)
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "127.0.0.1;localhost;[::1]"),
	}
	b := &Browser{t: t}
	// The whole use of the browser is bounded: the timeout is on the
	// allocator's context, which the first Run starts the browser with.
	tctx, cancelTimeout := context.WithTimeout(context.Background(), o.Timeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(tctx, opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser process to end
		cancelTimeout()
	})
	b.ctx = ctx
	// The first Run starts the browser and enables the domains whose
	// events are listened to (runtime, log, network).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", Path(t), err)
	}
	if o.Exact {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(o.Width), int64(o.Height))); err != nil {
			t.Fatalf("setting the viewport to %d×%d: %v", o.Width, o.Height, err)
		}
	}
	return b
}

func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				if a.Value != nil {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			b.errors = append(b.errors, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		b.errors = append(b.errors, "exception: "+text)
	case *log.EventEntryAdded:
		// The browser's own errors: a resource that failed to load, a
		// request the Content-Security-Policy refused.
		if ev.Entry != nil && ev.Entry.Level == log.EntryLevelError {
			b.errors = append(b.errors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
		}
	}
}

// Context is the browser's context, for chromedp actions of the test's own.
func (b *Browser) Context() context.Context { return b.ctx }

// Offline cuts the tab's network, as DevTools' "Offline" does: a request
// that is not for a file:// or data: URL fails.
func (b *Browser) Offline() {
	b.t.Helper()
	offline := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
		}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
		return err
	})
	if err := chromedp.Do(b.ctx, offline); err != nil {
		b.t.Fatalf("taking the browser offline: %v", err)
	}
}

// Navigate opens url and waits for its load event.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("opening %s: %v", url, err)
	}
}

// Requests returns the URLs of every request the tab made, in order (the
// document's own included).
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// Errors returns the console errors and uncaught exceptions so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errors)
}

// CheckSelfContained fails the test if the page made a request that is
// not for a file://, data: or about: URL (Outside), or logged a console
// error or an uncaught exception: what a self-contained report must
// never do.
func (b *Browser) CheckSelfContained() {
	b.t.Helper()
	if out := Outside(b.Requests()); len(out) > 0 {
		b.t.Errorf("the page made requests: %q", out)
	}
	if errs := b.Errors(); len(errs) > 0 {
		b.t.Errorf("console errors: %q", errs)
	}
}

// Eval evaluates a JavaScript expression in the page (the test's probe;
// the page itself need run none) into out.
func (b *Browser) Eval(expression string, out any) {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expression))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expression, err)
	}
	if err := json.Unmarshal(v, out); err != nil {
		b.t.Fatalf("evaluating %s: %v", expression, err)
	}
}

// Count is the number of elements selector matches.
func (b *Browser) Count(selector string) int {
	b.t.Helper()
	var n int
	b.Eval(fmt.Sprintf("document.querySelectorAll(%q).length", selector), &n)
	return n
}

// Text is the rendered text of the first element selector matches ("" when
// none does).
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	var s string
	b.Eval(fmt.Sprintf("(e => e ? e.innerText : '')(document.querySelector(%q))", selector), &s)
	return s
}

// Screenshot writes a PNG of the whole page to name in the artifacts
// directory and returns its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(ArtifactDir(b.t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// ArtifactDir is where a test writes what a person may want to look at
// afterwards: $CANARYD_ARTIFACTS (created if need be), else the test's
// temporary directory.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s: %v", ArtifactsEnv, err)
	}
	return dir
}

// Outside returns the URLs among urls that are neither file://, data: nor
// about:: the requests a self-contained file must never make.
func Outside(urls []string) []string {
	var out []string
	for _, u := range urls {
		switch {
		case strings.HasPrefix(u, "file://"), strings.HasPrefix(u, "data:"), strings.HasPrefix(u, "about:"):
		default:
			out = append(out, u)
		}
	}
	return out
}

// NotLocal returns the URLs among urls that leave the machine: neither
// file://, data:, about: nor http(s) to 127.0.0.1, ::1 or localhost.
func NotLocal(urls []string) []string {
	var out []string
	for _, u := range Outside(urls) {
		rest, ok := strings.CutPrefix(u, "http://")
		if !ok {
			rest, ok = strings.CutPrefix(u, "https://")
		}
		host := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			host = rest[:i]
		}
		if ok && (strings.HasPrefix(host, "127.0.0.1") || strings.HasPrefix(host, "[::1]") || strings.HasPrefix(host, "localhost")) {
			continue
		}
		out = append(out, u)
	}
	return out
}
