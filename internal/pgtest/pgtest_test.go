package pgtest_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canaryd/canaryd/internal/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.VerifyTestMain(m)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Each test's database is its own, and is gone after the test.
func TestDatabasesAreSeparateAndDropped(t *testing.T) {
	c := pgtest.Shared(t)
	var first string
	t.Run("first", func(t *testing.T) {
		db := c.Database(t)
		first = db.Name
		if !strings.HasPrefix(db.URL, "postgres://postgres@127.0.0.1:") {
			t.Fatalf("URL %q is not on loopback", db.URL)
		}
		conn := connect(t, db.URL)
		if _, err := conn.Exec(context.Background(), "CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
	})
	db := c.Database(t)
	if db.Name == first {
		t.Fatalf("two tests got database %s", first)
	}
	conn := connect(t, db.URL)
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a new database holds another test's table")
	}
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", first).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s outlived its test", first)
	}
	var version int
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 130000 {
		t.Fatalf("server version %d, want PostgreSQL 13 or newer", version)
	}
}

// A stopped cluster refuses connections; started again, it has kept its
// data and its port.
func TestStopAndStart(t *testing.T) {
	c := pgtest.Start(t)
	db := c.Database(t)
	conn := connect(t, db.URL)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	port := c.Port
	c.Stop()
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := pgx.Connect(ctx2, db.URL); err == nil {
		t.Fatal("connected to a stopped cluster")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if c.Port != port {
		t.Fatalf("port changed from %d to %d", port, c.Port)
	}
	var x int
	if err := connect(t, db.URL).QueryRow(ctx, "SELECT x FROM kept").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after restart: %d, %v", x, err)
	}
	c.Kill()
	if err := c.Restart(); err != nil {
		t.Fatalf("after a crash: %v", err)
	}
	if err := connect(t, db.URL).QueryRow(ctx, "SELECT x FROM kept").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after a crash: %d, %v", x, err)
	}
}

// The cluster's directory is removed with it.
func TestDirectoryRemoved(t *testing.T) {
	var dir string
	t.Run("cluster", func(t *testing.T) {
		dir = pgtest.Start(t).Dir
		if _, err := os.Stat(dir); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", dir, err)
	}
}
