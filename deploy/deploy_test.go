package deploy

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// repoRoot is the main module, whose Dockerfile and .dockerignore are checked.
const repoRoot = ".."

// seedTemplate is the repository's success-rate template (the seed's, its
// namespace an argument), which the base's templates ConfigMap must carry
// unchanged.
const seedTemplate = repoRoot + "/testdata/templates/success-rate.yaml"

// TestKustomize renders the base and the example overlay with the Kustomize
// API (what `kubectl kustomize` runs) and checks that the objects fit
// together: probes, grace periods, mounts, selectors, policies.
func TestKustomize(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		// what the rendering must hold
		kinds         []string
		namespace     string
		image         string
		prometheusURL string
		auth          bool
		replicas      int
		// store: the overlay runs on a postgres store, made from the
		// operator's files (postgres_test.go).
		store bool
		// pinnedAddressesAllowed: every template that names a Prometheus
		// address names one canaryd is given. The example overlay points at
		// another Prometheus, so the seed's pinned address is refused there
		// (documented in the overlay).
		pinnedAddressesAllowed bool
	}{
		{
			name:                   "base",
			dir:                    "kustomize/base",
			kinds:                  []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount", "ServiceMonitor"},
			image:                  "ghcr.io/canaryd/canaryd:latest",
			replicas:               1,
			prometheusURL:          "http://kube-prometheus-stack-prometheus.observability.svc.cluster.local:9090",
			pinnedAddressesAllowed: true,
		},
		{
			name:          "overlay example",
			dir:           "kustomize/overlays/example",
			kinds:         []string{"ConfigMap", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount", "ServiceMonitor"},
			namespace:     "canary",
			image:         "ghcr.io/canaryd/canaryd:v0.1.0",
			prometheusURL: "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090",
			auth:          true,
			replicas:      1,
		},
		{
			name:          "overlay postgres",
			dir:           "kustomize/overlays/postgres",
			kinds:         []string{"ConfigMap", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Secret", "Secret", "Service", "ServiceAccount", "ServiceMonitor"},
			namespace:     "canary",
			image:         "ghcr.io/canaryd/canaryd:v0.1.0",
			prometheusURL: "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090",
			auth:          true,
			replicas:      3,
			store:         true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir
			switch {
			case tc.store:
				// The tokens and the store's files are the operator's.
				dir = withStoreFiles(t, tc.dir)
			case tc.auth:
				// The overlay's tokens are the operator's to create.
				dir = withTokens(t, tc.dir, testTokens)
			}
			objs := render(t, dir)

			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.Kind)
				if o.Kind != "Namespace" && o.Metadata.Namespace != tc.namespace {
					t.Errorf("%s/%s: namespace %q, want %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace, tc.namespace)
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tc.kinds) {
				t.Fatalf("kinds rendered: %v, want %v", kinds, tc.kinds)
			}

			var (
				dep  deployment
				svc  service
				cm   configMap
				pdb  podDisruptionBudget
				np   networkPolicy
				sm   serviceMonitor
				sa   object
				sec  secret
				nsOb namespaceObject
				// every Service rendered
				services []service
				// every Secret rendered
				secrets []secret
			)
			for _, o := range objs {
				switch o.Kind {
				case "Deployment":
					decode(t, o, &dep)
				case "Service":
					// canaryd, for clients; checkReplicas checks that
					// there is no other.
					var s service
					decode(t, o, &s)
					services = append(services, s)
					if s.Metadata.Name == "canaryd" {
						svc = s
					}
				case "ConfigMap":
					decode(t, o, &cm)
				case "PodDisruptionBudget":
					decode(t, o, &pdb)
				case "NetworkPolicy":
					decode(t, o, &np)
				case "ServiceMonitor":
					decode(t, o, &sm)
				case "ServiceAccount":
					decode(t, o, &sa)
				case "Secret":
					var s secret
					decode(t, o, &s)
					secrets = append(secrets, s)
					if strings.HasPrefix(s.Metadata.Name, "canaryd-auth") {
						sec = s
					}
				case "Namespace":
					decode(t, o, &nsOb)
				}
			}

			wantAPIVersion := map[string]string{
				"Deployment": "apps/v1", "PodDisruptionBudget": "policy/v1",
				"NetworkPolicy": "networking.k8s.io/v1", "ServiceMonitor": "monitoring.coreos.com/v1",
				"Service": "v1", "ConfigMap": "v1", "ServiceAccount": "v1", "Secret": "v1", "Namespace": "v1",
			}
			for _, o := range objs {
				if want := wantAPIVersion[o.Kind]; o.APIVersion != want {
					t.Errorf("%s: apiVersion %q, want %q", o.Kind, o.APIVersion, want)
				}
			}

			if tc.namespace != "" {
				checkNamespace(t, nsOb, tc.namespace)
			}
			c := checkDeployment(t, dep, sa, tc.image, tc.replicas)
			checkFlags(t, c)
			checkPrometheus(t, c, np, tc.prometheusURL, tc.namespace)
			checkTemplates(t, c, dep, cm, tc.pinnedAddressesAllowed)
			checkAuth(t, c, dep, sec, tc.auth, testTokens)
			checkService(t, svc, dep, c)
			checkServiceMonitor(t, sm, svc)
			if tc.store {
				checkStore(t, c, dep, secrets, services, np)
			} else {
				checkReplicas(t, c, dep, svc, services, np)
			}
			checkPDB(t, pdb, dep)
			checkNetworkPolicy(t, np, dep, c)
		})
	}
}

// serveConfig is what canaryd serve is told: its flags, with the
// environment variables (CANARYD_<FLAG>) for flags not given as arguments.
type serveConfig struct {
	container container
	flags     map[string][]string
}

