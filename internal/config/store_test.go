package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "key", strings.Repeat("ab", 32)+"\n")
	file := writeFile(t, dir, "c.yaml", "store: \"memory:\"\nstoreSecretKeyFile: key\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want Storage
	}{
		{name: "default", want: Storage{Store: "memory:", StoreLease: DefaultStoreLease}},
		{name: "flag", args: []string{"--store", "memory:", "--store-secret-key-file", keyFile},
			want: Storage{Store: "memory:", StoreSecretKeyFile: keyFile, StoreSecretKey: Secret(bytes.Repeat([]byte{0xab}, 32)), StoreLease: DefaultStoreLease}},
		{name: "environment", env: []string{"CANARYD_STORE", "memory:"}, want: Storage{Store: "memory:", StoreLease: DefaultStoreLease}},
		{name: "postgres", args: []string{"--store", "postgres://canaryd:pw@db:5432/canaryd", "--store-lease", "5s"},
			want: Storage{Store: "postgres://canaryd:pw@db:5432/canaryd", StoreLease: 5 * time.Second}},
		{name: "file, its path relative to it", args: []string{"--config", file},
			want: Storage{Store: "memory:", StoreSecretKeyFile: keyFile, StoreSecretKey: Secret(bytes.Repeat([]byte{0xab}, 32)), StoreLease: DefaultStoreLease}},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.Storage != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, c.Storage, tc.want)
		}
	}
}

// A store URL that is not one, a lease too short and a bad key file are
// refused naming the flag, never quoting the URL's password nor the key.
func TestStoreInvalid(t *testing.T) {
	dir := t.TempDir()
	badKey := writeFile(t, dir, "key", "not-a-key-9a8b7c\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "not a store", args: []string{"--store", "mysql://root:pw-1f2e3d@db/x"}, want: "--store: mysql://db/x is neither memory: nor a postgres:// URL"},
		{name: "from the environment", env: []string{"CANARYD_STORE", "redis://:pw-1f2e3d@cache:6379"}, want: "CANARYD_STORE"},
		{name: "a bad key", args: []string{"--store-secret-key-file", badKey}, want: "--store-secret-key-file: not a 32-byte key"},
		{name: "a lease too short", args: []string{"--store-lease", "500ms"}, want: "--store-lease: must be at least 1s"},
		{name: "a missing key", args: []string{"--store-secret-key-file", dir + "/missing"}, want: "--store-secret-key-file:"},
	} {
		_, err := Load(tc.args, env(tc.env...), io.Discard)
		var ce *Error
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		msg := err.Error()
		if errors.As(err, &ce) {
			msg = strings.Join(ce.Problems, "\n")
		}
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, msg, tc.want)
		}
		if strings.Contains(msg, "pw-1f2e3d") || strings.Contains(msg, "9a8b7c") {
			t.Errorf("%s: a secret is quoted: %v", tc.name, msg)
		}
	}
}

// With a postgres store, --retention defaults to 30 days unless a flag,
// its variable or the file sets it; with memory: it keeps its default.
func TestRetentionWithStore(t *testing.T) {
	const pg = "postgres://canaryd@db:5432/canaryd"
	dir := t.TempDir()
	storeOnly := writeFile(t, dir, "store.yaml", "store: "+pg+"\n")
	withRetention := writeFile(t, dir, "retention.yaml", "store: "+pg+"\nretention: 36h\n")
	emptyRetention := writeFile(t, dir, "empty.yaml", "store: "+pg+"\nretention:\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want time.Duration
	}{
		{name: "memory", want: DefaultRetention},
		{name: "memory, given", args: []string{"--retention", "2h"}, want: 2 * time.Hour},
		{name: "postgres flag", args: []string{"--store", pg}, want: DefaultStoreRetention},
		{name: "postgres variable", env: []string{"CANARYD_STORE", pg}, want: DefaultStoreRetention},
		{name: "postgres in the file", args: []string{"--config", storeOnly}, want: DefaultStoreRetention},
		{name: "postgres, a file key without a value", args: []string{"--config", emptyRetention}, want: DefaultStoreRetention},
		{name: "postgres, --retention", args: []string{"--store", pg, "--retention", "2h"}, want: 2 * time.Hour},
		{name: "postgres, --retention the in-memory default", args: []string{"--store", pg, "--retention", "1h"}, want: time.Hour},
		{name: "postgres, CANARYD_RETENTION", args: []string{"--store", pg}, env: []string{"CANARYD_RETENTION", "3d"}, want: 72 * time.Hour},
		{name: "postgres, the file's retention", args: []string{"--config", withRetention}, want: 36 * time.Hour},
		{name: "memory flag over a postgres file", args: []string{"--config", storeOnly, "--store", "memory:"}, want: DefaultRetention},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.Retention != tc.want {
			t.Errorf("%s: retention %v, want %v", tc.name, c.Retention, tc.want)
		}
	}
	if DefaultStoreRetention != 720*time.Hour {
		t.Errorf("DefaultStoreRetention = %v, want 720h (30 days)", DefaultStoreRetention)
	}

	// -h and the reference say both defaults.
	var help bytes.Buffer
	if _, err := Load([]string{"-h"}, env(), &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if want := "(default 1h; 720h with a postgres --store)"; !strings.Contains(help.String(), want) {
		t.Errorf("-h does not say %q:\n%s", want, help.String())
	}
	if want := "| `1h`; `720h` with a postgres `--store` |"; !strings.Contains(string(Reference()), want) {
		t.Errorf("the reference does not say %q", want)
	}
}
