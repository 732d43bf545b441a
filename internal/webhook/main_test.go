package webhook

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// stream's delivery loop must end once its last event is delivered, given
// up or abandoned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