func (c serveConfig) flag(name string) string {
	if v := c.flags[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func checkDeployment(t *testing.T, dep deployment, sa object, image string, replicas int) serveConfig {
	t.Helper()
	pod := dep.Spec.Template.Spec
	if dep.Spec.Replicas != replicas {
		t.Errorf("Deployment replicas = %d, want %d", dep.Spec.Replicas, replicas)
	}
	if !subset(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) || len(dep.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("Deployment selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if ctr.Image != image {
		t.Errorf("image %q, want %q", ctr.Image, image)
	}

	// The command line: canaryd serve [flags]; flags not given fall back to
	// CANARYD_<FLAG>, as canaryd does.
	if len(ctr.Command) != 0 {
		t.Errorf("command %v overrides the image's ENTRYPOINT; give arguments only", ctr.Command)
	}
	if len(ctr.Args) == 0 || ctr.Args[0] != "serve" {
		t.Fatalf("args %v, want serve [flags]", ctr.Args)
	}
	c := serveConfig{container: ctr, flags: parseFlags(t, ctr.Args[1:])}
	// One entry a variable: Kubernetes keeps the last of two, and a
	// reader of the manifest may change the first.
	seen := map[string]bool{}
	for _, e := range ctr.Env {
		if seen[e.Name] {
			t.Errorf("the variable %s is set twice", e.Name)
		}
		seen[e.Name] = true
	}
	for _, e := range ctr.Env {
		name, ok := strings.CutPrefix(e.Name, "CANARYD_")
		if !ok {
			continue
		}
		flag := strings.ReplaceAll(strings.ToLower(name), "_", "-")
		value := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.Name == "CANARYD_REPLICA_NAME" && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			// The pod's name, from the downward API: checkReplicas.
			value = podName
		case e.Name == "CANARYD_STORE" && e.ValueFrom.SecretKeyRef != nil:
			// The store's URL holds a password: from a Secret
			// (checkStore).
			value = secretRef(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
		default:
			t.Errorf("env %s comes from valueFrom; the test (and readers) expect a value (only CANARYD_REPLICA_NAME may be the pod's name, and CANARYD_STORE a Secret's key)", e.Name)
		}
		if _, given := c.flags[flag]; !given {
			c.flags[flag] = []string{value}
		}
	}
	for _, f := range []string{"listen", "templates", "shutdown-grace", "prometheus-url"} {
		if c.flag(f) == "" {
			t.Errorf("--%s is not set (args %v, env %v)", f, ctr.Args, ctr.Env)
		}
	}

	// The port: the one canaryd listens on, named http.
	_, listenPort, err := net.SplitHostPort(c.flag("listen"))
	if err != nil {
		t.Errorf("--listen=%q: %v", c.flag("listen"), err)
	}
	if p, ok := ctr.port("http"); !ok || strconv.Itoa(p.ContainerPort) != listenPort {
		t.Errorf("container port named http = %+v, want containerPort %s (from --listen)", p, listenPort)
	}

	// Probes.
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
		must  bool
	}{
		{"livenessProbe", ctr.LivenessProbe, "/healthz", true},
		{"readinessProbe", ctr.ReadinessProbe, "/readyz", true},
		{"startupProbe", ctr.StartupProbe, "/healthz", false},
	} {
		switch {
		case p.probe == nil && p.must:
			t.Errorf("%s missing", p.name)
		case p.probe == nil:
		case p.probe.HTTPGet == nil:
			t.Errorf("%s is not an httpGet probe", p.name)
		case p.probe.HTTPGet.Path != p.path:
			t.Errorf("%s path %q, want %q", p.name, p.probe.HTTPGet.Path, p.path)
		case p.probe.HTTPGet.Port != "http" && string(p.probe.HTTPGet.Port) != listenPort:
			t.Errorf("%s port %q, want http", p.name, p.probe.HTTPGet.Port)
		}
	}

	// Termination: the kubelet's SIGKILL must come after the preStop hook,
	// canaryd's --shutdown-grace for running analyses, and a few seconds for
	// the HTTP server to send their results.
	grace, err := time.ParseDuration(c.flag("shutdown-grace"))
	if err != nil {
		t.Errorf("--shutdown-grace=%q: %v", c.flag("shutdown-grace"), err)
	}
	var preStop time.Duration
	if ctr.Lifecycle != nil && ctr.Lifecycle.PreStop != nil {
		if s := ctr.Lifecycle.PreStop.Sleep; s != nil {
			preStop = time.Duration(s.Seconds) * time.Second
		} else {
			t.Errorf("preStop is not a sleep action (the distroless image has no shell)")
		}
	}
	const httpShutdown = 5 * time.Second
	// With a store, the hand-over may add an analysis that does not stop
	// or a store that does not answer, and the release of the leases
	// (storeHandOver).
	var handOver time.Duration
	if _, ok := c.flags["store"]; ok {
		handOver = storeHandOver
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Errorf("terminationGracePeriodSeconds unset (default 30s)")
	} else if tgp := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; tgp < preStop+grace+handOver+httpShutdown {
		t.Errorf("terminationGracePeriodSeconds %v < preStop %v + --shutdown-grace %v + %v for the store's hand-over + %v for the HTTP shutdown", tgp, preStop, grace, handOver, httpShutdown)
	}

	// Security: the restricted Pod Security Standard, read-only root, no
	// service-account token, no service links.
	psc, csc := pod.SecurityContext, ctr.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		if csc == nil || csc.RunAsNonRoot == nil || !*csc.RunAsNonRoot {
			t.Errorf("runAsNonRoot is not true")
		}
	}
	for _, sc := range []*securityContext{psc, csc} {
		if sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("runAsUser 0")
		}
	}
	if (psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != "RuntimeDefault") &&
		(csc == nil || csc.SeccompProfile == nil || csc.SeccompProfile.Type != "RuntimeDefault") {
		t.Errorf("seccompProfile is not RuntimeDefault")
	}
	switch {
	case csc == nil:
		t.Errorf("container has no securityContext")
	default:
		if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
			t.Errorf("readOnlyRootFilesystem is not true")
		}
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			t.Errorf("allowPrivilegeEscalation is not false")
		}
		if csc.Privileged != nil && *csc.Privileged {
			t.Errorf("privileged")
		}
		if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") || len(csc.Capabilities.Add) > 0 {
			t.Errorf("capabilities %+v, want drop [ALL] and no add", csc.Capabilities)
		}
	}
	if _, ok := ctr.mount("/tmp"); !ok {
		t.Errorf("no volume at /tmp: with a read-only root, os.TempDir() is not writable")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken is not false: canaryd does not call the Kubernetes API")
	}
	if pod.ServiceAccountName != sa.Metadata.Name {
		t.Errorf("serviceAccountName %q, want the rendered ServiceAccount %q", pod.ServiceAccountName, sa.Metadata.Name)
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Errorf("enableServiceLinks is not false: the Service canaryd would inject CANARYD_* variables into canaryd's configuration namespace")
	}

	// Resources, and GOMEMLIMIT under the memory limit.
	for _, r := range []string{"cpu", "memory"} {
		if ctr.Resources.Requests[r] == "" {
			t.Errorf("resources.requests.%s unset", r)
		}
	}
	limit, err := quantityBytes(ctr.Resources.Limits["memory"])
	if err != nil {
		t.Errorf("resources.limits.memory: %v", err)
	}
	if v, ok := ctr.env("GOMEMLIMIT"); ok {
		soft, err := quantityBytes(strings.TrimSuffix(v, "B"))
		if err != nil {
			t.Errorf("GOMEMLIMIT=%q: %v", v, err)
		} else if soft >= limit {
			t.Errorf("GOMEMLIMIT %q is not below limits.memory %q", v, ctr.Resources.Limits["memory"])
		}
	}
	return c
}

