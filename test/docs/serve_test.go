package docs

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serveShim is the canaryd a ```sh serve block finds first on PATH. Its
// `canaryd serve …` starts the real canaryd serve with the block's own
// flags, in the background, on the block's own loopback port
// (CANARYD_LISTEN: the flags, had the block any, would win), and returns
// once it answers /readyz; if it exits first, or is not ready within 30 s,
// it fails with its log. Every other command is the real canaryd's.
const serveShim = `#!/bin/bash
if [ "$1" != serve ]; then exec "$DOCS_CANARYD" "$@"; fi
CANARYD_LISTEN="127.0.0.1:$DOCS_SERVE_PORT" "$DOCS_CANARYD" "$@" >serve.log 2>&1 &
pid=$!
for _ in $(seq 300); do
	if ! kill -0 "$pid" 2>/dev/null; then
		code=0; wait "$pid" || code=$?
		echo "canaryd serve exited with status $code before it was ready" >&2
		exit 1
	fi
	# The examples' curl fails on an HTTP error (--fail-with-body).
	if curl -s -o /dev/null "http://127.0.0.1:$DOCS_SERVE_PORT/readyz"; then
		exit 0
	fi
	sleep 0.1
done
echo "canaryd serve was not ready within 30 s" >&2
exit 1
`

// serving prepares a ```sh serve block: the block as it runs and its
// environment. Its `canaryd serve` is the shim's, and what the block asks
// of http://localhost:8080 reaches that canaryd, not the world's. The
// paths a server's configuration has (/etc/canaryd/templates, the webhook
// secret /etc/canaryd/webhook-secret) are the scratch directory's, holding
// the repository's templates and the world's secret; its Prometheus
// (http://prometheus:9090, http://localhost:9090) is the world's. A block
// that builds canaryd first (make build, then ./bin/canaryd) runs the
// canaryd the test built from the tree.
func (w *world) serving(dir, body string) (script string, env []string, err error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	etc := filepath.Join(dir, "etc", "canaryd")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.Symlink(filepath.Join(w.root, "testdata", "templates"), filepath.Join(etc, "templates")); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(etc, "webhook-secret"), []byte(w.secret), 0o600); err != nil {
		return "", nil, err
	}
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.TrimSpace(l) == "make build" {
			l = ": make build: canaryd is already built from the tree"
		}
		lines = append(lines, l)
	}
	script = strings.NewReplacer(
		"http://localhost:8080", "http://127.0.0.1:"+port,
		"http://prometheus:9090", w.prom,
		"/etc/canaryd/", etc+"/",
		"./bin/canaryd ", "canaryd ",
	).Replace(strings.Join(lines, "\n"))
	env = append(w.env(),
		"PATH="+strings.Join([]string{w.shim, w.bin, w.tools, os.Getenv("PATH")}, string(os.PathListSeparator)),
		"DOCS_CANARYD="+filepath.Join(w.bin, "canaryd"),
		"DOCS_SERVE_PORT="+port,
	)
	return w.substitute(script), env, nil
}

// freePort is a loopback port nothing listens on now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// stopGroup stops what is left of a block's process group: SIGTERM, and
// SIGKILL to what still runs 10 s later.
func stopGroup(pgid int) {
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	fmt.Fprintf(os.Stderr, "docs: process group %d killed: it did not stop on SIGTERM within 10 s\n", pgid)
}
