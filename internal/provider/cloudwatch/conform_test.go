package cloudwatch_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
	"github.com/canaryd/canaryd/internal/provider/providertest"
)

// TestConforms runs the providers' conformance suite over the CloudWatch
// provider, its endpoint the suite's backend (cmd/canaryd runs it over the
// service's whole registry too).
func TestConforms(t *testing.T) {
	var mu sync.Mutex
	var providers []*cloudwatch.Provider
	t.Cleanup(func() {
		for _, p := range providers {
			p.CloseIdleConnections()
		}
	})
	providertest.Run(t, providertest.Suite{
		Registry: func(backend string) *provider.Registry {
			p, err := cloudwatch.New(cloudwatch.Options{Load: cloudwatchtest.Config(backend)})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			providers = append(providers, p)
			mu.Unlock()
			return provider.NewRegistry().Register("cloudWatch", p)
		},
		Configs: map[string]func(string) json.RawMessage{
			"cloudWatch": func(string) json.RawMessage { return json.RawMessage(rateConfig) },
		},
	})
}
