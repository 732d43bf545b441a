package promreg

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// gathered returns how many families named name reg gathers.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() == name {
			n++
		}
	}
	return n
}

func TestWith(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	f, registered := With(reg)
	c := f.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "A."})
	c.Inc()
	if err := registered(); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if n := gathered(t, reg, "a_total"); n != 1 {
		t.Errorf("a_total gathered %d times, want once", n)
	}

	// The same name again, twice: both failures are returned, no panic.
	f, registered = With(reg)
	f.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "A."})
	f.NewGauge(prometheus.GaugeOpts{Name: "b", Help: "B."})
	f.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "A."})
	err := registered()
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("registering a_total again: %v, want AlreadyRegisteredError", err)
	}
	if joined, ok := err.(interface{ Unwrap() []error }); !ok || len(joined.Unwrap()) != 2 {
		t.Errorf("error %v, want the two failures", err)
	}
	if n := gathered(t, reg, "b"); n != 1 {
		t.Errorf("b, made between failures, gathered %d times, want once", n)
	}
}

func TestWithNil(t *testing.T) {
	f, registered := With(nil)
	f.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "A."}).Inc()
	if err := registered(); err != nil {
		t.Error(err)
	}
}
