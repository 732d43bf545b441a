package condition

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// TestProgramsSameAnswers: conditions compiled with a shared cache judge
// every value as those compiled alone do, errors and their texts included,
// whether the cache is cold or warm.
func TestProgramsSameAnswers(t *testing.T) {
	conditions := [][2]string{
		{"result[0] >= 0.99", ""},
		{"", "result[0] < 0.95"},
		{"all(result, {# >= 0.9})", "any(result, {# < 0.5})"},
		{"result > 0.5", ""},
		{"len(result) == 0 || result[0] <= 500", ""},
		{"isNaN(result[0]) || result[0] > 0.9", ""},
		{"asInt(result) == 3", ""},
		{`result == "x"`, ""},
	}
	values := []any{[]float64{0.995}, []float64{0.4, 0.97}, []float64{}, 0.7, math.NaN(), []float64{math.NaN()}, nil, "3", 3}
	programs := NewPrograms(0)
	for round := range 2 {
		for _, cs := range conditions {
			alone, errsAlone := Compile(cs[0], cs[1])
			shared, errsShared := Compile(cs[0], cs[1], WithPrograms(programs))
			if fmt.Sprint(errsAlone) != fmt.Sprint(errsShared) {
				t.Fatalf("round %d, %q: problems %v alone, %v shared", round, cs, errsAlone, errsShared)
			}
			if errsAlone != nil {
				continue
			}
			for _, v := range values {
				wantPhase, wantErr := alone.Judge(v)
				gotPhase, gotErr := shared.Judge(v)
				if gotPhase != wantPhase || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("round %d, %q on %#v: shared (%s, %v), alone (%s, %v)", round, cs, v, gotPhase, gotErr, wantPhase, wantErr)
				}
			}
		}
	}
}

// TestProgramsShared: two analyses of one condition judge with one program,
// and a validation problem is found once and reported to both.
func TestProgramsShared(t *testing.T) {
	programs := NewPrograms(0)
	a, _ := Compile("result[0] >= 0.99", "", WithPrograms(programs))
	b, _ := Compile("result[0] >= 0.99", "", WithPrograms(programs))
	for _, c := range []*Conditions{a, b} {
		if phase, err := c.Judge([]float64{1}); phase != api.PhaseSuccessful || err != nil {
			t.Fatalf("Judge = %s, %v", phase, err)
		}
	}
	pa := loadProgram(t, a)
	if pb := loadProgram(t, b); pa != pb {
		t.Errorf("the two Conditions compiled the condition twice")
	}

	_, errs1 := Compile("result >", "", WithPrograms(programs))
	_, errs2 := Compile("result >", "", WithPrograms(programs))
	if errs1 == nil || fmt.Sprint(errs1) != fmt.Sprint(errs2) {
		t.Errorf("problems %v then %v, want the same syntax error twice", errs1, errs2)
	}
	// The node budget is part of the verdict.
	long := "result[0] > 1 || result[0] > 2 || result[0] > 3"
	if _, errs := Compile(long, "", WithPrograms(programs)); errs != nil {
		t.Errorf("no budget: %v", errs)
	}
	if _, errs := Compile(long, "", WithPrograms(programs), MaxNodes(5)); errs == nil {
		t.Errorf("a budget of 5 nodes accepted %q, which the cache had accepted without one", long)
	}
}

func loadProgram(t *testing.T, c *Conditions) *typedProgram {
	t.Helper()
	var got *typedProgram
	c.success.programs.Range(func(_, v any) bool {
		got = v.(*typedProgram)
		return false
	})
	if got == nil {
		t.Fatal("no program compiled")
	}
	return got
}

// TestProgramsBound: however many texts pass through, the cache holds at
// most its bound of each kind.
func TestProgramsBound(t *testing.T) {
	programs := NewPrograms(8)
	for i := range 50 {
		c, errs := Compile(fmt.Sprintf("result[0] >= %d", i), "", WithPrograms(programs))
		if errs != nil {
			t.Fatal(errs)
		}
		if phase, err := c.Judge([]float64{float64(i)}); phase != api.PhaseSuccessful || err != nil {
			t.Fatalf("%d: Judge = %s, %v", i, phase, err)
		}
	}
	if programs.checked.Len() > 8 || programs.typed.Len() > 8 {
		t.Errorf("cache holds %d verdicts and %d programs, bound 8", programs.checked.Len(), programs.typed.Len())
	}
}

// TestProgramsKeepTheMostRecent: when the cache is full, the text used
// least recently makes room, not one in use.
func TestProgramsKeepTheMostRecent(t *testing.T) {
	programs := NewPrograms(2)
	for _, text := range []string{"result[0] > 1", "result[0] > 2", "result[0] > 1", "result[0] > 3"} {
		if _, errs := Compile(text, "", WithPrograms(programs)); errs != nil {
			t.Fatal(errs)
		}
	}
	var kept []string
	for _, k := range programs.checked.Keys() {
		kept = append(kept, k.text)
	}
	slices.Sort(kept)
	if want := []string{"result[0] > 1", "result[0] > 3"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
}

// TestProgramsConcurrent is for the race detector: many analyses compiling
// and judging the same conditions at once.
func TestProgramsConcurrent(t *testing.T) {
	programs := NewPrograms(4)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				c, errs := Compile(fmt.Sprintf("result[0] >= 0.%d", (i+j)%6), "", WithPrograms(programs))
				if errs != nil {
					t.Error(errs)
					return
				}
				if _, err := c.Judge([]float64{0.5}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
