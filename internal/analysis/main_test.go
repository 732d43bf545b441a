package analysis

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// run, measurement and prefetch must end with its analysis.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
