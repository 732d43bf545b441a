//go:build race

package condition

// raceDetector is set when the tests run with the race detector, which
// makes expr's machine several times slower.
const raceDetector = true
