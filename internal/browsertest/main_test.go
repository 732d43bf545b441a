package browsertest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that a browser leaves nothing running after its test:
// no goroutine of the DevTools connection, no process waiter.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
