package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/canaryd/canaryd/internal/proctest"
)

// InstallHint says how to get PostgreSQL: `make test` does it on Debian.
const InstallHint = "`make test` installs it (make postgresql: apt-get install -y postgresql, as root on Debian)"

// readyTimeout bounds the server's start-up, stopTimeout its shutdown
// before the group is killed.
const (
	readyTimeout = 60 * time.Second
	stopTimeout  = 20 * time.Second
)

// Cluster is a throwaway PostgreSQL cluster.
type Cluster struct {
	// Port is the 127.0.0.1 port it listens on, the same across Stop and
	// Start.
	Port int
	// Dir holds the data directory and the unix socket; removed at the end.
	Dir string

	bin  string // directory of initdb and postgres
	cred *syscall.Credential

	mu   sync.Mutex
	proc *proctest.Process
	log  *proctest.Buffer
	dbs  atomic.Int64
}

// Database is one test's database.
type Database struct {
	// Name is the database's name.
	Name string
	// URL connects to it over TCP as the superuser postgres, with no
	// password (the cluster trusts 127.0.0.1 and its socket).
	URL string
}

// Start creates a cluster for t and starts it; the cluster is stopped and
// removed when t ends. It fails t, never skips it, when PostgreSQL is
// missing.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := newCluster()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgtest: postgres log:\n%s", c.Log())
		}
		c.remove()
	})
	return c
}

// shared is the cluster of Shared, started at its first use.
var shared struct {
	mu      sync.Mutex
	main    bool
	cluster *Cluster
	err     error
}

// VerifyTestMain runs the tests of a package that uses Shared, stops the
// shared cluster after them, and, when they passed, fails the run if a
// goroutine is left (goleak, with opts); then it exits, through
// goleak.Cleanup's function when opts has one. Call it from TestMain.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(mainRunner{m}, opts...)
}

// mainRunner runs the tests through Main, for goleak.VerifyTestMain.
type mainRunner struct{ m *testing.M }

func (r mainRunner) Run() int { return Main(r.m) }

// Main runs the tests of a package that uses Shared and stops the shared
// cluster after them, and returns their exit code. VerifyTestMain calls it
// and checks for leaked goroutines after it.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "pgtest: postgres log:\n%s\n", shared.cluster.Log())
		}
		shared.cluster.remove()
		shared.cluster = nil
	}
	return code
}

// Shared returns the cluster shared by the tests of this binary, started at
// the first call; Main stops it. A test that stops or restarts PostgreSQL
// must use a cluster of its own (Start) instead.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		t.Fatal("pgtest: Shared needs pgtest.Main in the package's TestMain, which stops the cluster")
	}
	if shared.cluster == nil && shared.err == nil {
		shared.cluster, shared.err = newCluster()
	}
	if shared.err != nil {
		t.Fatalf("pgtest: %v", shared.err)
	}
	return shared.cluster
}

// newCluster runs initdb into a new directory and starts postgres on it.
func newCluster() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempRoot(cred), "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, cred: cred, log: &proctest.Buffer{}}
	fail := func(err error) (*Cluster, error) {
		c.remove()
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	initdb.SysProcAttr = proctest.SysProcAttr(cred)
	initdb.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %v\n%s", err, out))
	}
	// The port is found by binding :0 and letting go; another process may
	// take it before postgres does, so a bind failure is retried.
	for attempt := 0; ; attempt++ {
		if c.Port, err = proctest.FreePort(); err != nil {
			return fail(err)
		}
		if err = c.Start(); err == nil {
			return c, nil
		}
		if attempt == 2 || !strings.Contains(c.Log(), "could not bind") && !strings.Contains(c.Log(), "already in use") {
			return fail(fmt.Errorf("%v\n%s", err, c.Log()))
		}
	}
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

// Start starts the cluster's postgres (again, after Stop or Kill) and waits
// until it accepts connections. Starting a running cluster does nothing.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return nil
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.data(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(c.Port),
		"-c", "unix_socket_directories="+c.Dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	// Stop, Kill and remove make sure it exits.
	proc, err := proctest.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	exited := proc.Exited()
	c.proc = proc
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			c.proc = nil
			return fmt.Errorf("postgres exited at start")
		case <-ctx.Done():
			c.stopLocked(syscall.SIGKILL)
			return fmt.Errorf("postgres not ready after %v: %v", readyTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts postgres down (a fast shutdown: clients are disconnected) and
// waits for it to exit: what an outage looks like to a client, a refused
// connection. Stopping a stopped cluster does nothing.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked(syscall.SIGINT)
}

// Kill kills postgres and its backends at once (SIGKILL), as a crash does;
// Start recovers the cluster.
func (c *Cluster) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked(syscall.SIGKILL)
}

// Restart stops postgres and starts it again.
func (c *Cluster) Restart() error {
	c.Stop()
	return c.Start()
}

// stopLocked sends sig to postgres' process group, kills it after
// stopTimeout, and kills anything left of the group (backends outliving a
// killed postmaster).
func (c *Cluster) stopLocked(sig syscall.Signal) {
	if c.proc == nil {
		return
	}
	c.proc.StopWith(sig, stopTimeout)
	c.proc = nil
}

// remove stops the cluster and removes its directory.
func (c *Cluster) remove() {
	c.Stop()
	_ = os.RemoveAll(c.Dir)
}

// Log returns what postgres wrote so far.
func (c *Cluster) Log() string { return c.log.String() }

// url connects to database name as postgres over TCP.
func (c *Cluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

// Database creates an empty database for t, dropped when t ends.
func (c *Cluster) Database(t testing.TB) *Database {
	t.Helper()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		running := c.proc != nil
		c.mu.Unlock()
		if !running {
			return // a stopped cluster is removed with its databases
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return &Database{Name: name, URL: c.url(name)}
}

// exec runs one statement in the postgres database.
func (c *Cluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(ctx, sql)
	return err
}

// findBin returns the directory of the newest installed PostgreSQL's
// initdb and postgres.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	type found struct {
		dir     string
		version int
	}
	var all []found
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil || v < 13 {
			continue
		}
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			all = append(all, found{d, v})
		}
	}
	if len(all) > 0 {
		return slices.MaxFunc(all, func(a, b found) int { return a.version - b.version }).dir, nil
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(initdb)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL 13 or newer not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH); the store's tests need a real one: " + InstallHint)
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// credential is who runs initdb and postgres: nil (the test's user) unless
// the test runs as root, which PostgreSQL refuses; then postgres, or
// nobody.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
		}
	}
	return nil, errors.New("running as root, and PostgreSQL refuses to: neither a postgres nor a nobody user exists to run it as")
}

// tempRoot is where the cluster's directory goes: the temporary directory,
// unless another user must reach it and cannot (a TMPDIR under /root); then
// /tmp.
func tempRoot(cred *syscall.Credential) string {
	dir := os.TempDir()
	if cred == nil {
		return dir
	}
	for d := dir; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil || info.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}
