package outbound

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// transports' connections must be closed by the tests that make them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
