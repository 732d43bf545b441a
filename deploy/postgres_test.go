package deploy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The files an operator creates beside the postgres overlay's
// kustomization, as its comments say: the store's URL in an env file under
// the key url, and the key that seals the store's secrets.
const (
	testStoreURL = "postgres://canaryd:s3cr%40t-pw@postgres.db.svc.cluster.local:5432/canaryd?sslmode=verify-full"
	testStoreEnv = "url=" + testStoreURL + "\n"
	testStoreKey = "5f4e3d2c1b0a99887766554433221100ffeeddccbbaa00112233445566778899\n"
)

// storeHandOver is what a SIGTERM on a postgres store may take beyond
// --shutdown-grace: an analysis that does not stop, or a store that does
// not answer, is waited for 3 s + 5 s, and the release of the leases 5 s
// (internal/server: stopTimeout, storeTimeout).
const storeHandOver = 13 * time.Second

// secretRef stands for an environment variable's value taken from a
// Secret's key.
func secretRef(name, key string) string { return "secret:" + name + "/" + key }

// withStoreFiles copies deploy/kustomize into a temporary directory with
// the files an operator creates beside the overlay's kustomization: its
// tokens, its store's URL and key. It returns the overlay's directory in
// the copy.
func withStoreFiles(t *testing.T, overlay string) string {
	t.Helper()
	dir := withTokens(t, overlay, testTokens)
	for name, content := range map[string]string{"store.env": testStoreEnv, "store.key": testStoreKey} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkStore checks a Deployment of several replicas on a postgres store:
// the URL from a Secret's key that holds the operator's URL, the sealing
// key from a Secret volume, the schema migrated by an initContainer that
// runs `canaryd migrate` with the same image and URL, no forwarding mesh,
// and a NetworkPolicy whose egress is DNS, PostgreSQL and Prometheus only.
func checkStore(t *testing.T, c serveConfig, dep deployment, secrets []secret, services []service, np networkPolicy) {
	t.Helper()
	pod := dep.Spec.Template.Spec
	findSecret := func(name string) (secret, bool) {
		i := slices.IndexFunc(secrets, func(s secret) bool { return s.Metadata.Name == name })
		if i < 0 {
			return secret{}, false
		}
		return secrets[i], true
	}
	decoded := func(s secret, key string) string {
		t.Helper()
		enc, ok := s.Data[key]
		if !ok {
			t.Fatalf("Secret %s has no key %q", s.Metadata.Name, key)
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("Secret %s key %q: %v", s.Metadata.Name, key, err)
		}
		return string(b)
	}

	if dep.Spec.Replicas < 2 {
		t.Errorf("replicas = %d: a store is for several replicas", dep.Spec.Replicas)
	}

	// The URL: CANARYD_STORE from a rendered Secret, whose key holds the
	// operator's URL exactly (no newline: migrate reads the variable as
	// it is).
	store := c.flag("store")
	ref, ok := strings.CutPrefix(store, "secret:")
	if !ok {
		t.Fatalf("--store is %q: want CANARYD_STORE from a Secret (secretKeyRef); the URL holds the database's password", store)
	}
	storeSecret, storeKey, _ := strings.Cut(ref, "/")
	sec, ok := findSecret(storeSecret)
	if !ok {
		t.Fatalf("CANARYD_STORE names Secret %q, which is not rendered", storeSecret)
	}
	if got := decoded(sec, storeKey); got != testStoreURL {
		t.Errorf("Secret %s key %q = %q, want the operator's URL %q", storeSecret, storeKey, got, testStoreURL)
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == storeSecret {
			t.Errorf("volume %q mounts the store's URL Secret: it belongs in the environment only", v.Name)
		}
	}

	// The sealing key: a file from a required Secret volume.
	keyFile := c.flag("store-secret-key-file")
	if keyFile == "" {
		t.Fatalf("--store-secret-key-file not set: analyses with secrets would be refused")
	}
	m, ok := c.container.mount(path.Dir(keyFile))
	if !ok {
		t.Fatalf("nothing is mounted at %s for --store-secret-key-file=%s", path.Dir(keyFile), keyFile)
	}
	v, _ := pod.volume(m.Name)
	switch {
	case v.Secret == nil:
		t.Errorf("volume %q for the store's key is not a Secret", m.Name)
	case v.Secret.Optional != nil && *v.Secret.Optional:
		t.Errorf("Secret volume %q is optional although --store-secret-key-file is set", m.Name)
	default:
		if ks, ok := findSecret(v.Secret.SecretName); !ok {
			t.Errorf("volume %q names Secret %q, which is not rendered", m.Name, v.Secret.SecretName)
		} else if got := decoded(ks, path.Base(keyFile)); got != testStoreKey {
			t.Errorf("Secret %s key %q does not hold the operator's store.key", ks.Metadata.Name, path.Base(keyFile))
		}
	}

	// No forwarding mesh: the replicas answer from the store.
	if peers := c.flags["peers"]; len(peers) > 0 {
		t.Errorf("--peers %v beside a postgres store: canaryd refuses it", peers)
	}
	if name := c.flag("replica-name"); name != "" && name != podName {
		t.Errorf("--replica-name is %q: the replica holding a lease is named by its pod (or the host name, which is the pod's)", name)
	}
	for _, s := range services {
		if s.Spec.ClusterIP == "None" {
			t.Errorf("headless Service %s: with a store the replicas do not find each other", s.Metadata.Name)
		}
		if s.Spec.SessionAffinity == "ClientIP" {
			t.Errorf("Service %s has ClientIP affinity: every replica answers every request", s.Metadata.Name)
		}
	}

	checkMigrate(t, c, pod)

	// Egress: DNS, PostgreSQL and Prometheus, nothing else.
	u, err := url.Parse(testStoreURL)
	if err != nil {
		t.Fatal(err)
	}
	pgNamespace := strings.Split(u.Hostname(), ".")[1]
	if !np.allowsEgress("TCP", u.Port(), pgNamespace) {
		t.Errorf("NetworkPolicy allows no egress to PostgreSQL (namespace %q, port %s)", pgNamespace, u.Port())
	}
	allowed := map[string]bool{"UDP/53": true, "TCP/53": true, "TCP/" + u.Port(): true}
	for _, raw := range c.flags["prometheus-url"] {
		p, err := url.Parse(raw)
		if err == nil && p.Port() != "" {
			allowed["TCP/"+p.Port()] = true
		}
	}
	for i, r := range np.Spec.Egress {
		if len(r.To) == 0 {
			t.Errorf("egress rule %d allows any destination: want DNS, PostgreSQL and Prometheus only", i)
		}
		if len(r.Ports) == 0 {
			t.Errorf("egress rule %d allows every port: want DNS, PostgreSQL and Prometheus only", i)
		}
		for _, p := range r.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = "TCP"
			}
			if !allowed[proto+"/"+string(p.Port)] {
				t.Errorf("egress rule %d allows %s %s, which is not DNS, PostgreSQL's port nor Prometheus'", i, proto, p.Port)
			}
		}
	}
	if np.allowsEgressToPods("TCP", "8080", dep.Spec.Template.Metadata.Labels) {
		t.Errorf("NetworkPolicy allows egress to the other replicas: with a store nothing is forwarded")
	}
}

