package condition

import (
	"reflect"
	"sync"
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
// It is safe for concurrent use. A nil *Programs caches nothing.
type Programs struct {
	max int

	mu      sync.Mutex
	checked map[checkKey]verdict
	typed   map[typedKey]*typedProgram
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
	return &Programs{max: max, checked: map[checkKey]verdict{}, typed: map[typedKey]*typedProgram{}}
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
	p.mu.Lock()
	v, ok := p.checked[key]
	p.mu.Unlock()
	if ok {
		return v.cost, v.err
	}
	// Compiled without the lock: two callers may both compile a new text,
	// which is harmless and cheaper than serialising every compile.
	v.cost, v.err = validate(text, maxNodes)
	p.mu.Lock()
	makeRoom(p.checked, p.max)
	p.checked[key] = v
	p.mu.Unlock()
	return v.cost, v.err
}

// program returns text compiled for results of value's type (key), the
// compile error included.
func (p *Programs) program(text string, key reflect.Type, value any) *typedProgram {
	if p == nil {
		program, err := compileTyped(text, value)
		return &typedProgram{program: program, err: err}
	}
	k := typedKey{text, key}
	p.mu.Lock()
	tp, ok := p.typed[k]
	p.mu.Unlock()
	if ok {
		return tp
	}
	program, err := compileTyped(text, value)
	tp = &typedProgram{program: program, err: err}
	p.mu.Lock()
	makeRoom(p.typed, p.max)
	p.typed[k] = tp
	p.mu.Unlock()
	return tp
}

// makeRoom drops an entry when m is full: whichever the map's iteration
// yields first, which is as good as any, since the bound only matters
// against a caller posting ever new conditions; the texts in real use come
// back at once.
func makeRoom[K comparable, V any](m map[K]V, max int) {
	if len(m) < max {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}
