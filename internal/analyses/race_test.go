//go:build race

package analyses

// raceDetector is set when the tests run with the race detector, whose
// instrumentation moves some values to the heap: allocations are counted
// without it.
const raceDetector = true