// checkPrometheus checks the default Prometheus and that the NetworkPolicy
// lets canaryd reach it: egress to its namespace (read from the Service DNS
// name) on its port.
func checkPrometheus(t *testing.T, c serveConfig, np networkPolicy, want, namespace string) {
	t.Helper()
	got := c.flags["prometheus-url"]
	if len(got) == 0 || got[0] != want {
		t.Errorf("Prometheus URL %v, want %s", got, want)
	}
	for _, raw := range got {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			t.Errorf("Prometheus URL %q does not parse: %v", raw, err)
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		labels := strings.Split(u.Hostname(), ".")
		promNS := namespace
		if len(labels) > 1 {
			promNS = labels[1] // service.namespace[.svc[.cluster.local]]
		}
		if !np.allowsEgress("TCP", port, promNS) {
			t.Errorf("NetworkPolicy allows no egress to Prometheus %s (namespace %q, port %s)", raw, promNS, port)
		}
	}
}

// checkTemplates checks the templates ConfigMap: mounted where --templates
// points, the seed unchanged, and every file an Argo AnalysisTemplate.
func checkTemplates(t *testing.T, c serveConfig, dep deployment, cm configMap, pinnedAddressesAllowed bool) {
	t.Helper()
	m, ok := c.container.mount(c.flag("templates"))
	if !ok {
		t.Fatalf("nothing is mounted at --templates=%s", c.flag("templates"))
	}
	if m.SubPath != "" {
		t.Errorf("templates mounted with subPath: ConfigMap updates would never reach the pod")
	}
	v, ok := dep.Spec.Template.Spec.volume(m.Name)
	if !ok || v.ConfigMap == nil || v.ConfigMap.Name != cm.Metadata.Name {
		t.Errorf("volume %q at %s is %+v, want the ConfigMap %q", m.Name, m.MountPath, v, cm.Metadata.Name)
	}
	seed, err := os.ReadFile(seedTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["success-rate.yaml"]; got != string(seed) {
		t.Errorf("templates ConfigMap's success-rate.yaml is not %s, unchanged:\n%s", seedTemplate, got)
	}
	names := map[string]string{}
	var withArgs bool
	for file, doc := range cm.Data {
		if ext := path.Ext(file); ext != ".yaml" && ext != ".yml" {
			t.Errorf("templates ConfigMap key %q: want .yaml or .yml", file)
		}
		var tmpl analysisTemplate
		if err := yaml.Unmarshal([]byte(doc), &tmpl); err != nil {
			t.Errorf("template %s: %v", file, err)
			continue
		}
		if tmpl.APIVersion != "argoproj.io/v1alpha1" || (tmpl.Kind != "AnalysisTemplate" && tmpl.Kind != "ClusterAnalysisTemplate") {
			t.Errorf("template %s is %s %s, want an argoproj.io/v1alpha1 AnalysisTemplate", file, tmpl.APIVersion, tmpl.Kind)
		}
		if other, dup := names[tmpl.Metadata.Name]; dup || tmpl.Metadata.Name == "" {
			t.Errorf("template %s: name %q empty or also in %s", file, tmpl.Metadata.Name, other)
		}
		names[tmpl.Metadata.Name] = file
		if len(tmpl.Spec.Metrics) == 0 {
			t.Errorf("template %s has no metrics", file)
		}
		usesDefault := false
		for _, metric := range tmpl.Spec.Metrics {
			p := metric.Provider.Prometheus
			if p == nil || p.Query == "" {
				t.Errorf("template %s metric %q has no Prometheus query", file, metric.Name)
				continue
			}
			if p.Address == "" {
				usesDefault = true
			} else if pinnedAddressesAllowed && !slices.Contains(c.flags["prometheus-url"], p.Address) {
				t.Errorf("template %s metric %q queries %s, which is not a --prometheus-url %v: canaryd refuses it", file, metric.Name, p.Address, c.flags["prometheus-url"])
			}
			for _, ref := range regexp.MustCompile(`\{\{\s*args\.([A-Za-z0-9_-]+)\s*\}\}`).FindAllStringSubmatch(p.Query, -1) {
				if !slices.ContainsFunc(tmpl.Spec.Args, func(a arg) bool { return a.Name == ref[1] }) {
					t.Errorf("template %s metric %q uses {{args.%s}}, which is not among its args", file, metric.Name, ref[1])
				}
			}
		}
		if usesDefault && slices.ContainsFunc(tmpl.Spec.Args, func(a arg) bool { return a.Name == "namespace" }) {
			withArgs = true
		}
	}
	if !withArgs {
		t.Errorf("no template takes a namespace argument and queries the default Prometheus")
	}
}

// checkAuth: with auth, --auth-token-file names a key of the rendered
// Secret, mounted and required, that holds the tokens the operator's file
// holds; without, the flag is absent (the Secret is optional, and a
// missing token file must not be what a pod starts with).
func checkAuth(t *testing.T, c serveConfig, dep deployment, sec secret, auth bool, tokens string) {
	t.Helper()
	file := c.flag("auth-token-file")
	if !auth {
		if file != "" {
			t.Errorf("--auth-token-file=%s set, but no Secret is rendered", file)
		}
		return
	}
	if file == "" {
		t.Fatalf("--auth-token-file not set")
	}
	m, ok := c.container.mount(path.Dir(file))
	if !ok {
		t.Fatalf("nothing is mounted at %s for --auth-token-file=%s", path.Dir(file), file)
	}
	v, _ := dep.Spec.Template.Spec.volume(m.Name)
	switch {
	case v.Secret == nil:
		t.Errorf("volume %q for the token file is not a Secret", m.Name)
	case v.Secret.SecretName != sec.Metadata.Name:
		t.Errorf("volume %q names Secret %q, want the rendered %q", m.Name, v.Secret.SecretName, sec.Metadata.Name)
	case v.Secret.Optional != nil && *v.Secret.Optional:
		t.Errorf("Secret volume %q is optional although --auth-token-file is set", m.Name)
	}
	encoded, ok := sec.Data[path.Base(file)]
	if !ok {
		t.Fatalf("Secret %s has no key %q", sec.Metadata.Name, path.Base(file))
	}
	if got, err := base64.StdEncoding.DecodeString(encoded); err != nil || string(got) != tokens {
		t.Errorf("Secret %s key %q does not hold the tokens file (%v)", sec.Metadata.Name, path.Base(file), err)
	}
}

// testTokens is what the operator's tokens file holds in the tests: two
// tokens as `openssl rand -hex 32` makes them.
const testTokens = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0\n" +
	"# the second pipeline\n" +
	"d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3\n"

// withTokens copies deploy/kustomize into a temporary directory, with the
// file `tokens` that an operator creates beside the overlay's
// kustomization, and returns the overlay's directory in the copy. A tokens
// file of the working tree (an operator's own) is not copied.
func withTokens(t *testing.T, overlay, tokens string) string {
	t.Helper()
	root := copyKustomize(t)
	if err := os.WriteFile(filepath.Join(root, overlay, "tokens"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, overlay)
}

// copyKustomize copies the kustomize tree into a temporary directory, as
// the repository has it: without any tokens file, which is the operator's
// to create and never committed. It returns the copy's root, under which
// "kustomize/..." paths are the same as here.
func copyKustomize(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir("kustomize", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(root, p)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Name() == "tokens" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestOverlayShipsNoToken: the example overlay carries no bearer token,
// not even a placeholder that canaryd would accept. Its Secret comes from
// a file the operator creates, which Git ignores; without it the overlay
// does not build, rather than build with a guessable token.
func TestOverlayShipsNoToken(t *testing.T) {
	const overlay = "kustomize/overlays/example"
	root := copyKustomize(t)
	_, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, overlay))
	if err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("the overlay builds without the operator's tokens file (error %v); it must not ship a token", err)
	}

	ignore, err := os.ReadFile(filepath.Join(overlay, ".gitignore"))
	if err != nil {
		t.Fatalf("the overlay has no .gitignore for its tokens file: %v", err)
	}
	if !slices.Contains(strings.Fields(string(ignore)), "/tokens") {
		t.Errorf("%s/.gitignore does not list /tokens:\n%s", overlay, ignore)
	}

	// The documentation says how to make the file.
	kustomization, err := os.ReadFile(filepath.Join(overlay, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "openssl rand -hex 32 > deploy/kustomize/overlays/example/tokens"; !strings.Contains(string(kustomization), want) {
		t.Errorf("%s/kustomization.yaml does not say %q", overlay, want)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "openssl rand -hex 32 > deploy/kustomize/overlays/prod/tokens"; !strings.Contains(string(readme), want) {
		t.Errorf("docs/kubernetes.md does not say %q", want)
	}
}

func checkService(t *testing.T, svc service, dep deployment, c serveConfig) {
	t.Helper()
	if svc.Spec.Type != "" && svc.Spec.Type != "ClusterIP" {
		t.Errorf("Service type %q, want ClusterIP", svc.Spec.Type)
	}
	if len(svc.Spec.Selector) == 0 || !subset(svc.Spec.Selector, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, dep.Spec.Template.Metadata.Labels)
	}
	p, ok := c.container.port("http")
	if !ok {
		return
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Name == "http" {
			if sp.Port != 8080 {
				t.Errorf("Service port http = %d, want 8080", sp.Port)
			}
			if sp.TargetPort != "http" && string(sp.TargetPort) != strconv.Itoa(p.ContainerPort) {
				t.Errorf("Service port http targets %q, want the container's http port", sp.TargetPort)
			}
			return
		}
	}
	t.Errorf("Service has no port named http: %+v", svc.Spec.Ports)
}

func checkServiceMonitor(t *testing.T, sm serviceMonitor, svc service) {
	t.Helper()
	if len(sm.Spec.Selector.MatchLabels) == 0 || !subset(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service's labels %v", sm.Spec.Selector.MatchLabels, svc.Metadata.Labels)
	}
	if ns := sm.Spec.NamespaceSelector; ns != nil && !ns.Any && !slices.Contains(ns.MatchNames, svc.Metadata.Namespace) {
		t.Errorf("ServiceMonitor namespaceSelector %+v excludes the Service's namespace %q", ns, svc.Metadata.Namespace)
	}
	if !slices.ContainsFunc(sm.Spec.Endpoints, func(e endpoint) bool { return e.Port == "http" && e.Path == "/metrics" }) {
		t.Errorf("ServiceMonitor endpoints %+v, want port http, path /metrics", sm.Spec.Endpoints)
	}
}

func checkPDB(t *testing.T, pdb podDisruptionBudget, dep deployment) {
	t.Helper()
	// One replica disrupted at a time: the others take its work.
	if want := strconv.Itoa(dep.Spec.Replicas - 1); string(pdb.Spec.MinAvailable) != want {
		t.Errorf("PodDisruptionBudget minAvailable %q, want %s (one of the %d replicas disrupted at a time)", pdb.Spec.MinAvailable, want, dep.Spec.Replicas)
	}
	if len(pdb.Spec.Selector.MatchLabels) == 0 || !subset(pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the pods %v", pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
}

func checkNetworkPolicy(t *testing.T, np networkPolicy, dep deployment, c serveConfig) {
	t.Helper()
	if !subset(np.Spec.PodSelector.MatchLabels, dep.Spec.Template.Metadata.Labels) || len(np.Spec.PodSelector.MatchLabels) == 0 {
		t.Errorf("NetworkPolicy podSelector %v does not select the pods %v", np.Spec.PodSelector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
	if !slices.Contains(np.Spec.PolicyTypes, "Ingress") || !slices.Contains(np.Spec.PolicyTypes, "Egress") {
		t.Errorf("NetworkPolicy policyTypes %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	if !np.allowsIngress("TCP", "8080") && !np.allowsIngress("TCP", "http") {
		t.Errorf("NetworkPolicy allows no ingress to TCP 8080")
	}
	for _, proto := range []string{"UDP", "TCP"} {
		if !np.allowsEgress(proto, "53", "kube-system") {
			t.Errorf("NetworkPolicy allows no DNS (%s 53) to kube-system", proto)
		}
	}
}

func checkNamespace(t *testing.T, ns namespaceObject, want string) {
	t.Helper()
	if ns.Metadata.Name != want {
		t.Errorf("Namespace %q, want %q", ns.Metadata.Name, want)
	}
	if got := ns.Metadata.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace enforces Pod Security %q, want restricted", got)
	}
}

// TestDockerfile checks ../Dockerfile without a Docker engine: the stages,
// pinned base images, the Go version against go.mod, a static build with the
// version injected, and a non-root final stage.
func TestDockerfile(t *testing.T) {
	insts := readDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))

	// Stages.
	type stage struct {
		image, name string
		insts       []instruction
	}
	var stages []stage
	for _, in := range insts {
		if in.cmd == "FROM" {
			var args []string
			for _, f := range strings.Fields(in.args) {
				if !strings.HasPrefix(f, "--") {
					args = append(args, f)
				}
			}
			s := stage{image: args[0]}
			if len(args) == 3 && strings.EqualFold(args[1], "AS") {
				s.name = args[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].insts = append(stages[len(stages)-1].insts, in)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a builder and a final stage", len(stages))
	}
	builder, final := stages[0], stages[len(stages)-1]

	// Base images: pinned, not :latest, and the builder's Go is go.mod's.
	earlier := map[string]bool{} // FROM an earlier stage needs no pin
	for _, s := range stages {
		if !earlier[s.image] && s.image != "scratch" {
			if _, tag, digest := splitImage(s.image); digest == "" && (tag == "" || tag == "latest") {
				t.Errorf("FROM %s: pin a tag or a digest", s.image)
			}
		}
		if s.name != "" {
			earlier[s.name] = true
		}
	}
	goVersion := mainGoVersion(t)
	if repo, tag, _ := splitImage(builder.image); repo != "golang" && repo != "docker.io/library/golang" {
		t.Errorf("builder FROM %s, want golang:%s", builder.image, goVersion)
	} else if tag != goVersion && !strings.HasPrefix(tag, goVersion+"-") {
		t.Errorf("builder FROM %s, want golang:%s (go.mod's Go version)", builder.image, goVersion)
	}
	if builder.name == "" {
		t.Errorf("builder stage has no name (FROM ... AS build)")
	}

	// The builder: dependencies downloaded before the sources are copied, so
	// the module layer survives source edits; a static, trimmed build with
	// the version injected.
	idx := func(s stage, pred func(instruction) bool) int {
		return slices.IndexFunc(s.insts, pred)
	}
	copyMod := idx(builder, func(in instruction) bool {
		return in.cmd == "COPY" && strings.Contains(in.args, "go.mod") && strings.Contains(in.args, "go.sum") && !strings.Contains(in.args, ". .")
	})
	download := idx(builder, func(in instruction) bool { return in.cmd == "RUN" && strings.Contains(in.args, "go mod download") })
	copySrc := idx(builder, func(in instruction) bool {
		return in.cmd == "COPY" && regexp.MustCompile(`(^|\s)\.\s+\.(/)?$`).MatchString(in.args)
	})
	if copyMod < 0 || download < 0 || copySrc < 0 || !(copyMod < download && download < copySrc) {
		t.Errorf("builder: want COPY go.mod go.sum, then RUN go mod download, then COPY . . (got indexes %d, %d, %d)", copyMod, download, copySrc)
	}
	args := map[string]bool{}
	for _, in := range builder.insts {
		if in.cmd == "ARG" {
			name, _, _ := strings.Cut(in.args, "=")
			args[name] = true
		}
	}
	for _, a := range []string{"VERSION", "COMMIT"} {
		if !args[a] {
			t.Errorf("builder: no ARG %s", a)
		}
	}
	build := idx(builder, func(in instruction) bool { return in.cmd == "RUN" && strings.Contains(in.args, "go build") })
	if build < 0 {
		t.Fatalf("builder: no RUN go build")
	}
	run := builder.insts[build].args
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\bCGO_ENABLED=0\b`),
		regexp.MustCompile(`\s-trimpath\b`),
		regexp.MustCompile(`-ldflags\s+"[^"]*-s -w`),
		regexp.MustCompile(`-X main\.version=\$\{?VERSION\}?`),
		regexp.MustCompile(`-X main\.commit=\$\{?COMMIT\}?`),
		regexp.MustCompile(`\./cmd/canaryd\b`),
	} {
		if !want.MatchString(run) {
			t.Errorf("builder's go build %q does not match %s", run, want)
		}
	}
	checkLinkerVars(t, "version", "commit")

	// The final stage.
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		t.Errorf("final FROM %s, want gcr.io/distroless/static-* or scratch", final.image)
	}
	var user, expose, entrypoint, cmd string
	var binary, certs bool
	for _, in := range final.insts {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			expose = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			cmd = in.args
		case "COPY":
			if strings.Contains(in.args, "--from="+builder.name) && strings.HasSuffix(in.args, " /canaryd") {
				binary = true
			}
			if strings.Contains(in.args, "ca-certificates") {
				certs = true
			}
		}
	}
	if final.image == "scratch" && !certs {
		t.Errorf("final stage is scratch without CA certificates: HTTPS to Prometheus and webhooks fails")
	}
	if !binary {
		t.Errorf("final stage does not COPY --from=%s ... /canaryd", builder.name)
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q, want a numeric non-root uid (Kubernetes' runAsNonRoot cannot check a name)", user)
	}
	if expose != "8080" && expose != "8080/tcp" {
		t.Errorf("EXPOSE %q, want 8080", expose)
	}
	if entrypoint != `["/canaryd"]` {
		t.Errorf(`ENTRYPOINT %s, want ["/canaryd"] (exec form: the binary is PID 1 and gets SIGTERM)`, entrypoint)
	}
	if cmd != `["serve"]` {
		t.Errorf(`CMD %s, want ["serve"]`, cmd)
	}

	// The CI job image (--target ci): a stage before the final one, so
	// that a plain build is still the service's image, on a base with a
	// shell for a runner's script, the binary on PATH and CA certificates.
	ci := slices.IndexFunc(stages, func(s stage) bool { return s.name == "ci" })
	if ci < 0 || ci == len(stages)-1 {
		t.Fatalf("no stage ci before the final one (FROM debian:bookworm-slim AS ci): the CI job image")
	}
	if repo, _, _ := splitImage(stages[ci].image); repo != "debian" && repo != "busybox" {
		t.Errorf("ci FROM %s, want debian:*-slim or busybox: a base with a shell", stages[ci].image)
	}
	var ciBinary, ciCerts bool
	for _, in := range stages[ci].insts {
		switch in.cmd {
		case "COPY":
			ciBinary = ciBinary || strings.Contains(in.args, "--from="+builder.name) && strings.HasSuffix(in.args, " /usr/local/bin/canaryd")
			ciCerts = ciCerts || strings.Contains(in.args, "--from="+builder.name) && strings.HasSuffix(in.args, " /etc/ssl/certs/ca-certificates.crt")
		case "ENTRYPOINT", "CMD":
			t.Errorf("ci: %s %s: a runner starts the image's shell and runs its script; leave the base's", in.cmd, in.args)
		case "RUN":
			t.Errorf("ci: RUN %s: a RUN in the target platform's image needs emulation to build for another one", in.args)
		}
	}
	if !ciBinary || !ciCerts {
		t.Errorf("ci: want COPY --from=%s of the binary to /usr/local/bin/canaryd (%v) and of the CA certificates to /etc/ssl/certs/ca-certificates.crt (%v)", builder.name, ciBinary, ciCerts)
	}
}

// TestDockerignore checks that ../.dockerignore keeps out what the build
// does not need (VCS, build output, deploy/) but nothing `go build
// ./cmd/canaryd` does: go.mod, go.sum, every non-test Go file of the main
// module and whatever those //go:embed.
func TestDockerignore(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	excluded := func(p string) bool {
		ex, err := pm.MatchesOrParentMatches(filepath.ToSlash(p))
		if err != nil {
			t.Fatalf(".dockerignore: %v", err)
		}
		return ex
	}

	for _, p := range []string{".git", "bin", "deploy/deploy_test.go", "deploy/kustomize/base/kustomization.yaml"} {
		if !excluded(p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}

	needed := []string{"go.mod", "go.sum"}
	if _, err := os.Stat(filepath.Join(repoRoot, "vendor")); err == nil {
		needed = append(needed, "vendor/modules.txt")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			// What the go command skips: hidden and _ directories,
			// testdata, and nested modules (like this one).
			name := d.Name()
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		needed = append(needed, rel)
		embeds, err := embedPatterns(p)
		if err != nil {
			return err
		}
		for _, pat := range embeds {
			matches, _ := filepath.Glob(filepath.Join(filepath.Dir(p), pat))
			if len(matches) == 0 {
				t.Errorf("%s: //go:embed %s matches nothing", rel, pat)
			}
			for _, m := range matches {
				_ = filepath.WalkDir(m, func(q string, e fs.DirEntry, err error) error {
					if err == nil && !e.IsDir() {
						r, _ := filepath.Rel(root, q)
						needed = append(needed, r)
					}
					return err
				})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range needed {
		if excluded(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
	if len(needed) < 3 {
		t.Errorf("found only %v in %s: is repoRoot the main module?", needed, root)
	}
}

// mainGoVersion is the Go the main module builds with: go.mod's toolchain
// line if any, otherwise its go line.
func mainGoVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine, toolchain string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "go" {
			goLine = f[1]
		}
		if len(f) == 2 && f[0] == "toolchain" {
			toolchain = strings.TrimPrefix(f[1], "go")
		}
	}
	if toolchain != "" {
		return toolchain
	}
	if goLine == "" {
		t.Fatalf("../go.mod has no go line")
	}
	return goLine
}

// checkLinkerVars checks that package main of cmd/canaryd declares each name
// as a string variable: -X sets nothing, silently, when it does not.
func checkLinkerVars(t *testing.T, names ...string) {
	t.Helper()
	dir := filepath.Join(repoRoot, "cmd", "canaryd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					isString := false
					if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" {
						isString = true
					}
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							isString = true
						}
					}
					if isString {
						found[n.Name] = true
					}
				}
			}
		}
	}
	for _, n := range names {
		if !found[n] {
			t.Errorf("cmd/canaryd declares no package-level string variable %q for -X main.%s", n, n)
		}
	}
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

func readDockerfile(t *testing.T, name string) []instruction {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var (
		insts []instruction
		cur   strings.Builder
		start int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		insts = append(insts, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: ends in a continuation line", name)
	}
	return insts
}

// splitImage splits repo[:tag][@digest].
func splitImage(ref string) (repo, tag, digest string) {
	ref, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:], digest
	}
	return ref, "", digest
}

var embedDirective = regexp.MustCompile(`^//go:embed\s+(.+)$`)

// embedPatterns returns the patterns of a file's //go:embed directives.
func embedPatterns(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pats []string
	for line := range strings.Lines(string(data)) {
		m := embedDirective.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		for _, p := range strings.Fields(m[1]) {
			p = strings.Trim(p, "`\"")
			p = strings.TrimPrefix(p, "all:")
			pats = append(pats, p)
		}
	}
	return pats, nil
}

// parseFlags reads --name=value and --name value arguments.
func parseFlags(t *testing.T, args []string) map[string][]string {
	t.Helper()
	flags := map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			name, ok = strings.CutPrefix(a, "-")
		}
		if !ok || name == "" {
			t.Errorf("argument %q is not a flag", a)
			continue
		}
		if n, v, hasValue := strings.Cut(name, "="); hasValue {
			flags[n] = append(flags[n], v)
			continue
		}
		if i+1 >= len(args) {
			t.Errorf("flag %q has no value", a)
			continue
		}
		i++
		flags[name] = append(flags[name], args[i])
	}
	return flags
}

// quantityBytes reads the binary-suffixed Kubernetes quantities (and Go's
// GOMEMLIMIT without its B) used here: 256Mi, 1Gi, 268435456.
func quantityBytes(q string) (int64, error) {
	mult := int64(1)
	for _, s := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}} {
		if n, ok := strings.CutSuffix(q, s.suffix); ok {
			q, mult = n, s.mult
			break
		}
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("quantity %q: want a positive integer with an optional Ki, Mi or Gi", q)
	}
	return n * mult, nil
}

