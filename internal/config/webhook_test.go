package config

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/webhook"
)

// TestMaxWebhookBacklog checks --max-webhook-backlog's default, that it is
// read from a flag, a variable and the file, and that it cannot be
// switched off.
func TestMaxWebhookBacklog(t *testing.T) {
	file := writeFile(t, t.TempDir(), "c.yaml", "maxWebhookBacklog: 30\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want int
	}{
		{"default", nil, nil, webhook.DefaultMaxBacklog},
		{"flag", []string{"--max-webhook-backlog", "10"}, nil, 10},
		{"variable", nil, []string{"CANARYD_MAX_WEBHOOK_BACKLOG", "20"}, 20},
		{"file", []string{"--config", file}, nil, 30},
		{"flag over file", []string{"--config", file, "--max-webhook-backlog", "5"}, nil, 5},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.MaxWebhookBacklog != tc.want {
			t.Errorf("%s: MaxWebhookBacklog = %d, want %d", tc.name, c.MaxWebhookBacklog, tc.want)
		}
	}
	for _, v := range []string{"0", "-1"} {
		_, err := Load([]string{"--max-webhook-backlog", v}, env(), io.Discard)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--max-webhook-backlog: must be at least 1, got "+v) {
			t.Errorf("--max-webhook-backlog %s: %v, want it refused", v, err)
		}
	}
}
