package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestServeExampleConfigs starts canaryd serve with every example
// configuration docs/operations.md names (testdata/config), as an operator who
// copies one would, and checks that it comes up and stops cleanly. The
// examples' datasources are not reachable from here; starting needs none of
// them, but it does read every file an example names (CA, client
// certificate, passwords, tokens).
func TestServeExampleConfigs(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configurations: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			logs, exited, followed := serveInProcess(t, ctx, []string{"--config", file, "--listen", "127.0.0.1:0", "--shutdown-grace", "100ms"},
				func(string) string { return "" })
			select {
			case <-logs.addr:
			case code := <-exited:
				<-followed
				t.Fatalf("serve --config %s exited %d before listening:\n%s", file, code, logs.text())
			case <-time.After(30 * time.Second):
				t.Fatalf("serve --config %s did not start listening", file)
			}
			cancel()
			if code := <-exited; code != 0 {
				t.Errorf("exit code %d after a clean shutdown, want 0:\n%s", code, logs.text())
			}
			<-followed
		})
	}
}
