package cloudwatch

import (
	"encoding/binary"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// decodeAnswer decodes a GetMetricData answer (CBOR, RPC v2) into out as
// the AWS SDK's deserializer decodes it, for the shapes CloudWatch
// answers with: maps and lists of definite or indefinite length, text
// strings of definite length, doubles, floats and integers, timestamps
// under tag 1, nulls in lists. It reports false, out left as it was, for
// anything else (an unknown or repeated key, a null member, a half-float,
// a chunked string, a malformed or truncated answer), which the SDK's
// deserializer decodes, or refuses with its error, instead
// (getMetricData.do). TestDecodeAnswerAsTheSDK holds the two to the same
// results.
//
// The SDK's spends 10 allocations on an answer of one result, a
// measurement's budget over again (a deserializer, its stack, a string
// arena, each list grown by append, a string each for Id and Label);
// fxamacker/cbor decoding into the SDK's types spends 12. This one reads
// the answer twice: once to check it and to count what it holds, once
// to fill the results, each list made at its length and every string
// in one allocation. A string the request holds (known: its queries'
// ids, labels and metric names, which an answer's Id and Label repeat)
// is the request's, pointer and all, and a StatusCode is the SDK's
// constant: an answer of one result takes 3 allocations (the results,
// the timestamps, the values), and 2 more when it has other strings
// (them, and their pointers).
func decodeAnswer(p []byte, known []*string, out *cloudwatch.GetMetricDataOutput) bool {
	d := answerDecoder{p: p, known: known}
	var probe cloudwatch.GetMetricDataOutput
	if len(p) == 0 || !d.output(&probe) {
		return false
	}
	d.off, d.fill = 0, true
	if d.kept > 0 {
		d.sb.Grow(d.kept)
	}
	if d.ptrs > 0 {
		d.strs = make([]string, d.ptrs)
	}
	var got cloudwatch.GetMetricDataOutput
	if !d.output(&got) {
		return false
	}
	*out = got
	return true
}

// answerDecoder reads an answer: a first pass that only checks and
// counts (fill false), then one that fills.
type answerDecoder struct {
	p     []byte
	off   int
	fill  bool
	known []*string
	// Counted by the first pass: the bytes of the strings kept, and the
	// string fields that are pointers.
	kept, ptrs int
	// Filled by the second: every string is a part of sb's, and every
	// pointer to one is to an element of strs.
	sb   strings.Builder
	strs []string
	// lists is the stack of the lists being read, a bit each: whether
	// it is of indefinite length.
	lists uint64
}

// CBOR's major types, and its arguments' encodings.
const (
	cborUint       = 0
	cborNegInt     = 1
	cborText       = 3
	cborList       = 4
	cborMap        = 5
	cborTag        = 6
	cborSimple     = 7
	cborIndefinite = 31
	cborBreak      = 0xff
	cborNull       = 0xf6
	cborUndefined  = 0xf7
)

func (d *answerDecoder) output(out *cloudwatch.GetMetricDataOutput) bool {
	var seen uint8
	return d.mapEntries(func(key []byte) bool {
		switch string(key) {
		case "MetricDataResults":
			return once(&seen, 1) && d.results(&out.MetricDataResults)
		case "Messages":
			return once(&seen, 2) && d.messages(&out.Messages)
		case "NextToken":
			return once(&seen, 4) && d.stringPointer(&out.NextToken)
		}
		return false
	})
}

// once marks bit in seen, and reports whether it was not marked: a key
// that comes again is left to the SDK's deserializer.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

func (d *answerDecoder) results(v *[]types.MetricDataResult) bool {
	n, ok := d.list()
	if !ok {
		return false
	}
	var rs []types.MetricDataResult
	if d.fill {
		rs = make([]types.MetricDataResult, n)
	}
	var scratch types.MetricDataResult
	for i := range n {
		r := &scratch
		if d.fill {
			r = &rs[i]
		}
		if d.null() {
			continue
		}
		if !d.result(r) {
			return false
		}
	}
	*v = rs
	return d.end()
}

func (d *answerDecoder) result(r *types.MetricDataResult) bool {
	var seen uint8
	return d.mapEntries(func(key []byte) bool {
		switch string(key) {
		case "Id":
			return once(&seen, 1) && d.stringPointer(&r.Id)
		case "Label":
			return once(&seen, 2) && d.stringPointer(&r.Label)
		case "StatusCode":
			return once(&seen, 4) && d.statusCode(&r.StatusCode)
		case "Timestamps":
			return once(&seen, 8) && d.timestamps(&r.Timestamps)
		case "Values":
			return once(&seen, 16) && d.values(&r.Values)
		case "Messages":
			return once(&seen, 32) && d.messages(&r.Messages)
		}
		return false
	})
}

func (d *answerDecoder) messages(v *[]types.MessageData) bool {
	n, ok := d.list()
	if !ok {
		return false
	}
	var ms []types.MessageData
	if d.fill {
		ms = make([]types.MessageData, n)
	}
	var scratch types.MessageData
	for i := range n {
		m := &scratch
		if d.fill {
			m = &ms[i]
		}
		if d.null() {
			continue
		}
		var seen uint8
		if !d.mapEntries(func(key []byte) bool {
			switch string(key) {
			case "Code":
				return once(&seen, 1) && d.stringPointer(&m.Code)
			case "Value":
				return once(&seen, 2) && d.stringPointer(&m.Value)
			}
			return false
		}) {
			return false
		}
	}
	*v = ms
	return d.end()
}

func (d *answerDecoder) timestamps(v *[]time.Time) bool {
	n, ok := d.list()
	if !ok {
		return false
	}
	var ts []time.Time
	if d.fill {
		ts = make([]time.Time, n)
	}
	for i := range n {
		if d.null() {
			continue
		}
		t, ok := d.timestamp()
		if !ok {
			return false
		}
		if d.fill {
			ts[i] = t
		}
	}
	*v = ts
	return d.end()
}

func (d *answerDecoder) values(v *[]float64) bool {
	n, ok := d.list()
	if !ok {
		return false
	}
	var vs []float64
	if d.fill {
		vs = make([]float64, n)
	}
	for i := range n {
		if d.null() {
			continue
		}
		f, ok := d.float()
		if !ok {
			return false
		}
		if d.fill {
			vs[i] = f
		}
	}
	*v = vs
	return d.end()
}

// timestamp reads a timestamp as the SDK's ReadTime does: tag 1, then
// whole seconds, or seconds as a float to the millisecond.
func (d *answerDecoder) timestamp() (time.Time, bool) {
	if d.major() != cborTag {
		return time.Time{}, false
	}
	if tag, ok := d.arg(); !ok || tag != 1 {
		return time.Time{}, false
	}
	switch d.major() {
	case cborUint:
		s, ok := d.arg()
		if !ok || s > math.MaxInt64 {
			return time.Time{}, false
		}
		return time.Unix(int64(s), 0), true
	case cborNegInt:
		s, ok := d.arg()
		if !ok || s > math.MaxInt64 {
			return time.Time{}, false
		}
		return time.Unix(-1-int64(s), 0), true
	case cborSimple:
		f, ok := d.float()
		return time.UnixMilli(int64(f * 1e3)), ok
	}
	return time.Time{}, false
}

// float reads a number as the SDK's ReadFloat64 does: a double, a float
// or an integer (a half-float is left to it).
func (d *answerDecoder) float() (float64, bool) {
	switch d.major() {
	case cborUint:
		n, ok := d.arg()
		return float64(n), ok
	case cborNegInt:
		n, ok := d.arg()
		return -1 - float64(n), ok
	case cborSimple:
		switch d.p[d.off] & 0x1f {
		case 26:
			if d.off+5 > len(d.p) {
				return 0, false
			}
			f := math.Float32frombits(binary.BigEndian.Uint32(d.p[d.off+1:]))
			d.off += 5
			return float64(f), true
		case 27:
			if d.off+9 > len(d.p) {
				return 0, false
			}
			f := math.Float64frombits(binary.BigEndian.Uint64(d.p[d.off+1:]))
			d.off += 9
			return f, true
		}
	}
	return 0, false
}

// statusCode reads a result's status: one of the SDK's constants, or
// another string.
func (d *answerDecoder) statusCode(v *types.StatusCode) bool {
	at := d.off
	if b, ok := d.textBytes(); ok {
		for _, c := range statusCodes {
			if string(b) == string(c) {
				*v = c
				return true
			}
		}
	}
	d.off = at
	var s string
	ok := d.text(&s)
	*v = types.StatusCode(s)
	return ok
}

// statusCodes are the statuses a result has.
var statusCodes = types.StatusCode("").Values()

// stringPointer reads a text string into a pointer: a known one that
// points to the same string, or a new one, as the SDK's members of type
// *string.
func (d *answerDecoder) stringPointer(v **string) bool {
	at := d.off
	if b, ok := d.textBytes(); ok {
		for _, k := range d.known {
			if k != nil && *k == string(b) {
				*v = k
				return true
			}
		}
	}
	d.off = at
	var s string
	if !d.text(&s) {
		return false
	}
	if !d.fill {
		d.ptrs++
		return true
	}
	p := &d.strs[0]
	d.strs = d.strs[1:]
	*p = s
	*v = p
	return true
}

// text reads a text string of definite length.
func (d *answerDecoder) text(v *string) bool {
	b, ok := d.textBytes()
	if !ok {
		return false
	}
	if !d.fill {
		d.kept += len(b)
		return true
	}
	start := d.sb.Len()
	d.sb.Write(b)
	*v = d.sb.String()[start:]
	return true
}

func (d *answerDecoder) textBytes() ([]byte, bool) {
	if d.major() != cborText || d.p[d.off]&0x1f == cborIndefinite {
		return nil, false
	}
	n, ok := d.arg()
	if !ok || n > uint64(len(d.p)-d.off) {
		return nil, false
	}
	b := d.p[d.off : d.off+int(n)]
	d.off += int(n)
	return b, true
}

// mapEntries reads a map, of definite or indefinite length, whose keys
// are text, calling entry with each key to read its value; a null value
// is left to the SDK's deserializer, which skips the member.
func (d *answerDecoder) mapEntries(entry func(key []byte) bool) bool {
	if d.major() != cborMap {
		return false
	}
	indefinite := d.p[d.off]&0x1f == cborIndefinite
	var n uint64
	if indefinite {
		d.off++
	} else {
		var ok bool
		if n, ok = d.arg(); !ok {
			return false
		}
	}
	for i := uint64(0); ; i++ {
		if indefinite {
			if d.off >= len(d.p) {
				return false
			}
			if d.p[d.off] == cborBreak {
				d.off++
				return true
			}
		} else if i == n {
			return true
		}
		key, ok := d.textBytes()
		if !ok || d.off >= len(d.p) || d.p[d.off] == cborNull || d.p[d.off] == cborUndefined || !entry(key) {
			return false
		}
	}
}

// list reads a list's head and returns its length; an indefinite one's
// items are counted ahead (its break is read by end).
func (d *answerDecoder) list() (int, bool) {
	if d.major() != cborList {
		return 0, false
	}
	if d.p[d.off]&0x1f != cborIndefinite {
		n, ok := d.arg()
		if !ok || n > uint64(len(d.p)) { // each item is a byte at least
			return 0, false
		}
		d.push(false)
		return int(n), true
	}
	d.off++
	n, at := 0, d.off
	for at < len(d.p) && d.p[at] != cborBreak {
		var ok bool
		if at, ok = skip(d.p, at, 0); !ok {
			return 0, false
		}
		n++
	}
	if at >= len(d.p) {
		return 0, false
	}
	d.push(true)
	return n, true
}

// push and end bracket a list: end reads an indefinite list's break.
// Lists nest two deep at most (results, their values), so a word holds
// the stack, a bit a list.
func (d *answerDecoder) push(indefinite bool) {
	d.lists <<= 1
	if indefinite {
		d.lists |= 1
	}
}

func (d *answerDecoder) end() bool {
	indefinite := d.lists&1 == 1
	d.lists >>= 1
	if !indefinite {
		return true
	}
	if d.off >= len(d.p) || d.p[d.off] != cborBreak {
		return false
	}
	d.off++
	return true
}

// null reads a null or undefined list item, which the SDK's
// deserializer reads as the zero value.
func (d *answerDecoder) null() bool {
	if d.off < len(d.p) && (d.p[d.off] == cborNull || d.p[d.off] == cborUndefined) {
		d.off++
		return true
	}
	return false
}

// major is the major type of the next item, -1 at the end.
func (d *answerDecoder) major() int {
	if d.off >= len(d.p) {
		return -1
	}
	return int(d.p[d.off] >> 5)
}

// arg reads the next item's head and returns its argument.
func (d *answerDecoder) arg() (uint64, bool) {
	n, at, ok := readArg(d.p, d.off)
	if ok {
		d.off = at
	}
	return n, ok
}

// readArg reads the head at p[at] and returns its argument and where
// what follows it starts.
func readArg(p []byte, at int) (uint64, int, bool) {
	if at >= len(p) {
		return 0, at, false
	}
	minor := p[at] & 0x1f
	at++
	var size int
	switch {
	case minor < 24:
		return uint64(minor), at, true
	case minor == 24:
		size = 1
	case minor == 25:
		size = 2
	case minor == 26:
		size = 4
	case minor == 27:
		size = 8
	default:
		return 0, at, false
	}
	if at+size > len(p) {
		return 0, at, false
	}
	var n uint64
	for _, b := range p[at : at+size] {
		n = n<<8 | uint64(b)
	}
	return n, at + size, true
}

// skip returns where the item at p[at] ends. Items nest no deeper than
// maxDepth: an answer's are four deep.
func skip(p []byte, at, depth int) (int, bool) {
	if at >= len(p) || depth > maxDepth {
		return at, false
	}
	major, minor := p[at]>>5, p[at]&0x1f
	if minor == cborIndefinite {
		if major < cborText-1 || major == cborTag || major == cborSimple {
			return at, false
		}
		at++
		for at < len(p) && p[at] != cborBreak {
			var ok bool
			if at, ok = skip(p, at, depth+1); !ok {
				return at, false
			}
		}
		return at + 1, at < len(p)
	}
	if major == cborSimple {
		switch {
		case minor < 24:
			return at + 1, true
		case minor == 24:
			return at + 2, at+2 <= len(p)
		case minor == 25:
			return at + 3, at+3 <= len(p)
		case minor == 26:
			return at + 5, at+5 <= len(p)
		case minor == 27:
			return at + 9, at+9 <= len(p)
		}
		return at, false
	}
	n, next, ok := readArg(p, at)
	if !ok {
		return at, false
	}
	switch major {
	case cborUint, cborNegInt:
		return next, true
	case cborText - 1, cborText:
		if n > uint64(len(p)-next) {
			return at, false
		}
		return next + int(n), true
	case cborTag:
		return skip(p, next, depth+1)
	}
	items := n
	if major == cborMap {
		items *= 2
	}
	if items > uint64(len(p)) {
		return at, false
	}
	for range items {
		if next, ok = skip(p, next, depth+1); !ok {
			return at, false
		}
	}
	return next, true
}

// maxDepth bounds skip's recursion.
const maxDepth = 16
