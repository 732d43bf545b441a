// Package promreg makes and registers canaryd's Prometheus metrics with
// promauto's factory, each collector registered as it is made. A
// registration that fails (a name already taken on the registerer) is an
// error the package's constructor returns rather than a panic.
//
// What it must not do: keep a registry of its own, or register anywhere
// but on the Registerer it is given.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// With returns promauto's factory for reg, and a function that returns
// what registering the collectors made with it failed with, every failure
// joined, or nil. A nil reg registers nothing. The factory is for one
// goroutine, a constructor's.
func With(reg prometheus.Registerer) (promauto.Factory, func() error) {
	if reg == nil {
		return promauto.With(nil), func() error { return nil }
	}
	r := &registerer{Registerer: reg}
	return promauto.With(r), func() error { return errors.Join(r.errs...) }
}

// registerer keeps the errors that promauto's MustRegister would panic
// with.
type registerer struct {
	prometheus.Registerer
	errs []error
}

func (r *registerer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			r.errs = append(r.errs, err)
		}
	}
}