func subset(sub, super map[string]string) bool {
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return true
}

// rendered is one object of a kustomization's output.
type rendered struct {
	object
	yaml []byte
}

func render(t *testing.T, dir string) []rendered {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []rendered
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(y, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, rendered{object: o, yaml: y})
	}
	return out
}

func decode(t *testing.T, r rendered, into any) {
	t.Helper()
	if err := yaml.Unmarshal(r.yaml, into); err != nil {
		t.Fatalf("%s %s: %v", r.Kind, r.Metadata.Name, err)
	}
}

// The subset of the Kubernetes types the checks read.

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

type namespaceObject struct{ object }

type labelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type deployment struct {
	object
	Spec struct {
		Replicas int           `json:"replicas"`
		Selector labelSelector `json:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec podSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type podSpec struct {
	ServiceAccountName            string           `json:"serviceAccountName"`
	AutomountServiceAccountToken  *bool            `json:"automountServiceAccountToken"`
	EnableServiceLinks            *bool            `json:"enableServiceLinks"`
	TerminationGracePeriodSeconds *int64           `json:"terminationGracePeriodSeconds"`
	SecurityContext               *securityContext `json:"securityContext"`
	InitContainers                []container      `json:"initContainers"`
	Containers                    []container      `json:"containers"`
	Volumes                       []volume         `json:"volumes"`
}

func (p podSpec) volume(name string) (volume, bool) {
	i := slices.IndexFunc(p.Volumes, func(v volume) bool { return v.Name == name })
	if i < 0 {
		return volume{}, false
	}
	return p.Volumes[i], true
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	Privileged               *bool  `json:"privileged"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile"`
}

type container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `json:"fieldPath"`
			} `json:"fieldRef"`
			SecretKeyRef *struct {
				Name     string `json:"name"`
				Key      string `json:"key"`
				Optional *bool  `json:"optional"`
			} `json:"secretKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	Ports          []containerPort `json:"ports"`
	LivenessProbe  *probe          `json:"livenessProbe"`
	ReadinessProbe *probe          `json:"readinessProbe"`
	StartupProbe   *probe          `json:"startupProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int64 `json:"seconds"`
			} `json:"sleep"`
		} `json:"preStop"`
	} `json:"lifecycle"`
	Resources struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	SecurityContext *securityContext `json:"securityContext"`
	VolumeMounts    []volumeMount    `json:"volumeMounts"`
}

