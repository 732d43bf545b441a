package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/store"
)

// migrate runs `canaryd migrate` with args and the environment env.
func migrate(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	code = run(context.Background(), append([]string{"migrate"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestMigrate: canaryd migrate brings an empty database, and one at the
// previous schema, up to date; says so when there is nothing to do; fails
// clearly (exit 3) on a store that is down, and never prints the URL's
// password.
func TestMigrate(t *testing.T) {
	cluster := pgtest.Start(t)
	const password = "hunter2-s3cret"
	withPassword := func(db *pgtest.Database) string {
		// The cluster trusts loopback: the password is only there to be
		// kept out of every output.
		return strings.Replace(db.URL, "postgres@", "postgres:"+password+"@", 1)
	}
	noLeak := func(t *testing.T, outs ...string) {
		t.Helper()
		for _, o := range outs {
			if strings.Contains(o, password) {
				t.Fatalf("the password is printed:\n%s", o)
			}
		}
	}

	t.Run("from empty", func(t *testing.T) {
		url := withPassword(cluster.Database(t))
		code, out, errOut := migrate(nil, "--store", url)
		noLeak(t, out, errOut)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("was at version 0, is now at version %d", store.SchemaVersion)) {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		// Again, from the environment: nothing to do.
		code, out, errOut = migrate(map[string]string{"CANARYD_STORE": url})
		noLeak(t, out, errOut)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("at version %d, up to date", store.SchemaVersion)) {
			t.Fatalf("second run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := store.OpenPostgres(ctx, url, store.Options{})
		if err != nil {
			t.Fatalf("the migrated store does not open: %v", err)
		}
		s.Close()
	})

	t.Run("from the previous schema", func(t *testing.T) {
		url := withPassword(cluster.Database(t))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, _, err := store.MigrateTo(ctx, url, store.SchemaVersion-1); err != nil {
			t.Fatal(err)
		}
		if _, err := store.OpenPostgres(ctx, url, store.Options{}); err == nil {
			t.Fatal("a store at the previous schema opened")
		}
		code, out, errOut := migrate(nil, "--store", url)
		noLeak(t, out, errOut)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("was at version %d, is now at version %d", store.SchemaVersion-1, store.SchemaVersion)) {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})

	t.Run("store down", func(t *testing.T) {
		db := cluster.Database(t)
		cluster.Stop()
		defer func() {
			if err := cluster.Start(); err != nil {
				t.Fatal(err)
			}
		}()
		code, out, errOut := migrate(nil, "--store", withPassword(db), "--timeout", "10s")
		noLeak(t, out, errOut)
		if code != exitError || !strings.Contains(errOut, "store unavailable") || !strings.Contains(errOut, "postgres://127.0.0.1:") {
			t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, exitError, out, errOut)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{nil, exitUsage, "--store is required"},
			{[]string{"--store", "memory:"}, exitUsage, "no schema to migrate"},
			{[]string{"--store", "mysql://root:" + password + "@db/x"}, exitUsage, "--store: mysql://db/x is neither memory: nor a postgres:// URL"},
			{[]string{"--store", "postgres://u:" + password + "@h/d", "--timeout", "0s"}, exitUsage, "--timeout: must be positive"},
			{[]string{"--no-such-flag"}, exitUsage, "Usage"},
			{[]string{"stray"}, exitUsage, "Usage"},
			{[]string{"-h"}, 0, ""},
		} {
			code, out, errOut := migrate(nil, c.args...)
			noLeak(t, out, errOut)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("migrate %q: exit %d (want %d)\nstderr: %s", c.args, code, c.code, errOut)
			}
			if c.code == 0 && !strings.Contains(out, "Usage") {
				t.Errorf("migrate -h: no usage:\n%s", out)
			}
		}
		// The usage, printed with the URL in the environment, does not
		// show it.
		env := map[string]string{"CANARYD_STORE": "postgres://canaryd:" + password + "@db:5432/canaryd"}
		for _, args := range [][]string{{"-h"}, {"--no-such-flag"}, {"stray"}} {
			code, out, errOut := migrate(env, args...)
			noLeak(t, out, errOut)
			if !strings.Contains(out+errOut, "Usage") {
				t.Errorf("migrate %q: exit %d, no usage:\n%s%s", args, code, out, errOut)
			}
		}
	})
}
