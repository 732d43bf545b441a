package redact_test

import (
	"testing"

	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestMaskIsTheSpecs: a value masked by canaryd reads as one masked by a
// spec's resolution, so that a stored or shown spec masks one way.
func TestMaskIsTheSpecs(t *testing.T) {
	if redact.Mask != spec.Masked {
		t.Errorf("redact.Mask %q, spec.Masked %q: want one mask", redact.Mask, spec.Masked)
	}
}