type containerPort struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
}

func (c container) port(name string) (containerPort, bool) {
	i := slices.IndexFunc(c.Ports, func(p containerPort) bool { return p.Name == name })
	if i < 0 {
		return containerPort{}, false
	}
	return c.Ports[i], true
}

func (c container) mount(mountPath string) (volumeMount, bool) {
	i := slices.IndexFunc(c.VolumeMounts, func(m volumeMount) bool { return path.Clean(m.MountPath) == path.Clean(mountPath) })
	if i < 0 {
		return volumeMount{}, false
	}
	return c.VolumeMounts[i], true
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath"`
}

type volume struct {
	Name      string `json:"name"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap"`
	Secret *struct {
		SecretName string `json:"secretName"`
		Optional   *bool  `json:"optional"`
		Items      []struct {
			Key  string `json:"key"`
			Path string `json:"path"`
		} `json:"items"`
	} `json:"secret"`
}

type probe struct {
	HTTPGet *struct {
		Path string   `json:"path"`
		Port intOrStr `json:"port"`
	} `json:"httpGet"`
}

// intOrStr is Kubernetes' IntOrString, kept as its string form.
type intOrStr string

func (s *intOrStr) UnmarshalJSON(b []byte) error {
	*s = intOrStr(strings.Trim(string(b), `"`))
	return nil
}

