package spec

import (
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// Language is what a query or an expression field is written in
// (lang.Language): it decides how an argument's value goes into the field
// (see Resolve): escaped inside a string literal, or a plain literal
// elsewhere. A metric's conditions are expr's (condition.Expr); what each
// provider field is, its provider declares (ResolveOptions.Languages).
type Language = lang.Language

// ValueText is the language of a field whose text is a value: a name, a
// duration, a count, an address, a header, a credential. A value cannot
// change the structure of a field that has none; each such field is
// checked for what it is (a duration, an integer, an allowed datasource, a
// header value without line breaks), and an argument's value goes into it
// as it is.
var ValueText Language

// fieldLanguage tells the language of a string field from its path
// relative to its metric ("provider.prometheus.query"): the conditions are
// in o.Conditions, a provider's fields are what o.Languages says, and
// every other field is a value. A path declared with "*" as its last key
// ("provider.datadog.queries.*") is every field of that object, and "[]"
// after a key is every element of that list
// ("provider.cloudWatch.metricDataQueries[].expression").
func (o ResolveOptions) fieldLanguage(rel string) Language {
	if isCondition(rel) {
		return o.Conditions
	}
	if len(o.Languages) == 0 {
		return nil
	}
	if l, ok := o.Languages[rel]; ok {
		return l
	}
	if i := strings.LastIndexByte(rel, '.'); i >= 0 {
		if l, ok := o.Languages[rel[:i+1]+"*"]; ok {
			return l
		}
	}
	if strings.IndexByte(rel, '[') >= 0 {
		if each := EveryElement(rel); each != rel {
			return o.fieldLanguage(each)
		}
	}
	return nil
}

// EveryElement writes each list index of a path ("queries[2].expression")
// as "[]", the spelling of a path declared for every element of a list
// ("queries[].expression").
func EveryElement(path string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(path, '[')
		if i < 0 {
			break
		}
		j := strings.IndexByte(path[i:], ']')
		if j < 0 {
			break
		}
		b.WriteString(path[:i+1])
		path = path[i+j:]
	}
	b.WriteString(path)
	return b.String()
}

func isCondition(rel string) bool { return rel == "successCondition" || rel == "failureCondition" }

// tag is one {{…}} of a field's text.
type tag struct {
	// start and end are the tag's bytes in the text, braces included.
	start, end int
	// raw is the text between the braces.
	raw string
	// arg is the argument the tag names; nil when it names none.
	arg *argValue
	ctx lang.Context
	// escape: the value goes into a string literal and is escaped.
	escape bool
	// placeholder: the tag cannot be substituted, and a placeholder takes
	// its place (ResolveOptions.Continue).
	placeholder bool
}

// scanTags lists the tags of s as expand reads them: tags do not nest, and
// the text between "{{" and the next "}}" is the tag. unclosed reports a
// "{{" that is never closed.
func scanTags(s string, args map[string]*argValue) (tags []tag, unclosed bool) {
	for off := 0; ; {
		i := strings.Index(s[off:], openTag)
		if i < 0 {
			return tags, false
		}
		start := off + i
		j := strings.Index(s[start+len(openTag):], closeTag)
		if j < 0 {
			return nil, true
		}
		end := start + len(openTag) + j + len(closeTag)
		t := tag{start: start, end: end, raw: s[start+len(openTag) : end-len(closeTag)]}
		if name, ok := strings.CutPrefix(strings.TrimSpace(t.raw), argsTag); ok {
			t.arg = args[name]
		}
		tags = append(tags, t)
		off = end
	}
}

// findContexts sets the context of every tag of s, a text in l, as the
// language's lexer reads it (lang.Language.Lex).
func findContexts(l Language, s string, tags []tag) {
	spans := make([]lang.Span, len(tags))
	for i, t := range tags {
		spans[i] = lang.Span{Start: t.start, End: t.end}
	}
	ctx := make([]lang.Context, len(tags))
	l.Lex(s, spans, ctx)
	for i := range tags {
		tags[i].ctx = ctx[i]
	}
}
