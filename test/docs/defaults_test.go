package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxOperationsBytes bounds docs/operations.md, so that an operator reads
// it to the end. How the store works inside belongs in docs/design/, and
// what changed when in CHANGELOG.md.
const maxOperationsBytes = 25_000

// TestOperationsSize holds docs/operations.md to maxOperationsBytes.
func TestOperationsSize(t *testing.T) {
	fi, err := os.Stat(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxOperationsBytes {
		t.Errorf("docs/operations.md is %d bytes, more than %d: move how things work inside to docs/design/, and history to CHANGELOG.md", fi.Size(), maxOperationsBytes)
	}
}

// configurationPage is the one page that states the defaults of canaryd
// serve's flags; it is generated from the table of settings.
const configurationPage = "docs/configuration.md"

var configRowRE = regexp.MustCompile("^\\| `--([a-z][a-z0-9-]*)` \\|[^|]*\\|[^|]*\\|([^|]*)\\|")

// flagDefaults reads configuration.md's tables: each flag of canaryd serve
// with the values its Default cell shows in code spans (`30s`; `1h` and
// `720h` for --retention). A default that is only prose ("none", "the host
// name") has no value to repeat.
func flagDefaults(t testing.TB, ps []*page) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range ps {
		if p.path != configurationPage {
			continue
		}
		for _, l := range strings.Split(p.text, "\n") {
			m := configRowRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			out[m[1]] = nil
			for _, c := range codeRE.FindAllString(m[2], -1) {
				if v := strings.Trim(c, "`"); v != "" && !strings.HasPrefix(v, "-") {
					out[m[1]] = append(out[m[1]], v)
				}
			}
		}
	}
	if len(out) < 30 {
		t.Fatalf("found %d flags in %s; it lists many more: is the reading broken?", len(out), configurationPage)
	}
	return out
}

var (
	durationRE = regexp.MustCompile(`^(\d+)(ms|s|m|h|d)$`)
	sizeRE     = regexp.MustCompile(`^(\d+)(KiB|MiB|GiB)$`)
	integerRE  = regexp.MustCompile(`^\d+$`)
)

// spellings are the ways prose writes a default: 30s as 30 s or 30
// seconds, 720h as 30 days, 16384 as 16 KiB, 10000 as 10,000.
func spellings(v string) []string {
	out := []string{v}
	if m := durationRE.FindStringSubmatch(v); m != nil {
		n, unit := m[1], m[2]
		words := map[string][]string{"ms": {"ms", "milliseconds"}, "s": {"s", "seconds", "second"}, "m": {"m", "min", "minutes", "minute"}, "h": {"h", "hours", "hour"}, "d": {"days", "day"}}[unit]
		for _, w := range words {
			out = append(out, n+" "+w)
		}
		if h, _ := strconv.Atoi(n); unit == "h" && h%24 == 0 {
			d := strconv.Itoa(h / 24)
			out = append(out, d+"d", d+" days", d+" day")
		}
	}
	if m := sizeRE.FindStringSubmatch(v); m != nil {
		out = append(out, m[1]+" "+m[2])
	}
	if integerRE.MatchString(v) {
		n, _ := strconv.Atoi(v)
		if n >= 1000 {
			s := strconv.Itoa(n)
			var b strings.Builder
			for i, r := range s {
				if i > 0 && (len(s)-i)%3 == 0 {
					b.WriteByte(',')
				}
				b.WriteRune(r)
			}
			out = append(out, b.String())
		}
		for _, u := range []struct {
			size int
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if n >= u.size && n%u.size == 0 {
				out = append(out, strconv.Itoa(n/u.size)+" "+u.name)
				break
			}
		}
	}
	return out
}

// startsWithValue says whether s begins with one of the spellings, as a
// whole word, optionally in a code span.
func startsWithValue(s string, spelled []string) bool {
	s = strings.TrimLeft(s, " \n`")
	for _, v := range spelled {
		if rest, ok := strings.CutPrefix(s, v); ok && !startsWithWordChar(rest) {
			return true
		}
	}
	return false
}