type service struct {
	object
	Spec struct {
		Type                     string            `json:"type"`
		ClusterIP                string            `json:"clusterIP"`
		PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses"`
		SessionAffinity          string            `json:"sessionAffinity"`
		Selector                 map[string]string `json:"selector"`
		Ports                    []struct {
			Name       string   `json:"name"`
			Port       int      `json:"port"`
			TargetPort intOrStr `json:"targetPort"`
		} `json:"ports"`
	} `json:"spec"`
}

type configMap struct {
	object
	Data map[string]string `json:"data"`
}

type secret struct {
	object
	Data map[string]string `json:"data"` // base64
}

type podDisruptionBudget struct {
	object
	Spec struct {
		MinAvailable intOrStr      `json:"minAvailable"`
		Selector     labelSelector `json:"selector"`
	} `json:"spec"`
}

type serviceMonitor struct {
	object
	Spec struct {
		Selector          labelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []endpoint `json:"endpoints"`
	} `json:"spec"`
}

type endpoint struct {
	Port string `json:"port"`
	Path string `json:"path"`
}

type networkPolicy struct {
	object
	Spec struct {
		PodSelector labelSelector `json:"podSelector"`
		PolicyTypes []string      `json:"policyTypes"`
		Ingress     []policyRule  `json:"ingress"`
		Egress      []policyRule  `json:"egress"`
	} `json:"spec"`
}

