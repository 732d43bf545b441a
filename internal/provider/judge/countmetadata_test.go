package judge

import (
	"strconv"
	"testing"
	"time"

	stats "github.com/canaryd/canaryd/internal/judge"
)

// TestCountMetadata checks what a counts measurement keeps in its metadata
// for the HTML report's charts: the decision, 1/alpha, the ratio with its
// confidence sequence, the tolerance and the direction.
func TestCountMetadata(t *testing.T) {
	o := CountOptions{CanaryBad: rate(20), CanaryTotal: rate(1000), BaselineBad: rate(50), BaselineTotal: rate(10000),
		Config: stats.CountConfig{Alpha: 0.01, Tolerance: 1.2}}
	tests := []struct {
		name string
		at   time.Duration
		want map[string]string
	}{
		{"no look yet", 0, map[string]string{MetadataDecision: "continue", MetadataLooks: "0", MetadataThreshold: "100",
			MetadataRatio: "NaN,0,+Inf", MetadataTolerance: "1.2", MetadataDirection: "increase"}},
		{"a fourfold rate fails", 10 * time.Minute, map[string]string{MetadataDecision: "Failed", MetadataLooks: "10", MetadataThreshold: "100",
			MetadataTolerance: "1.2", MetadataDirection: "increase"}},
	}
	for _, tt := range tests {
		obs := measureCounts(t, o, tt.at, false)
		if obs.Err != nil {
			t.Fatalf("%s: %v", tt.name, obs.Err)
		}
		for k, want := range tt.want {
			if got := obs.Metadata[k]; got != want {
				t.Errorf("%s: metadata %s = %q, want %q", tt.name, k, got, want)
			}
		}
	}
	v := measureCounts(t, o, 10*time.Minute, false).Value.(map[string]any)
	ratio := v["ratio"].(map[string]any)
	md := measureCounts(t, o, 10*time.Minute, false).Metadata
	want := formatG4(ratio["estimate"]) + "," + formatG4(ratio["lower"]) + "," + formatG4(ratio["upper"])
	if md[MetadataRatio] != want {
		t.Errorf("ratio %q, want %q (the result's %v)", md[MetadataRatio], want, ratio)
	}
}

func formatG4(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}
