//go:build race

package datadog_test

// raceEnabled: the race detector changes what a measurement allocates.
const raceEnabled = true
