package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider"
)

// recorder is a testing.TB that keeps what the suite says of a provider.
type recorder struct {
	testing.TB
	said []string
}

type fatal struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.said = append(r.said, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(fatal{})
}
func (r *recorder) Error(args ...any) { r.said = append(r.said, fmt.Sprint(args...)) }
func (r *recorder) Fatal(args ...any) {
	r.Error(args...)
	panic(fatal{})
}

// check runs one of the suite's checks and returns what it said.
func check(t *testing.T, run func(testing.TB)) []string {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(fatal); !ok {
					panic(p)
				}
			}
		}()
		run(r)
	}()
	return r.said
}

// fake is a provider that conforms, unless one of its fields says how not
// to.
type fake struct {
	nilLanguages   bool
	acceptsAll     bool
	hiddenSecret   bool
	reportsSecret  bool
	ignoresContext bool
}

func (f fake) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	var c struct {
		Query string `json:"query"`
	}
	if !f.acceptsAll {
		if err := json.Unmarshal(config, &c); err != nil || strings.Contains(string(config), "canarydNoSuchField") {
			return nil, nil, []api.FieldError{{Field: "provider.fake", Message: "bad configuration"}}
		}
	}
	return analysis.SourceFunc(func(ctx context.Context, _ time.Time) analysis.Observation {
		if f.ignoresContext {
			time.Sleep(time.Hour)
		}
		select {
		case <-ctx.Done():
			return analysis.Observation{Err: ctx.Err()}
		case <-time.After(10 * time.Millisecond): // its bounds
			return analysis.Observation{Err: errors.New("the answer is over the bounds")}
		}
	}), nil, nil
}

func (f fake) Languages() map[string]lang.Language {
	if f.nilLanguages {
		return nil
	}
	return map[string]lang.Language{"query": condition.Expr}
}

func (f fake) CredentialFields() []provider.CredentialField {
	if f.hiddenSecret {
		return nil
	}
	return []provider.CredentialField{{Path: "token"}}
}

func (f fake) Credentials(config json.RawMessage) []string {
	var c struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(config, &c)
	if c.Token == "" {
		return nil
	}
	return []string{c.Token}
}

func (f fake) Report(config json.RawMessage, _ provider.ReportOptions) provider.Report {
	return provider.Report{Request: func(map[string]string, time.Time) (string, string) {
		if f.reportsSecret {
			return "curl -H 'Authorization: " + strings.Join(f.Credentials(config), "") + "'", ""
		}
		return "curl", ""
	}}
}

// TestSuiteFindsWhatIsWrong: each check passes a conforming provider and
// says what is wrong with one that does not conform.
func TestSuiteFindsWhatIsWrong(t *testing.T) {
	patience = 300 * time.Millisecond
	credentialed := json.RawMessage(`{"query": "1", "token": "s3cr3t"}`)
	good := json.RawMessage(`{"query": "1"}`)
	checks := map[string]func(testing.TB, fake){
		"declares": func(tb testing.TB, f fake) { declares(tb, f) },
		"masks":    func(tb testing.TB, f fake) { masks(tb, "fake", f, credentialed) },
		"refuses":  func(tb testing.TB, f fake) { refuses(tb, "fake", f) },
		"measures": func(tb testing.TB, f fake) { measures(tb, "fake", f, good) },
	}
	for name, run := range checks {
		if said := check(t, func(tb testing.TB) { run(tb, fake{}) }); len(said) > 0 {
			t.Errorf("%s: a conforming provider fails: %v", name, said)
		}
	}
	for _, tc := range []struct {
		check, want string
		f           fake
	}{
		{"declares", "Languages is nil", fake{nilLanguages: true}},
		{"masks", "its field not declared", fake{hiddenSecret: true}},
		{"masks", "is in the report", fake{reportsSecret: true}},
		{"refuses", "want a problem and no source", fake{acceptsAll: true}},
		{"measures", "has not ended", fake{ignoresContext: true}},
	} {
		said := check(t, func(tb testing.TB) { checks[tc.check](tb, tc.f) })
		if !strings.Contains(strings.Join(said, "\n"), tc.want) {
			t.Errorf("%s of %+v: said %q, want %q", tc.check, tc.f, said, tc.want)
		}
	}
}