// policyRule is an ingress rule (From) or an egress rule (To).
type policyRule struct {
	From  []peer `json:"from"`
	To    []peer `json:"to"`
	Ports []struct {
		Protocol string   `json:"protocol"`
		Port     intOrStr `json:"port"`
	} `json:"ports"`
}

type peer struct {
	NamespaceSelector *labelSelector `json:"namespaceSelector"`
	PodSelector       *labelSelector `json:"podSelector"`
	IPBlock           *struct {
		CIDR string `json:"cidr"`
	} `json:"ipBlock"`
}

func (r policyRule) allowsPort(protocol, port string) bool {
	if len(r.Ports) == 0 {
		return true
	}
	for _, p := range r.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = "TCP"
		}
		if proto == protocol && (p.Port == "" || string(p.Port) == port) {
			return true
		}
	}
	return false
}

func (np networkPolicy) allowsIngress(protocol, port string) bool {
	for _, r := range np.Spec.Ingress {
		if r.allowsPort(protocol, port) {
			return true
		}
	}
	return false
}

// allowsEgress reports whether some egress rule lets the pods reach port in
// the namespace, by its kubernetes.io/metadata.name label (or to anywhere).
func (np networkPolicy) allowsEgress(protocol, port, namespace string) bool {
	return np.allowsEgressTo(protocol, port, func(p peer) bool {
		// Without a namespace selector: same namespace only, or an ipBlock.
		return p.NamespaceSelector != nil &&
			(len(p.NamespaceSelector.MatchLabels) == 0 || p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == namespace)
	})
}

// allowsEgressTo reports whether some egress rule lets the pods reach port
// on a peer that to accepts, or anywhere.
func (np networkPolicy) allowsEgressTo(protocol, port string, to func(peer) bool) bool {
	for _, r := range np.Spec.Egress {
		if !r.allowsPort(protocol, port) {
			continue
		}
		if len(r.To) == 0 || slices.ContainsFunc(r.To, to) {
			return true
		}
	}
	return false
}

// analysisTemplate is an Argo Rollouts AnalysisTemplate, as far as the
// checks read it. (canaryd validate is the full check of a template.)
type analysisTemplate struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Args    []arg `json:"args"`
		Metrics []struct {
			Name             string   `json:"name"`
			Interval         string   `json:"interval"`
			Count            intOrStr `json:"count"`
			SuccessCondition string   `json:"successCondition"`
			FailureCondition string   `json:"failureCondition"`
			FailureLimit     intOrStr `json:"failureLimit"`
			Provider         struct {
				Prometheus *struct {
					Address string `json:"address"`
					Query   string `json:"query"`
				} `json:"prometheus"`
			} `json:"provider"`
		} `json:"metrics"`
	} `json:"spec"`
}

type arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}
