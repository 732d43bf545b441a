package condition

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/expr-lang/expr/file"
)

// The helpers below are the functions Argo Rollouts puts in a condition's
// environment. Their Go signatures matter as much as their bodies: expr
// type-checks calls against them, so a different signature would change
// which conditions compile and the messages users see.

func isNaN(f float64) bool { return math.IsNaN(f) }

func isInf(f float64) bool { return math.IsInf(f, 0) }

// asInt panics on what it cannot convert because that is how Argo reports
// it: expr's VM recovers the panic and the measurement becomes an Error whose
// message is the panic value (for example strconv's parse error).
func asInt(in any) int64 {
	switch v := in.(type) {
	case float64:
		return int64(v)
	case float32:
		return int64(v)
	case int:
		return int64(v)
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	case uint:
		return int64(v)
	case uint8:
		return int64(v)
	case uint16:
		return int64(v)
	case uint32:
		return int64(v)
	case uint64:
		return int64(v)
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(err)
		}
		return n
	}
	panic(fmt.Sprintf("asInt() not supported on %v %v", reflect.TypeOf(in), in))
}

// asFloat panics for the same reason as asInt.
func asFloat(in any) float64 {
	switch v := in.(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case int:
		return float64(v)
	case int8:
		return float64(v)
	case int16:
		return float64(v)
	case int32:
		return float64(v)
	case int64:
		return float64(v)
	case uint:
		return float64(v)
	case uint8:
		return float64(v)
	case uint16:
		return float64(v)
	case uint32:
		return float64(v)
	case uint64:
		return float64(v)
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			panic(err)
		}
		return f
	}
	panic(fmt.Sprintf("asFloat() not supported on %v %v", reflect.TypeOf(in), in))
}

// isNil reports whether a provider's value means "no data": untyped nil or a
// nil pointer, map, slice or channel. Argo also lists arrays here, which makes
// reflect panic; an array is never nil, so canaryd answers false instead.
func isNil(in any) bool {
	if in == nil {
		return true
	}
	switch reflect.TypeOf(in).Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan:
		return reflect.ValueOf(in).IsNil()
	}
	return false
}

// valueFromPointer lets providers hand over pointers (Datadog's *float64 is
// nil when there is no data) while conditions see plain values. It
// dereferences one level only, as Argo does.
func valueFromPointer(in any) any {
	switch v := in.(type) {
	case float64:
		// The Prometheus provider's results, told without reflection.
		return in
	case []float64:
		if v == nil {
			return nil
		}
		return in
	}
	if isNil(in) {
		return nil
	}
	if reflect.TypeOf(in).Kind() != reflect.Pointer {
		return in
	}
	return reflect.ValueOf(in).Elem().Interface()
}

// Doubles is a list of numbers that conditions read as Argo's
// []interface{} of the same numbers. A provider whose Argo result is a
// list of interface values (InfluxDB's) hands its numbers as Doubles,
// unboxed: the conditions are type-checked as for a []interface{}, so
// that a comparison Argo's checker allows, such as result[0] == "ok"
// (false), is not refused as one of a float64 with a string.
type Doubles []float64

// isNilOrEmpty decides whether an evaluation error is reported as "no data":
// Argo v1.10 replaces every error on such a result, because an index into an
// empty vector is by far the most common cause. Empty maps do not count.
func isNilOrEmpty(in any) bool {
	if isNil(in) {
		return true
	}
	switch v := reflect.ValueOf(in); v.Kind() {
	case reflect.Slice, reflect.Array:
		return v.Len() == 0
	}
	return false
}

// isNilFunc and defaultFunc build Argo's isNil() and default(). Both ignore
// the argument the condition passes and look at the whole, top-level result:
// `isNil(result.x)` asks about result, not result.x. Users rely on that being
// exactly Argo's behaviour, odd as it is.
func isNilFunc(result any) func(any) bool {
	return func(any) bool { return isNil(result) }
}

func defaultFunc(result any) func(any, any) any {
	return func(_, fallback any) any {
		if isNil(result) {
			return fallback
		}
		return valueFromPointer(result)
	}
}

// cleanError reduces expr's positioned errors to their message, as Argo
// Rollouts does, so that messages match what its users know. Like Argo it
// looks only at the error itself, not at what it wraps.
func cleanError(err error) error {
	if fe, ok := err.(*file.Error); ok {
		return errors.New(fe.Message)
	}
	return err
}
