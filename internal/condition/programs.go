package condition

import (
	"reflect"

	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultProgramsSize is a sensible bound for a service's Programs: far more
// condition texts than a service's templates hold, and at a few KiB a
// program, a few MiB at most.
const DefaultProgramsSize = 1024

// Programs is a bounded cache of compiled conditions, shared by every
// Conditions compiled with it (see WithPrograms). A service compiles the same
// few condition texts over and over: Argo's web provider posts the same body
// every interval, and thousands of analyses of one template carry the same
// conditions. Without the cache, each of them pays two compiles (about 25 µs
// each): one to validate the text, and one for the measured value's type at
// its first measurement; and each analysis keeps its own program (about
// 1 KiB). With it, a text is validated once per node budget and compiled
// once per result type, and every analysis judging it shares the program.
//
// Sharing is sound because a compiled program depends only on the text and
// on the types of the environment's names, which are fixed but for result:
// the values it runs against are handed to it at each evaluation (see run).
//
// Each kind is kept for the texts used most recently: the bound only
// matters against a caller posting ever new conditions, and the texts in
// real use come back at once.
//
// It is safe for concurrent use. A nil *Programs caches nothing.
type Programs struct {
	checked *lru.Cache[checkKey, verdict]
	typed   *lru.Cache[typedKey, *typedProgram]
}

type checkKey struct {
	text     string
	maxNodes uint
}

// verdict is validate's answer for one text.
type verdict struct {
	cost cost
	err  error
}

type typedKey struct {
	text string
	// typ is the type of the dereferenced result (nil for a nil result).
	typ reflect.Type
}

// NewPrograms returns a cache of at most max validation verdicts and max
// compiled programs; max below 1 is taken as DefaultProgramsSize.
func NewPrograms(max int) *Programs {
	if max < 1 {
		max = DefaultProgramsSize
	}
	checked, err := lru.New[checkKey, verdict](max)
	if err != nil {
		panic(err) // only for a size below 1
	}
	typed, err := lru.New[typedKey, *typedProgram](max)
	if err != nil {
		panic(err)
	}
	return &Programs{checked: checked, typed: typed}
}

// WithPrograms makes Compile share validation verdicts and compiled programs
// through p with every other Conditions compiled with p.
func WithPrograms(p *Programs) Option { return func(o *options) { o.programs = p } }

// validate is the package's validate, remembered.
func (p *Programs) validate(text string, maxNodes uint) (cost, error) {
	if p == nil {
		return validate(text, maxNodes)
	}
	key := checkKey{text, maxNodes}
	if v, ok := p.checked.Get(key); ok {
		return v.cost, v.err
	}
	// Compiled outside the cache's lock: two callers may both compile a
	// new text, which is harmless and cheaper than serialising every
	// compile.
	var v verdict
	v.cost, v.err = validate(text, maxNodes)
	p.checked.Add(key, v)
	return v.cost, v.err
}

// program returns text compiled for results of value's type (key), the
// compile error included.
func (p *Programs) program(text string, key reflect.Type, value any) *typedProgram {
	if p == nil {
		return newTypedProgram(text, key, value)
	}
	k := typedKey{text, key}
	if tp, ok := p.typed.Get(k); ok {
		return tp
	}
	tp := newTypedProgram(text, key, value)
	p.typed.Add(k, tp)
	return tp
}

// newTypedProgram compiles text for results of value's type, key.
func newTypedProgram(text string, key reflect.Type, value any) *typedProgram {
	program, err := compileTyped(text, value)
	tp := &typedProgram{program: program, err: err}
	if err == nil {
		tp.compare = comparisonOf(program, key)
	}
	return tp
}
