//go:build !race

package datadog_test

const raceEnabled = false
