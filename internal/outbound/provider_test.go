package outbound_test

import (
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/outbound"
)

func TestProviderBounds(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		values  int
		max     int64
	}{{-1, 0, 1 << 30}, {0, -1, 1 << 30}} {
		if _, _, err := outbound.ProviderBounds("p", c.timeout, c.values, c.max); err == nil || err.Error() != "p: the bounds must not be negative" {
			t.Errorf("ProviderBounds(%v, %d): %v", c.timeout, c.values, err)
		}
	}
	v, b, err := outbound.ProviderBounds("p", 0, 0, 1<<62)
	if err != nil || v != limits.MaxResultValues || b != int64(limits.MaxResultValues)*limits.ResponseBytesPerValue+limits.ResponseBytesFixed {
		t.Errorf("default: %d, %d, %v", v, b, err)
	}
	if v, b, err := outbound.ProviderBounds("p", time.Second, 10, 100); err != nil || v != 10 || b != 100 {
		t.Errorf("capped: %d, %d, %v", v, b, err)
	}
}