// checkMigrate checks the initContainer that migrates the schema: `canaryd
// migrate`, the serving container's image, the store's URL from the same
// Secret, the restricted security context, flags migrate has; and runs
// the binary with them, the URL pointed at a closed loopback port, which
// must fail on the store (exit 3), not on its input (64).
func checkMigrate(t *testing.T, c serveConfig, pod podSpec) {
	t.Helper()
	i := slices.IndexFunc(pod.InitContainers, func(ic container) bool { return len(ic.Args) > 0 && ic.Args[0] == "migrate" })
	if i < 0 {
		t.Fatalf("no initContainer runs canaryd migrate (args %v)", pod.InitContainers)
	}
	mc := pod.InitContainers[i]
	if mc.Image != c.container.Image {
		t.Errorf("migrate's image %q, want the serving container's %q: the schema must be the version that image needs", mc.Image, c.container.Image)
	}
	if len(mc.Command) != 0 {
		t.Errorf("migrate's command %v overrides the image's ENTRYPOINT; give arguments only", mc.Command)
	}
	flags := parseFlags(t, mc.Args[1:])
	known := canarydFlags(t, "migrate")
	for name := range flags {
		if !known[name] {
			t.Errorf("migrate's flag --%s: canaryd migrate has no such flag (it has %v)", name, slices.Sorted(maps.Keys(known)))
		}
	}
	if v := flags["timeout"]; len(v) > 0 {
		if d, err := time.ParseDuration(v[len(v)-1]); err != nil || d <= 0 {
			t.Errorf("migrate --timeout=%s: want a positive duration", v[len(v)-1])
		}
	}
	if _, ok := flags["store"]; ok {
		t.Errorf("migrate is given --store on its command line: the URL holds a password; give it CANARYD_STORE from the Secret")
	}
	var storeEnv string
	for _, e := range mc.Env {
		if e.Name == "CANARYD_STORE" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			storeEnv = secretRef(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
		}
	}
	if storeEnv != c.flag("store") {
		t.Errorf("migrate's CANARYD_STORE is %q, want the serving container's %q", storeEnv, c.flag("store"))
	}
	switch sc := mc.SecurityContext; {
	case sc == nil:
		t.Errorf("migrate has no securityContext: the restricted Pod Security Standard refuses the pod")
	default:
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("migrate: allowPrivilegeEscalation is not false")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("migrate: readOnlyRootFilesystem is not true")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("migrate: capabilities %+v, want drop [ALL] and no add", sc.Capabilities)
		}
	}
	if mc.Resources.Limits["memory"] == "" || mc.Resources.Requests["memory"] == "" {
		t.Errorf("migrate: resources %+v, want memory requests and limits", mc.Resources)
	}

	// The URL as the Secret holds it, its host a closed loopback port.
	u, err := url.Parse(testStoreURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = closedPort(t)
	cmd := exec.Command(canarydBinary(t), append(slices.Clone(mc.Args), "--timeout=5s")...)
	cmd.Env = []string{"CANARYD_STORE=" + u.String(), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("canaryd %s with the Secret's URL: %v, want exit 3 (the store failed), not a refused input:\n%s", strings.Join(mc.Args, " "), err, out)
	}
	if bytes.Contains(out, []byte("s3cr")) {
		t.Errorf("canaryd migrate printed the URL's password:\n%s", out)
	}
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// checkFlags checks that canaryd serve has every flag the Deployment
// gives it, as an argument or as a CANARYD_* variable: one it does not
// know stops the pod from starting.
func checkFlags(t *testing.T, c serveConfig) {
	t.Helper()
	known := canarydFlags(t, "serve")
	for name := range c.flags {
		if !known[name] {
			t.Errorf("--%s (or CANARYD_%s): canaryd serve has no such flag", name, strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
		}
	}
}

// flagLine is a flag's line in the usage Go's flag package prints.
var flagLine = regexp.MustCompile(`(?m)^\s+-{1,2}([a-z0-9][a-z0-9-]*)\b`)

var helpCache sync.Map // command → map[string]bool

// canarydFlags returns the flags of a canaryd command, as `canaryd
// COMMAND -h` lists them.
func canarydFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	if v, ok := helpCache.Load(command); ok {
		return v.(map[string]bool)
	}
	out, err := exec.Command(canarydBinary(t), command, "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("canaryd %s -h: %v\n%s", command, err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 2 {
		t.Fatalf("canaryd %s -h lists %d flags:\n%s", command, len(flags), out)
	}
	helpCache.Store(command, flags)
	return flags
}

// binaryEnv names a canaryd binary to check against instead of one built
// from the repository (as test/'s harness takes it).
const binaryEnv = "CANARYD_TEST_BINARY"

var build struct {
	once sync.Once
	path string
	err  error
}

// canarydBinary builds ../cmd/canaryd once, or returns $CANARYD_TEST_BINARY.
func canarydBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binaryEnv); bin != "" {
		if !filepath.IsAbs(bin) {
			t.Fatalf("%s=%s: give an absolute path", binaryEnv, bin)
		}
		return bin
	}
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "canaryd-deploy-test-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(dir, "canaryd")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/canaryd")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = errors.New("go build ./cmd/canaryd: " + err.Error() + "\n" + string(out))
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// TestPostgresOverlayShipsNoSecret: the postgres overlay carries neither
// a token, nor a store URL, nor a key. Each Secret comes from a file the
// operator creates, which Git ignores; without any of them the overlay
// does not build, and the overlay and the docs say how to make them.
func TestPostgresOverlayShipsNoSecret(t *testing.T) {
	const overlay = "kustomize/overlays/postgres"
	files := map[string]string{"tokens": testTokens, "store.env": testStoreEnv, "store.key": testStoreKey}
	for missing := range files {
		root := copyKustomize(t)
		for name, content := range files {
			if name == missing {
				continue
			}
			if err := os.WriteFile(filepath.Join(root, overlay, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, overlay))
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s the overlay builds (error %v); it must not ship one", missing, err)
		}
	}

	ignore, err := os.ReadFile(filepath.Join(overlay, ".gitignore"))
	if err != nil {
		t.Fatalf("the overlay has no .gitignore for its secret files: %v", err)
	}
	kustomization, err := os.ReadFile(filepath.Join(overlay, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if !slices.Contains(strings.Fields(string(ignore)), "/"+name) {
			t.Errorf("%s/.gitignore does not list /%s:\n%s", overlay, name, ignore)
		}
		if want := "> deploy/kustomize/overlays/postgres/" + name; !strings.Contains(string(kustomization), want) {
			t.Errorf("%s/kustomization.yaml does not say how to make %s (%q)", overlay, name, want)
		}
		if !strings.Contains(string(docs), "> "+name) {
			t.Errorf("docs/kubernetes.md does not say how to make %s (%q)", name, "> "+name)
		}
	}
	// The kustomization's example URL is the one the NetworkPolicy admits.
	if !strings.Contains(string(kustomization), "@postgres.db.svc.cluster.local:5432/") {
		t.Errorf("%s/kustomization.yaml's example URL is not the PostgreSQL the NetworkPolicy admits (postgres.db.svc.cluster.local:5432)", overlay)
	}
}
