// Package ui is canaryd's live page, served by `canaryd serve` at /ui/. It
// shows the analyses (live, filtered by phase and template; each row one link that
// opens the analysis, with the sentence its report leads with, a dot per
// measurement and when it started, as how long ago; the rounds and gates
// of one series, such as one Argo AnalysisRun's, as one row that opens
// their calls over time), one analysis as its
// report draws it, refreshed on every event of its stream, the named
// templates with their backtests over the last 6 h, 24 h or 7 d, and a form
// to try a template (its problems at their lines, and a backtest at once).
//
// The page is three files embedded in the binary (assets/): an HTML shell,
// one small script without dependencies and a stylesheet, plus the
// report's own stylesheet (report.Stylesheet), so that the charts the page
// shows are the report's SVG, drawn on the server. Nothing is loaded from
// anywhere else and there is no build step: the page works in an
// air-gapped cluster, and building canaryd needs no Node toolchain.
//
// The shell holds no data: everything the page shows comes from the /v1
// API through fetch, with the bearer token the person gives when the API
// answers 401 (kept in sessionStorage, sent as Authorization). So the
// shell is served without a token, and an API behind --auth-token-file
// shows nothing to someone without one. Every response carries a strict
// Content-Security-Policy (ContentSecurityPolicy): scripts, styles and
// requests from the service itself only, no inline script, no frame.
//
// What this package must not do: hold data or read the API itself (the
// page does, as any client), load anything from outside the binary, or
// need anything but the Go toolchain to build.
package ui
