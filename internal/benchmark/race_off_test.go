//go:build !race

package benchmark

// raceDetector: see race_on_test.go.
const raceDetector = false
