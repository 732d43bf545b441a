package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// page is one Markdown file of the documentation.
type page struct {
	path    string // relative to the repository root, slash-separated
	text    string
	blocks  []block
	anchors map[string]bool
	links   []link
}

// block is a fenced code block.
type block struct {
	line int    // of the opening fence, 1-based
	lang string // the info string's first word
	info string // the rest of the info string
	body string
}

type link struct {
	line   int
	target string
}

var (
	fenceRE   = regexp.MustCompile("^(```+|~~~+)\\s*(.*)$")
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE    = regexp.MustCompile("`[^`]*`")
)

// repoRoot is canaryd's repository root: this package is test/docs.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "canaryd")); err != nil {
		t.Fatalf("%s is not canaryd's repository root: %v", root, err)
	}
	return root
}

// pages reads README.md, CHANGELOG.md and every Markdown file under docs/.
func pages(t testing.TB) []*page {
	t.Helper()
	root := repoRoot(t)
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []*page
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		out = append(out, parse(filepath.ToSlash(rel), string(b)))
	}
	if len(out) < 10 {
		t.Fatalf("found %d pages of documentation, want README.md, CHANGELOG.md and docs/**/*.md", len(out))
	}
	return out
}

// parse splits a page into its fenced blocks, heading anchors (GitHub's
// rules: lower case, punctuation dropped, spaces as hyphens, -N for
// repeats) and links outside code.
func parse(path, text string) *page {
	p := &page{path: path, text: text, anchors: map[string]bool{}}
	seen := map[string]int{}
	var open *block
	var fence string
	var body []string
	for i, l := range strings.Split(text, "\n") {
		if open != nil {
			if strings.HasPrefix(l, fence) && strings.TrimSpace(l) == strings.Repeat(fence[:1], len(strings.TrimSpace(l))) && len(strings.TrimSpace(l)) >= len(fence) {
				open.body = strings.Join(body, "\n") + "\n"
				p.blocks = append(p.blocks, *open)
				open, body = nil, nil
				continue
			}
			body = append(body, l)
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			lang, info, _ := strings.Cut(strings.TrimSpace(m[2]), " ")
			open = &block{line: i + 1, lang: lang, info: strings.TrimSpace(info)}
			fence = m[1]
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			s := slug(m[2])
			n := seen[s]
			seen[s]++
			if n > 0 {
				s += "-" + strconv.Itoa(n)
			}
			p.anchors[s] = true
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
			p.links = append(p.links, link{line: i + 1, target: m[1]})
		}
	}
	return p
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinks checks that every relative link of the documentation names a
// file that exists and, with a #fragment into a Markdown page, a heading
// of that page.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	byPath := map[string]*page{}
	ps := pages(t)
	for _, p := range ps {
		byPath[p.path] = p
	}
	checked := 0
	for _, p := range ps {
		for _, l := range p.links {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(l.target, "#")
			target := p.path
			if file != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.path), file)))
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", p.path, l.line, l.target, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			tp, ok := byPath[target]
			if !ok {
				t.Errorf("%s:%d: link %q: an anchor into %s, which is not a page of the documentation", p.path, l.line, l.target, target)
				continue
			}
			if !tp.anchors[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", p.path, l.line, l.target, target, frag)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d relative links; the documentation has many more: is the parser broken?", checked)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"The HTTP service: `canaryd serve`":                                                            "the-http-service-canaryd-serve",
		"Deadlines: `?timeout=` and `Request-Timeout`":                                                 "deadlines-timeout-and-request-timeout",
		"GitHub Actions (`github-actions/canary-gate.yml`) and GitLab CI (`gitlab-ci/.gitlab-ci.yml`)": "github-actions-github-actionscanary-gateyml-and-gitlab-ci-gitlab-cigitlab-ciyml",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