// containsValue says whether s holds one of the spellings as a whole word.
func containsValue(s string, spelled []string) bool {
	for i := range len(s) {
		if i > 0 && isWordByte(s[i-1]) {
			continue
		}
		for _, v := range spelled {
			if rest, ok := strings.CutPrefix(s[i:], v); ok && !startsWithWordChar(rest) {
				return true
			}
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func startsWithWordChar(s string) bool {
	return s != "" && (isWordByte(s[0]) && s[0] != '.' || s[0] == '.' && len(s) > 1 && s[1] >= '0' && s[1] <= '9')
}

var (
	// flagSpanRE is a code span that is a flag of canaryd serve, with the
	// value it is given, if any: `--retention`, `--store memory:`.
	flagSpanRE = regexp.MustCompile("`--([a-z][a-z0-9-]*)(?:[ =]([^`]*))?`")
	// parenRE is a parenthesis right after a flag, with at most one word
	// between: `--max-query-length` bytes (16 KiB by default).
	parenRE        = regexp.MustCompile(`^\s*(?:[\w-]+\s+)?\(([^()]*)`)
	defaultWordRE  = regexp.MustCompile(`(?i)\bdefaults?\b`)
	defaultAfterRE = regexp.MustCompile(`(?i)\bdefault\s+$`)
)

// statedDefault is one place a page repeats a flag's default.
type statedDefault struct {
	line int
	flag string
	text string
}

// statedDefaults finds where a page's prose or tables repeat the default
// of one of canaryd serve's flags (defaults from flagDefaults):
//
//   - a parenthesis right after the flag that starts with its default, or
//     says "default" and holds it: `--shutdown-grace` (30 s),
//     `--store memory:` (the default), `--max-query-length` bytes (16 KiB
//     by default);
//   - the clause after the flag, or the words before it, that say
//     "default" with the value: `--retention` defaults to `720h`, by
//     default `--evaluate-timeout` (`8s`);
//   - a table row whose first cell names the flag and another cell starts
//     with its default: | `--max-backtests` | 4 backtests at once |.
//
// Fenced blocks are not read: a synopsis or an example there shows values,
// and the tests that run it hold them to the code. A flag given a value
// where no default is said (`--shutdown-grace=30s`, as the base sets it)
// is not a default stated.
func statedDefaults(text string, defaults map[string][]string) []statedDefault {
	var out []statedDefault
	lines := strings.Split(text, "\n")
	inFence := ""
	for i, l := range lines {
		if m := fenceRE.FindStringSubmatch(l); m != nil && (inFence == "" || strings.HasPrefix(strings.TrimSpace(l), inFence) && strings.TrimSpace(m[2]) == "") {
			if inFence == "" {
				inFence = m[1]
			} else {
				inFence = ""
			}
			lines[i] = ""
			continue
		}
		if inFence != "" {
			lines[i] = ""
		}
	}
	prose := strings.Join(lines, "\n")
	lineOf := func(off int) int { return strings.Count(prose[:off], "\n") + 1 }

	for _, m := range flagSpanRE.FindAllStringSubmatchIndex(prose, -1) {
		name := prose[m[2]:m[3]]
		values, ok := defaults[name]
		if !ok || len(values) == 0 {
			continue
		}
		var spelled []string
		for _, v := range values {
			spelled = append(spelled, spellings(v)...)
		}
		given := ""
		if m[4] >= 0 {
			given = prose[m[4]:m[5]]
		}
		after := prose[m[1]:min(len(prose), m[1]+80)]
		for _, end := range []string{". ", ".\n", "\n\n", "|", ";"} {
			if i := strings.Index(after, end); i >= 0 {
				after = after[:i]
			}
		}
		before := prose[max(0, m[0]-20):m[0]]
		found := false
		if p := parenRE.FindStringSubmatch(after); p != nil {
			inParen := p[1]
			found = startsWithValue(inParen, spelled) ||
				defaultWordRE.MatchString(inParen) && (containsValue(inParen, spelled) || containsValue(given, spelled))
		}
		if !found && (defaultWordRE.MatchString(after) || defaultAfterRE.MatchString(before)) {
			found = containsValue(after, spelled) || containsValue(given, spelled)
		}
		if found {
			out = append(out, statedDefault{line: lineOf(m[0]), flag: name, text: strings.Join(strings.Fields(prose[m[0]:m[1]]+after), " ")})
		}
	}

	for i, l := range lines {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), "|")
		if len(cells) < 2 {
			continue
		}
		for _, m := range flagSpanRE.FindAllStringSubmatch(cells[0], -1) {
			var spelled []string
			for _, v := range defaults[m[1]] {
				spelled = append(spelled, spellings(v)...)
			}
			if len(spelled) == 0 {
				continue
			}
			for _, c := range cells[1:] {
				if startsWithValue(c, spelled) {
					out = append(out, statedDefault{line: i + 1, flag: m[1], text: strings.TrimSpace(l)})
					break
				}
			}
		}
	}
	return out
}

// TestDefaultsOnlyInConfiguration: no page but docs/configuration.md
// states the default of one of canaryd serve's flags. The others name the
// flag and link to the configuration, so that a changed default is
// changed in one place, the table of settings that generates that page.
func TestDefaultsOnlyInConfiguration(t *testing.T) {
	ps := pages(t)
	defaults := flagDefaults(t, ps)
	for _, p := range ps {
		if p.path == configurationPage {
			continue
		}
		for _, d := range statedDefaults(p.text, defaults) {
			t.Errorf("%s:%d: states the default of --%s, which only %s does (link to it instead): %s", p.path, d.line, d.flag, configurationPage, d.text)
		}
	}
}

// TestStatedDefaults checks the reading of a stated default: each way a
// page says one is found, and a flag named with a value, or near a
// number that is not its default, is not.
func TestStatedDefaults(t *testing.T) {
	defaults := map[string][]string{
		"shutdown-grace":     {"30s"},
		"store":              {"memory:"},
		"retention":          {"1h", "720h"},
		"max-query-length":   {"16384"},
		"max-result-values":  {"10000"},
		"max-backtests":      {"4"},
		"max-analyses":       {"100"},
		"templates-interval": {"5s"},
		"evaluate-timeout":   {"8s"},
		"max-retained-bytes": {"64MiB"},
		"min-retention":      {"1m"},
	}
	for text, want := range map[string]bool{
		"running analyses get `--shutdown-grace` (30 s) to finish":                          true,
		"With `--store memory:` (the default), analyses live in memory":                     true,
		"a query may be at most `--max-query-length` bytes (16 KiB by default), a":          true,
		"has at most `--max-result-values` values (10,000 by default; more is an Error)":    true,
		"With a postgres store `--retention` defaults to `720h` (30 days) rather than":      true,
		"re-read every `--templates-interval` (default `5s`; `0` turns polling off)":        true,
		"answers by its deadline, by default `--evaluate-timeout` (`8s`, below Argo's)":     true,
		"bounded in bytes: `--max-retained-bytes` (64 MiB) bounds the results":              true,
		"never one that finished less than `--min-retention`\n(1 m) ago: a new analysis":    true,
		"| `--max-backtests` | 4 backtests at once | a `429` |":                             true,
		"| `--max-result-values` | 10000 | values in one query's result |":                  true,
		"drains for `--shutdown-grace=30s`, as the base sets it":                            false,
		"run one replica on `--store memory:` behind the Service":                           false,
		"at most 100 analyses, and no more than `--max-analyses` leaves room for":           false,
		"waits for `--max-backtests` (the page's widest, 7 d every 4 h, starts at most 43)": false,
		"a postgres store has its own default for `--retention` ([Configuration](c.md)).":   false,
		"the default datasource links to the graph at `--shutdown-grace` (the address)":     false,
		"| `--max-backtests` | see [Configuration](c.md#limits) | a `429` |":                false,
		"```text\ncanaryd run [--shutdown-grace 30s]\n```":                                  false,
	} {
		got := len(statedDefaults(text, defaults)) > 0
		if got != want {
			t.Errorf("statedDefaults(%q) found %v, want %v", text, got, want)
		}
	}
}

// TestSpellings checks the forms in which prose writes a default.
func TestSpellings(t *testing.T) {
	for v, want := range map[string]string{
		"30s":   "30s|30 s|30 seconds|30 second",
		"720h":  "720h|720 h|720 hours|720 hour|30d|30 days|30 day",
		"16384": "16384|16,384|16 KiB",
		"64MiB": "64MiB|64 MiB",
		"4":     "4",
	} {
		if got := strings.Join(spellings(v), "|"); got != want {
			t.Errorf("spellings(%q) = %s, want %s", v, got, want)
		}
	}
}
