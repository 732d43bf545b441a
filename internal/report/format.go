package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/canaryd/canaryd/api"
)

// Formats are the names -o takes, text first.
var Formats = []string{"text", "json", "markdown", "junit"}

// Write writes the report in format (one of Formats).
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "text":
		return r.Text(w)
	case "json":
		out, err := api.MarshalIndent(r.Analysis, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return err
	case "markdown":
		return r.Markdown(w)
	case "junit":
		return r.JUnit(w)
	}
	return fmt.Errorf("unknown format %q: give one of %s", format, strings.Join(Formats, ", "))
}

// Text writes the verdict, the reason and a table of the metrics, for a
// person at a terminal.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", r.Reason)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPHASE\tMEASURED\tFAILED\tINCONCLUSIVE\tCONSECUTIVE ERRORS\tLAST VALUE")
	for _, m := range r.Metrics {
		phase := string(m.Phase)
		if m.DryRun {
			phase += " (dry-run, not counted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, phase, measured(m), failedOfLimit(m),
			ofLimit(m.Inconclusive, m.InconclusiveLimit), ofLimit(m.ConsecutiveError, m.ConsecutiveErrorLimit), lastValue(m))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range r.Metrics {
		if m.Next != "" {
			fmt.Fprintf(&b, "\n%s: %s", m.Name, m.Next)
		}
	}
	if strings.HasSuffix(b.String(), "\n") {
		_, err := io.WriteString(w, b.String())
		return err
	}
	_, err := io.WriteString(w, b.String()+"\n")
	return err
}

func measured(m Metric) string {
	if m.Target > 0 {
		return fmt.Sprintf("%d/%d", m.Measured, m.Target)
	}
	return strconv.Itoa(int(m.Measured))
}

// ofLimit shows a counter beside the limit it must not exceed.
func ofLimit(n, limit int32) string { return fmt.Sprintf("%d (limit %d)", n, limit) }

func failedOfLimit(m Metric) string {
	if m.FailureLimit < 0 {
		return fmt.Sprintf("%d (no limit)", m.Failed)
	}
	return ofLimit(m.Failed, m.FailureLimit)
}

func lastValue(m Metric) string {
	if m.Last == nil {
		return "-"
	}
	return orDash(m.Last.Value)
}

