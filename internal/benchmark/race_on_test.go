//go:build race

package benchmark

// raceDetector says the tests run with the race detector, which adds
// allocations of its own and makes sync.Pool drop a share of what is put
// back: counts of allocations compared between providers mean nothing
// then (make test runs TestMeasureCost without it as well).
const raceDetector = true
