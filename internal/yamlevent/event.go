package yamlevent

import "strconv"

// Kind is the kind of an Event.
type Kind int

// The kinds of events. A stream is DocumentStart, one node, DocumentEnd,
// as many times as it has documents, then StreamEnd; a node is a Scalar,
// an Alias, or SequenceStart … SequenceEnd or MappingStart … MappingEnd
// around the nodes it holds (a mapping's keys and values alternating).
const (
	DocumentStart Kind = iota + 1
	DocumentEnd
	Scalar
	Alias
	SequenceStart
	SequenceEnd
	MappingStart
	MappingEnd
	StreamEnd
)

// Event is one event of a YAML stream.
type Event struct {
	Kind Kind
	// Anchor is a node's anchor (&name), or the name an Alias refers to.
	Anchor string
	// Tag is a node's explicit tag, in full ("tag:yaml.org,2002:str" for
	// !!str); "" when it has none.
	Tag string
	// Value is a Scalar's value.
	Value string
	// Plain says a Scalar is plain: neither quoted nor a block scalar
	// (| or >), so that its value is resolved (null, a boolean, a number).
	Plain bool
	// Line and Column are where the event starts, from 1.
	Line, Column int
	// LineComment is the comment on the same line as a Scalar, with its #.
	LineComment string
}

// Parser reads the events of one YAML stream.
type Parser struct {
	parser yaml_parser_t
	event  yaml_event_t
	done   bool
	err    error
}

// NewParser returns a Parser of data. The parser reads data as it is
// asked for events, and holds no more of it than a token needs.
func NewParser(data []byte) *Parser {
	p := &Parser{}
	yaml_parser_initialize(&p.parser)
	if len(data) == 0 {
		data = []byte{'\n'}
	}
	yaml_parser_set_input_string(&p.parser, data)
	return p
}

// Next returns the next event. After StreamEnd, or an error, it returns
// the same again. The error is yaml.v3's ("yaml: line 3: did not find
// expected key").
func (p *Parser) Next() (Event, error) {
	for {
		if p.err != nil {
			return Event{}, p.err
		}
		if p.done {
			return Event{Kind: StreamEnd}, nil
		}
		p.event = yaml_event_t{}
		if !yaml_parser_parse(&p.parser, &p.event) || p.parser.error != yaml_NO_ERROR {
			p.err = p.parseError()
			return Event{}, p.err
		}
		e := Event{
			Anchor: string(p.event.anchor),
			Tag:    string(p.event.tag),
			Line:   p.event.start_mark.line + 1,
			Column: p.event.start_mark.column + 1,
		}
		switch p.event.typ {
		case yaml_STREAM_START_EVENT, yaml_TAIL_COMMENT_EVENT:
			continue
		case yaml_STREAM_END_EVENT:
			p.done = true
			e.Kind = StreamEnd
		case yaml_DOCUMENT_START_EVENT:
			e.Kind = DocumentStart
		case yaml_DOCUMENT_END_EVENT:
			e.Kind = DocumentEnd
		case yaml_ALIAS_EVENT:
			e.Kind = Alias
		case yaml_SCALAR_EVENT:
			e.Kind = Scalar
			e.Value = string(p.event.value)
			e.Plain = p.event.scalar_style() == yaml_PLAIN_SCALAR_STYLE
			e.LineComment = string(p.event.line_comment)
		case yaml_SEQUENCE_START_EVENT:
			e.Kind = SequenceStart
		case yaml_SEQUENCE_END_EVENT:
			e.Kind = SequenceEnd
		case yaml_MAPPING_START_EVENT:
			e.Kind = MappingStart
		case yaml_MAPPING_END_EVENT:
			e.Kind = MappingEnd
		default:
			continue
		}
		return e, nil
	}
}

// parseError is the parser's error as yaml.v3's decoder words it.
func (p *Parser) parseError() error {
	line := 0
	switch {
	case p.parser.context_mark.line != 0:
		line = p.parser.context_mark.line
	case p.parser.problem_mark.line != 0:
		line = p.parser.problem_mark.line
	}
	// Scanner errors do not count the line before they are returned.
	if line != 0 && p.parser.error == yaml_SCANNER_ERROR {
		line++
	}
	where := ""
	if line != 0 {
		where = "line " + strconv.Itoa(line) + ": "
	}
	msg := p.parser.problem
	if msg == "" {
		msg = "unknown problem parsing YAML content"
	}
	return &Error{msg: "yaml: " + where + msg}
}

// Error is a stream's syntax error.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }
