package config

import (
	"bytes"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// referenceFile is the committed configuration reference.
const referenceFile = "../../docs/configuration.md"

// TestReference checks that the committed configuration reference is the
// one the table of settings generates, so that it cannot drift from the
// flags, variables and file keys.
func TestReference(t *testing.T) {
	committed, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatalf("%v: generate it with `go generate ./internal/config`", err)
	}
	if !bytes.Equal(committed, Reference()) {
		t.Errorf("docs/configuration.md differs from what the settings generate: run `go generate ./internal/config` and commit it")
	}
}

// TestReferenceNamesEverySetting checks that the reference lists every
// setting by its flag, variable and file key, with its default.
func TestReferenceNamesEverySetting(t *testing.T) {
	ref := string(Reference())
	for _, s := range settings() {
		want := []string{"`" + s.key() + "`"}
		if !s.fileOnly {
			want = []string{"`--" + s.name + "`", "`" + EnvName(s.name) + "`"}
			if k := s.key(); k != "" {
				want = append(want, "`"+k+"`")
			}
		}
		for _, w := range want {
			if !strings.Contains(ref, w) {
				t.Errorf("%s: the reference lacks %s", s.name, w)
			}
		}
	}
	for _, w := range []string{"`--max-metrics` | `CANARYD_MAX_METRICS` | `maxMetrics` | `50` |", "`--max-retained-bytes` | `CANARYD_MAX_RETAINED_BYTES` | `maxRetainedBytes` | `64MiB` |",
		"`--retention` | `CANARYD_RETENTION` | `retention` | `1h`; `720h` with a postgres `--store` |", "| — | — | `prometheus` |", "| `tls.caFile` |", "| `basicAuth.passwordFile` |"} {
		if !strings.Contains(ref, w) {
			t.Errorf("the reference lacks %q", w)
		}
	}
}

// TestFileKeys checks that every key the configuration file has had is
// still read, and that every setting's default, written in the file under
// its key, reads back as the default: the file and the flags are the same
// table.
func TestFileKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, s := range settings() {
		keys[s.key()] = true
	}
	for _, k := range []string{"listen", "logLevel", "prometheus", "prometheusUrl", "prometheusOauth2TokenUrl", "templates", "templatesPollInterval",
		"evaluateTimeout", "webhookAllow", "webhookSecretFile", "webhookMaxElapsed", "webhookTimeout", "maxWebhookBacklog", "authTokenFile",
		"maxAnalyses", "maxFinished", "retention", "shutdownGrace", "errorRetry", "maxAnalysisDuration", "maxMetrics", "maxConditionLength",
		"maxStreams", "maxQueryTimeout", "maxBacktests", "maxBacktestWindow", "maxBacktestStarts", "maxBacktestMeasurements", "maxRounds",
		"maxRetainedBytes", "minRetention", "maxResultValues", "maxQueryLength", "verbatimArgs", "replicaName", "peers", "store", "storeSecretKeyFile"} {
		if !keys[k] {
			t.Errorf("the file key %s is no longer read", k)
		}
	}

	var file strings.Builder
	for _, s := range settings() {
		if s.key() == "" || s.get == nil {
			continue
		}
		v := s.get(Default())
		if v == "" {
			continue
		}
		if s.list {
			v = "[" + v + "]"
		}
		if strings.HasSuffix(v, ":") {
			v = strconv.Quote(v) // memory: is not a YAML scalar unquoted
		}
		file.WriteString(s.key() + ": " + v + "\n")
	}
	c, err := Load([]string{"--config", writeFile(t, t.TempDir(), "c.yaml", file.String())}, env(), io.Discard)
	if err != nil {
		t.Fatalf("the defaults, written in the file:\n%s\n%v", file.String(), err)
	}
	c.File = ""
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("the defaults, written in the file, read back as\n%+v\nwant\n%+v", c, Default())
	}
}

// TestFileDatasourceLines checks that an unknown key inside a datasource
// is named with its line in the file.
func TestFileDatasourceLines(t *testing.T) {
	file := writeFile(t, t.TempDir(), "c.yaml", "listen: :9\nprometheus:\n  - url: http://a:9090\n    bearerToken: x\n")
	_, err := Load([]string{"--config", file}, env(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), file+": line 4: unknown key bearerToken (in a datasource)") {
		t.Errorf("an unknown datasource key: %v", err)
	}
}

// TestEveryNumberBounded checks that every number setting says what it
// refuses, so that none can be switched off or made negative unnoticed.
func TestEveryNumberBounded(t *testing.T) {
	for _, s := range settings() {
		if s.num != nil && s.bound == (bound{}) {
			t.Errorf("--%s has no bound", s.name)
		}
		if s.num != nil && s.check(Default()) != "" {
			t.Errorf("--%s: its default is refused: %s", s.name, s.check(Default()))
		}
	}
}

// TestValues checks that the values logged at start are typed, name each
// setting by its flag, and leave out what may carry credentials in a URL.
func TestValues(t *testing.T) {
	c := Default()
	c.PrometheusOAuth2TokenURLs = []string{"https://user:pass@idp.example/token"}
	got := map[string]any{}
	for _, v := range c.Values() {
		got[v.Name] = v.Value
	}
	for name, want := range map[string]any{"max-analyses": 100, "retention": time.Hour, "max-retained-bytes": int64(64 << 20), "verbatim-args": false, "listen": ":8080", "log-level": "info"} {
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("%s: %#v, want %#v", name, got[name], want)
		}
	}
	for _, name := range []string{"prometheus", "prometheus-url", "prometheus-oauth2-token-url", "peers", "config"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s is among the values", name)
		}
	}
}