// Markdown writes the verdict, the reason and a table of the metrics, for
// a GitHub job summary or a pull-request comment.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	// The heading ends "canaryd analysis: PHASE", which a pipeline may
	// grep for; the analysis' name comes first.
	name := ""
	if r.Analysis.Template != "" {
		name = mdCode(r.Analysis.Template) + " "
		if len(r.Analysis.Args) > 0 {
			name += "(" + mdCode(args(r.Analysis.Args)) + ") "
		}
		name += "— "
	}
	fmt.Fprintf(&b, "### %s %scanaryd analysis: %s\n\n", icon(r.Analysis.Phase), name, orPending(r.Analysis.Phase))
	fmt.Fprintf(&b, "%s\n\n", mdText(r.Reason))
	b.WriteString("| Metric | Phase | Measured | Failed | Inconclusive | Consecutive errors | Last value | Condition |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, m := range r.Metrics {
		phase := fmt.Sprintf("%s %s", icon(m.Phase), m.Phase)
		if m.DryRun {
			phase += " (dry-run, not counted)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdText(m.Name), phase, measured(m),
			failedOfLimit(m), ofLimit(m.Inconclusive, m.InconclusiveLimit), ofLimit(m.ConsecutiveError, m.ConsecutiveErrorLimit),
			mdCode(lastValue(m)), condition(m))
	}
	if r.Analysis.Template == "" && len(r.Analysis.Args) > 0 {
		fmt.Fprintf(&b, "\nArguments: %s\n", mdCode(args(r.Analysis.Args)))
	}
	var when []string
	if r.Analysis.ID != "" {
		when = append(when, "Analysis "+mdCode(r.Analysis.ID))
	}
	if r.Analysis.StartedAt != nil {
		when = append(when, "started "+r.Analysis.StartedAt.UTC().Format(time.RFC3339))
		if r.Analysis.CompletedAt != nil {
			when = append(when, fmt.Sprintf("took %s", r.Analysis.CompletedAt.Sub(*r.Analysis.StartedAt).Round(time.Millisecond)))
		}
	}
	if len(when) > 0 {
		s := strings.Join(when, ", ")
		fmt.Fprintf(&b, "\n%s%s.\n", strings.ToUpper(s[:1]), s[1:])
	}
	if r.HTMLReport != "" {
		fmt.Fprintf(&b, "\nThe HTML report, with a chart per metric: [%s](%s).\n", mdText(r.HTMLReport), (&url.URL{Path: filepath.ToSlash(r.HTMLReport)}).EscapedPath())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// name is what the analysis is called in the markdown and the JUnit XML:
// its template and its arguments, "success-rate (namespace=echo)" (the
// arguments' secret values are masked already); "" without a template.
func (r *Report) name() string {
	if r.Analysis.Template == "" {
		return ""
	}
	if len(r.Analysis.Args) == 0 {
		return r.Analysis.Template
	}
	return r.Analysis.Template + " (" + args(r.Analysis.Args) + ")"
}

// args are arguments as NAME=VALUE, sorted, separated by spaces.
func args(a map[string]string) string {
	out := make([]string, 0, len(a))
	for name, v := range a {
		out = append(out, name+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func condition(m Metric) string {
	var parts []string
	if m.SuccessCondition != "" {
		parts = append(parts, "success: "+mdCode(m.SuccessCondition))
	}
	if m.FailureCondition != "" {
		parts = append(parts, "failure: "+mdCode(m.FailureCondition))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "<br>")
}

func icon(p api.Phase) string {
	switch p {
	case api.PhaseSuccessful:
		return "✅"
	case api.PhaseFailed:
		return "❌"
	case api.PhaseInconclusive:
		return "⚠️"
	case api.PhaseError:
		return "💥"
	}
	return "⏳"
}

// mdText escapes what would break a table cell or start markup.
func mdText(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// mdCode shows s as code in a table cell: the fence is longer than any run
// of backticks in s, and a pipe is written as its entity (GitHub splits
// cells on a pipe even inside code).
func mdCode(s string) string {
	s = strings.NewReplacer("|", "&#124;", "\n", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// The JUnit XML document, as Jenkins, GitLab and most CI read it: one
// test suite for the analysis, one test case per metric. testsuites
// carries no skipped count: the schema Jenkins' xUnit plugin validates
// against (junit-10.xsd) refuses the attribute there; the suite has it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitOutcome `xml:"skipped,omitempty"`
	Failure   *junitOutcome `xml:"failure,omitempty"`
	Error     *junitOutcome `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitOutcome struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit writes the analysis as JUnit XML: a metric is a test case that
// fails when it is Failed or Inconclusive and errs when it is Error; a
// dry-run metric that would have failed is skipped, saying so; a metric
// still running or pending is skipped too.
func (r *Report) JUnit(w io.Writer) error {
	a := r.Analysis
	name := "canaryd"
	if n := r.name(); n != "" {
		name += " " + n
	}
	suite := junitSuite{Name: name, Time: seconds(duration(a))}
	if a.StartedAt != nil {
		suite.Timestamp = a.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	suite.Properties = append(suite.Properties, junitProperty{"phase", string(orPending(a.Phase))})
	if a.ID != "" {
		suite.Properties = append(suite.Properties, junitProperty{"analysis", a.ID})
	}
	var args []string
	for k := range a.Args {
		args = append(args, k)
	}
	slices.Sort(args)
	for _, k := range args {
		suite.Properties = append(suite.Properties, junitProperty{"arg." + k, a.Args[k]})
	}
	suite.SystemOut = r.Reason
	for _, m := range r.Metrics {
		c := junitCase{Name: m.Name, ClassName: name, Time: seconds(metricDuration(m)), SystemOut: caseOutput(m)}
		detail := explainMetric(m)
		switch {
		case m.DryRun && m.WouldHave != "":
			c.Skipped = &junitOutcome{Message: fmt.Sprintf("dry-run: would have been %s", m.WouldHave), Text: detail}
			suite.Skipped++
		case !m.Phase.Completed():
			c.Skipped = &junitOutcome{Message: fmt.Sprintf("%s when the analysis ended", orPending(m.Phase))}
			suite.Skipped++
		case m.Phase == api.PhaseError:
			c.Error = &junitOutcome{Message: detail, Type: string(m.Phase), Text: detail}
			suite.Errors++
		case m.Phase == api.PhaseFailed || m.Phase == api.PhaseInconclusive:
			c.Failure = &junitOutcome{Message: detail, Type: string(m.Phase), Text: detail}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "canaryd", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// caseOutput lists a metric's measurements, one a line.
func caseOutput(m Metric) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: measured %s; failed %s, inconclusive %s, consecutive errors %s",
		m.Name, measured(m), failedOfLimit(m), ofLimit(m.Inconclusive, m.InconclusiveLimit), ofLimit(m.ConsecutiveError, m.ConsecutiveErrorLimit))
	if m.Last != nil {
		fmt.Fprintf(&b, "; last value %s", orDash(m.Last.Value))
	}
	return b.String()
}

func duration(a api.Analysis) time.Duration {
	if a.StartedAt == nil || a.CompletedAt == nil {
		return 0
	}
	return a.CompletedAt.Sub(*a.StartedAt)
}

// metricDuration is the time from the metric's first measurement to its
// newest completed one.
func metricDuration(m Metric) time.Duration {
	if m.Started.IsZero() || m.Last == nil || m.Last.FinishedAt == nil {
		return 0
	}
	return m.Last.FinishedAt.Sub(m.Started)
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
