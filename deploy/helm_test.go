package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// chartDir is canaryd's Helm chart.
const chartDir = "helm/canaryd"

// The release the tests install: `helm template canaryd deploy/helm/canaryd
// --namespace canary`.
const (
	chartRelease   = "canaryd"
	chartNamespace = "canary"
)

// helmTemplate renders the chart as `helm template` does, with Helm's own
// packages: the chart loaded, its kubeVersion checked, the values
// coalesced and checked against values.schema.json, the templates
// rendered by Helm's engine and sorted into install order. It returns the
// objects and NOTES.txt.
func helmTemplate(vals map[string]any) ([]rendered, string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, "", err
	}
	// The oldest Kubernetes the chart supports (the preStop sleep action
	// needs 1.30), as `helm template --kube-version 1.30.0`.
	caps := *chartutil.DefaultCapabilities
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, "", fmt.Errorf("chart requires kubeVersion %s, not Kubernetes %s", chrt.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	top, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{
		Name: chartRelease, Namespace: chartNamespace, Revision: 1, IsInstall: true,
	}, &caps)
	if err != nil {
		return nil, "", err
	}
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, "", err
	}
	notes := files[path.Join(chrt.Name(), "templates", "NOTES.txt")]
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, "", err
	}
	if len(hooks) > 0 {
		return nil, "", fmt.Errorf("%d hooks: the chart has none", len(hooks))
	}
	var out []rendered
	for _, m := range manifests {
		var o object
		if err := yaml.Unmarshal([]byte(m.Content), &o); err != nil {
			return nil, "", fmt.Errorf("%s: %v", m.Name, err)
		}
		out = append(out, rendered{object: o, yaml: []byte(m.Content)})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Kind+"/"+out[i].Metadata.Name < out[j].Kind+"/"+out[j].Metadata.Name
	})
	return out, notes, nil
}

func renderChart(t *testing.T, vals map[string]any) []rendered {
	t.Helper()
	objs, _, err := helmTemplate(vals)
	if err != nil {
		t.Fatalf("helm template %s: %v", chartDir, err)
	}
	return objs
}

// values reads a values document, as `-f` does.
func values(t *testing.T, doc string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(doc))
	if err != nil {
		t.Fatalf("values %q: %v", doc, err)
	}
	return v.AsMap()
}

// chartObjects is a rendering of the chart, decoded.
type chartObjects struct {
	all  []rendered
	dep  deployment
	svc  service
	cm   *configMap
	pdb  *podDisruptionBudget
	np   *networkPolicy
	sm   *serviceMonitor
	sa   object
	kind map[string]int
}

func decodeChart(t *testing.T, objs []rendered) chartObjects {
	t.Helper()
	co := chartObjects{all: objs, kind: map[string]int{}}
	for _, o := range objs {
		co.kind[o.Kind]++
		switch o.Kind {
		case "Deployment":
			decode(t, o, &co.dep)
		case "Service":
			decode(t, o, &co.svc)
		case "ConfigMap":
			co.cm = new(configMap)
			decode(t, o, co.cm)
		case "PodDisruptionBudget":
			co.pdb = new(podDisruptionBudget)
			decode(t, o, co.pdb)
		case "NetworkPolicy":
			co.np = new(networkPolicy)
			decode(t, o, co.np)
		case "ServiceMonitor":
			co.sm = new(serviceMonitor)
			decode(t, o, co.sm)
		case "ServiceAccount":
			decode(t, o, &co.sa)
		default:
			t.Errorf("the chart renders a %s (%s): it renders no Secret and nothing but canaryd's own objects", o.Kind, o.Metadata.Name)
		}
	}
	for k, n := range co.kind {
		if n > 1 {
			t.Errorf("%d objects of kind %s", n, k)
		}
	}
	return co
}

// TestHelmChart renders the chart with the values a user gives and holds
// each object to what it must be.
func TestHelmChart(t *testing.T) {
	const (
		defaultImage = "ghcr.io/canaryd/canaryd:v0.1.0"
		defaultProm  = "http://kube-prometheus-stack-prometheus.observability.svc.cluster.local:9090"
		monitoring   = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
	)
	tests := []struct {
		name     string
		values   string
		kinds    []string
		image    string
		prom     string
		replicas int
		store    bool
		auth     *secretMount // --auth-token-file's Secret and key
		key      *secretMount // --store-secret-key-file's
		creds    []string     // credentials Secrets
		extraCMs []string     // templates from existing ConfigMaps
		sm       map[string]string
		tgp      int64
		pgPeer   peer
	}{
		{
			name:     "default",
			values:   "{}",
			kinds:    []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"},
			image:    defaultImage,
			prom:     defaultProm,
			replicas: 1,
			tgp:      45,
		},
		{
			name: "postgres",
			values: `{store: {mode: postgres}, auth: {secretName: canaryd-auth},
				prometheus: {url: "` + monitoring + `"}}`,
			kinds:    []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"},
			image:    defaultImage,
			prom:     monitoring,
			replicas: 3,
			store:    true,
			auth:     &secretMount{"canaryd-auth", "tokens"},
			key:      &secretMount{"canaryd-store-key", "key"},
			tgp:      60,
			pgPeer:   peerJSON(`{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "db"}}}`),
		},
		{
			name: "postgres outside the cluster, five replicas, no sealing key",
			values: `{store: {mode: postgres, postgres: {replicas: 5, url: {secretName: pg, key: dsn},
				sealingKey: {secretName: ""}, networkPolicy: {cidr: 10.20.0.5/32, port: 6432}}}, shutdownGraceSeconds: 60}`,
			kinds:    []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"},
			image:    defaultImage,
			prom:     defaultProm,
			replicas: 5,
			store:    true,
			tgp:      90,
			pgPeer:   peerJSON(`{"ipBlock": {"cidr": "10.20.0.5/32"}}`),
		},
		{
			name: "serviceMonitor",
			values: `{serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}},
				image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}`,
			kinds:    []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount", "ServiceMonitor"},
			image:    "ghcr.io/canaryd/canaryd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			prom:     defaultProm,
			replicas: 1,
			sm:       map[string]string{"release": "kube-prometheus-stack"},
			tgp:      45,
		},
		{
			name:     "credentials",
			values:   `{credentials: {secrets: [datadog, newrelic, canary-profile]}, templates: {configMaps: [team-templates]}}`,
			kinds:    []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"},
			image:    defaultImage,
			prom:     defaultProm,
			replicas: 1,
			creds:    []string{"datadog", "newrelic", "canary-profile"},
			extraCMs: []string{"team-templates"},
			tgp:      45,
		},
		{
			name:     "tokens",
			values:   `{auth: {secretName: pipeline-tokens, key: api-tokens}, image: {tag: v0.2.0}}`,
			kinds:    []string{"ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"},
			image:    "ghcr.io/canaryd/canaryd:v0.2.0",
			prom:     defaultProm,
			replicas: 1,
			auth:     &secretMount{"pipeline-tokens", "api-tokens"},
			tgp:      45,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, values(t, tc.values))
			co := decodeChart(t, objs)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.Kind)
				if o.Metadata.Namespace != chartNamespace {
					t.Errorf("%s/%s: namespace %q, want the release's %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace, chartNamespace)
				}
				for k, want := range map[string]string{
					"app.kubernetes.io/name":       "canaryd",
					"app.kubernetes.io/instance":   chartRelease,
					"app.kubernetes.io/managed-by": "Helm",
					"helm.sh/chart":                "canaryd-0.1.0",
				} {
					if got := o.Metadata.Labels[k]; got != want {
						t.Errorf("%s/%s: label %s=%q, want %q", o.Kind, o.Metadata.Name, k, got, want)
					}
				}
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Fatalf("kinds rendered: %v, want %v", kinds, tc.kinds)
			}
			kubeconform(t, tc.name, objs)

			pod := co.dep.Spec.Template.Spec
			if co.dep.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != chartRelease {
				t.Errorf("Deployment selector %v does not select by release: two releases in a namespace would share pods", co.dep.Spec.Selector.MatchLabels)
			}
			c := checkDeployment(t, co.dep, co.sa, tc.image, tc.replicas)
			checkFlags(t, c)
			checkPrometheus(t, c, *co.np, tc.prom, chartNamespace)
			checkService(t, co.svc, co.dep, c)
			checkPDB(t, *co.pdb, co.dep)
			checkNetworkPolicy(t, *co.np, co.dep, c)
			if got := *pod.TerminationGracePeriodSeconds; got != tc.tgp {
				t.Errorf("terminationGracePeriodSeconds %d, want %d", got, tc.tgp)
			}
			if v, _ := c.container.env("GOMEMLIMIT"); v != "200MiB" || c.container.Resources.Limits["memory"] != "256Mi" {
				t.Errorf("GOMEMLIMIT %q and limits.memory %q, want the base's 200MiB and 256Mi", v, c.container.Resources.Limits["memory"])
			}

			checkChartTemplates(t, c, co, tc.extraCMs)
			checkSecretFlag(t, c, pod, "auth-token-file", "/etc/canaryd/auth/tokens", tc.auth)
			checkCredentials(t, c, pod, tc.creds)

			if tc.sm != nil {
				checkServiceMonitor(t, *co.sm, co.svc)
				for k, v := range tc.sm {
					if co.sm.Metadata.Labels[k] != v {
						t.Errorf("ServiceMonitor labels %v, want %s=%s", co.sm.Metadata.Labels, k, v)
					}
				}
			}

			if !tc.store {
				checkReplicas(t, c, co.dep, co.svc, []service{co.svc}, *co.np)
				if len(pod.InitContainers) > 0 {
					t.Errorf("initContainers %v on memory:", pod.InitContainers)
				}
				checkSecretFlag(t, c, pod, "store-secret-key-file", "", nil)
				return
			}
			checkSecretFlag(t, c, pod, "store-secret-key-file", "/etc/canaryd/store/key", tc.key)
			checkChartStore(t, c, co, tc.values, tc.pgPeer)
		})
	}
}

// peerJSON is a NetworkPolicy peer, written as in a manifest.
func peerJSON(doc string) (p peer) {
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		panic(err)
	}
	return p
}

// secretMount is a Secret's key, mounted as a file.
type secretMount struct{ secret, key string }

// checkSecretFlag: with want, --flag names file, from a required Secret
// volume that maps the Secret's key to the file's name; without, the flag
// is absent.
func checkSecretFlag(t *testing.T, c serveConfig, pod podSpec, flag, file string, want *secretMount) {
	t.Helper()
	got := c.flag(flag)
	if want == nil {
		if got != "" {
			t.Errorf("--%s=%s, but no Secret is configured for it", flag, got)
		}
		return
	}
	if got != file {
		t.Fatalf("--%s=%q, want %s", flag, got, file)
	}
	m, ok := c.container.mount(path.Dir(file))
	if !ok {
		t.Fatalf("nothing is mounted at %s for --%s", path.Dir(file), flag)
	}
	if m.SubPath != "" {
		t.Errorf("--%s's Secret is mounted with subPath: a rotated Secret would never reach the pod", flag)
	}
	v, _ := pod.volume(m.Name)
	switch {
	case v.Secret == nil:
		t.Errorf("volume %q for --%s is not a Secret", m.Name, flag)
	case v.Secret.SecretName != want.secret:
		t.Errorf("volume %q for --%s is the Secret %q, want %q", m.Name, flag, v.Secret.SecretName, want.secret)
	case v.Secret.Optional == nil || *v.Secret.Optional:
		t.Errorf("the Secret %q for --%s is optional: the pod would start without it", want.secret, flag)
	case len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != want.key || v.Secret.Items[0].Path != path.Base(file):
		t.Errorf("the Secret %q's items %+v, want its key %q as %s", want.secret, v.Secret.Items, want.key, path.Base(file))
	}
}

// checkCredentials: each credentials Secret is a directory of
// --credentials-dir named after it, its keys the files (DIR/SECRET/KEY, as
// Argo's Secrets mount), required and updated in place; without Secrets
// there is no flag.
func checkCredentials(t *testing.T, c serveConfig, pod podSpec, secrets []string) {
	t.Helper()
	dir := c.flag("credentials-dir")
	if len(secrets) == 0 {
		if dir != "" {
			t.Errorf("--credentials-dir=%s without credentials Secrets", dir)
		}
		for _, m := range c.container.VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/etc/canaryd/credentials") {
				t.Errorf("%s is mounted without credentials Secrets", m.MountPath)
			}
		}
		return
	}
	if dir != "/etc/canaryd/credentials" {
		t.Fatalf("--credentials-dir=%q, want /etc/canaryd/credentials", dir)
	}
	if _, ok := c.container.mount(dir); ok {
		t.Errorf("a volume is mounted at %s itself: each Secret is a directory of it", dir)
	}
	for _, name := range secrets {
		m, ok := c.container.mount(path.Join(dir, name))
		if !ok {
			t.Errorf("the Secret %s is not mounted at %s/%s", name, dir, name)
			continue
		}
		if m.SubPath != "" {
			t.Errorf("%s is mounted with subPath: a rotated Secret would never reach the pod", m.MountPath)
		}
		v, _ := pod.volume(m.Name)
		switch {
		case v.Secret == nil || v.Secret.SecretName != name:
			t.Errorf("%s/%s is volume %+v, want the Secret %s", dir, name, v, name)
		case v.Secret.Optional == nil || *v.Secret.Optional:
			t.Errorf("the credentials Secret %s is optional", name)
		case len(v.Secret.Items) != 0:
			t.Errorf("the credentials Secret %s lists items %+v: every key must be a file, as Argo's keys are", name, v.Secret.Items)
		}
	}
	n := 0
	for _, m := range c.container.VolumeMounts {
		if strings.HasPrefix(m.MountPath, dir+"/") {
			n++
		}
	}
	if n != len(secrets) {
		t.Errorf("%d mounts under %s, want one for each of the %d Secrets", n, dir, len(secrets))
	}
}

// checkChartTemplates: --templates is one directory, a projected volume
// (no subPath, so changes reach the pod) of the chart's ConfigMap, which
// holds the kustomize base's templates unchanged, and the existing
// ConfigMaps named; the pods roll when the chart's templates change.
func checkChartTemplates(t *testing.T, c serveConfig, co chartObjects, extra []string) {
	t.Helper()
	dir := c.flag("templates")
	m, ok := c.container.mount(dir)
	if dir == "" || !ok {
		t.Fatalf("nothing is mounted at --templates=%q", dir)
	}
	if m.SubPath != "" {
		t.Errorf("templates mounted with subPath: ConfigMap updates would never reach the pod")
	}
	var raw struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct {
					Volumes []struct {
						Name      string `json:"name"`
						Projected *struct {
							Sources []struct {
								ConfigMap *struct {
									Name string `json:"name"`
								} `json:"configMap"`
							} `json:"sources"`
						} `json:"projected"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	for _, o := range co.all {
		if o.Kind == "Deployment" {
			if err := yaml.Unmarshal(o.yaml, &raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	var sources []string
	for _, v := range raw.Spec.Template.Spec.Volumes {
		if v.Name != m.Name {
			continue
		}
		if v.Projected == nil {
			t.Fatalf("volume %q at --templates is not a projected volume", m.Name)
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap == nil {
				t.Errorf("volume %q has a source that is not a ConfigMap", m.Name)
				continue
			}
			sources = append(sources, s.ConfigMap.Name)
		}
	}
	if co.cm == nil {
		t.Fatalf("no templates ConfigMap rendered")
	}
	if want := append([]string{co.cm.Metadata.Name}, extra...); !slices.Equal(sources, want) {
		t.Errorf("--templates holds the ConfigMaps %v, want %v", sources, want)
	}
	for _, name := range []string{"success-rate.yaml", "latency-p99.yaml"} {
		want, err := os.ReadFile(filepath.Join("kustomize/base/templates", name))
		if err != nil {
			t.Fatal(err)
		}
		if co.cm.Data[name] != string(want) {
			t.Errorf("the chart's %s is not the kustomize base's, unchanged", name)
		}
	}
	if len(co.cm.Data) != 2 {
		t.Errorf("the chart's templates ConfigMap holds %d files, want 2", len(co.cm.Data))
	}
	if sum := raw.Spec.Template.Metadata.Annotations["checksum/templates"]; !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sum) {
		t.Errorf("pod annotation checksum/templates = %q: a change of template would not roll the pods", sum)
	}
}

// checkChartStore checks the postgres mode: CANARYD_STORE from the
// existing Secret's key the values name (the chart renders no Secret),
// `canaryd migrate` as an initContainer (checkMigrate), and egress to
// DNS, PostgreSQL and Prometheus only.
func checkChartStore(t *testing.T, c serveConfig, co chartObjects, vals string, pg peer) {
	t.Helper()
	var v struct {
		Store struct {
			Postgres struct {
				URL struct {
					SecretName string `json:"secretName"`
					Key        string `json:"key"`
				} `json:"url"`
				NetworkPolicy struct {
					Port int `json:"port"`
				} `json:"networkPolicy"`
			} `json:"postgres"`
		} `json:"store"`
	}
	if err := yaml.Unmarshal([]byte(vals), &v); err != nil {
		t.Fatal(err)
	}
	name, key, port := v.Store.Postgres.URL.SecretName, v.Store.Postgres.URL.Key, v.Store.Postgres.NetworkPolicy.Port
	if name == "" {
		name, key = "canaryd-store", "url"
	}
	if port == 0 {
		port = 5432
	}
	if got, want := c.flag("store"), secretRef(name, key); got != want {
		t.Errorf("--store is %q, want CANARYD_STORE from %s", got, want)
	}
	pod := co.dep.Spec.Template.Spec
	for _, vol := range pod.Volumes {
		if vol.Secret != nil && vol.Secret.SecretName == name {
			t.Errorf("volume %q mounts the store's URL Secret: it belongs in the environment only", vol.Name)
		}
	}
	checkMigrate(t, c, pod)

	np := co.np
	if !np.allowsEgressTo("TCP", strconv.Itoa(port), func(p peer) bool {
		b1, _ := json.Marshal(p)
		b2, _ := json.Marshal(pg)
		return string(b1) == string(b2)
	}) {
		t.Errorf("NetworkPolicy allows no egress to PostgreSQL (%+v, port %d): %+v", pg, port, np.Spec.Egress)
	}
	allowed := map[string]bool{"UDP/53": true, "TCP/53": true, "TCP/" + strconv.Itoa(port): true, "TCP/9090": true}
	for i, r := range np.Spec.Egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			t.Errorf("egress rule %d allows any destination or port", i)
		}
		for _, p := range r.Ports {
			if !allowed[p.Protocol+"/"+string(p.Port)] {
				t.Errorf("egress rule %d allows %s %s: want DNS, PostgreSQL and Prometheus only", i, p.Protocol, p.Port)
			}
		}
	}
}

// TestHelmMatchesKustomize renders the kustomize base and overlays, and
// the chart with the values that say the same, and holds them to the same
// Deployment: canaryd's arguments and environment (flags), ports, probes,
// resources, security contexts, grace period, the migrate initContainer;
// and to the same PodDisruptionBudget, NetworkPolicy rules and
// ServiceMonitor endpoints. Names aside: kustomize's generated Secrets
// carry a hash of their contents, the chart's are the existing ones.
func TestHelmMatchesKustomize(t *testing.T) {
	const monitoring = `prometheus: {url: "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"}`
	// The overlays' credentials component mounts these Secrets.
	const credentials = `credentials: {secrets: [datadog, newrelic, influxdb]}`
	ci, err := os.ReadFile(filepath.Join(chartDir, "ci", "postgres-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, values string
	}{
		{"base", "kustomize/base", `{serviceMonitor: {enabled: true}}`},
		{"example", "kustomize/overlays/example", `{auth: {secretName: canaryd-auth}, ` + monitoring + `, serviceMonitor: {enabled: true}, ` + credentials + `}`},
		{"postgres", "kustomize/overlays/postgres", string(ci) + "\nserviceMonitor: {enabled: true}\n" + credentials + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir
			switch tc.name {
			case "example":
				dir = withTokens(t, tc.dir, testTokens)
			case "postgres":
				dir = withStoreFiles(t, tc.dir)
			}
			k := render(t, dir)
			kubeconform(t, tc.dir, k)
			h := renderChart(t, values(t, tc.values))
			for _, kind := range []string{"Deployment", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "Service"} {
				got, want := shape(t, h, kind), shape(t, k, kind)
				if got != want {
					t.Errorf("%s: the chart's\n%s\nkustomize's\n%s", kind, got, want)
				}
			}
		})
	}
}

// kustomizeHash is the suffix kustomize gives a generated object's name.
var kustomizeHash = regexp.MustCompile(`^(canaryd-[a-z-]+)-[a-z0-9]{10}$`)

// shape is what the chart and kustomize must agree on in the object of a
// kind, as indented JSON: the spec less names, labels, images and the
// volumes (the chart mounts existing Secrets, kustomize generated ones).
func shape(t *testing.T, objs []rendered, kind string) string {
	t.Helper()
	i := slices.IndexFunc(objs, func(r rendered) bool { return r.Kind == kind })
	if i < 0 {
		t.Fatalf("no %s rendered", kind)
	}
	var o map[string]any
	if err := yaml.Unmarshal(objs[i].yaml, &o); err != nil {
		t.Fatal(err)
	}
	spec, _ := o["spec"].(map[string]any)
	var out any
	switch kind {
	case "Deployment":
		tmpl := spec["template"].(map[string]any)
		pod := tmpl["spec"].(map[string]any)
		containers := func(key string) []any {
			var cs []any
			list, _ := pod[key].([]any)
			for _, c := range list {
				c := c.(map[string]any)
				delete(c, "image")
				delete(c, "imagePullPolicy")
				delete(c, "volumeMounts")
				// Flags in any order: kustomize appends an overlay's
				// after its components'.
				if args, _ := c["args"].([]any); len(args) > 1 {
					slices.SortFunc(args[1:], func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
				}
				env, _ := c["env"].([]any)
				for _, e := range env {
					from, _ := e.(map[string]any)["valueFrom"].(map[string]any)
					if ref, ok := from["secretKeyRef"].(map[string]any); ok {
						ref["name"] = kustomizeHash.ReplaceAllString(ref["name"].(string), "$1")
					}
				}
				slices.SortFunc(env, func(a, b any) int {
					return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
				})
				cs = append(cs, c)
			}
			return cs
		}
		out = map[string]any{
			"replicas":                      spec["replicas"],
			"strategy":                      spec["strategy"],
			"revisionHistoryLimit":          spec["revisionHistoryLimit"],
			"containers":                    containers("containers"),
			"initContainers":                containers("initContainers"),
			"securityContext":               pod["securityContext"],
			"terminationGracePeriodSeconds": pod["terminationGracePeriodSeconds"],
			"enableServiceLinks":            pod["enableServiceLinks"],
			"automountServiceAccountToken":  pod["automountServiceAccountToken"],
		}
	case "NetworkPolicy":
		// The rules as a set: the order of egress rules means nothing.
		var egress []string
		for _, r := range spec["egress"].([]any) {
			b, _ := json.Marshal(r)
			egress = append(egress, string(b))
		}
		slices.Sort(egress)
		out = map[string]any{"policyTypes": spec["policyTypes"], "ingress": spec["ingress"], "egress": egress}
	case "PodDisruptionBudget":
		delete(spec, "selector")
		out = spec
	case "Service":
		out = map[string]any{"type": spec["type"], "ports": spec["ports"]}
	case "ServiceMonitor":
		out = spec["endpoints"]
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHelmCIValues renders the chart with every values file under ci/
// (what a chart-testing run installs) and checks each object with
// kubeconform -strict.
func TestHelmCIValues(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("ci/ holds %d values files: %v", len(files), files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			vals, err := chartutil.ReadValuesFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs := renderChart(t, vals.AsMap())
			kubeconform(t, f, objs)
			co := decodeChart(t, objs)
			if co.kind["Deployment"] != 1 || co.kind["Service"] != 1 {
				t.Errorf("kinds %v: want one Deployment and one Service", co.kind)
			}
			c := checkDeployment(t, co.dep, co.sa, co.dep.Spec.Template.Spec.Containers[0].Image, co.dep.Spec.Replicas)
			checkFlags(t, c)
		})
	}
}

// TestHelmValuesRefused: values.schema.json and the templates refuse
// values that would render a pod that cannot start or a policy that is
// not what was meant, naming the key.
func TestHelmValuesRefused(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"a store canaryd does not have", `{store: {mode: redis}}`, "mode"},
		{"an unknown key", `{replicas: 3}`, "replicas"},
		{"replicas on memory", `{store: {mode: memory, replicas: 3}}`, "replicas"},
		{"a credentials Secret's name", `{credentials: {secrets: [Datadog_Keys]}}`, "secrets"},
		{"GOMEMLIMIT in a unit Go does not read", `{goMemLimit: 200MB}`, "goMemLimit"},
		{"no Secret for the store's URL", `{store: {mode: postgres, postgres: {url: {secretName: "", key: url}}}}`, "secretName"},
		{"a Prometheus URL without a scheme", `{prometheus: {url: "prometheus:9090"}}`, "url"},
		{"the grace period as a duration", `{shutdownGraceSeconds: 30s}`, "shutdownGraceSeconds"},
		{"an image digest that is not one", `{image: {digest: latest}}`, "digest"},
		{"a migrate timeout that is not a duration", `{store: {mode: postgres, postgres: {migrate: {timeout: 2}}}}`, "timeout"},
		{"postgres egress without a destination", `{store: {mode: postgres, postgres: {networkPolicy: {namespace: "", cidr: ""}}}}`, "networkPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := helmTemplate(values(t, tc.values))
			if err == nil {
				t.Fatalf("values %s rendered", tc.values)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("values %s: %v; want it to name %q", tc.values, err, tc.want)
			}
		})
	}
}

// TestHelmNotes: NOTES.txt says where canaryd answers, and that the API is
// open without tokens.
func TestHelmNotes(t *testing.T) {
	_, open, err := helmTemplate(values(t, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	_, closed, err := helmTemplate(values(t, "{auth: {secretName: canaryd-auth}}"))
	if err != nil {
		t.Fatal(err)
	}
	const addr = "http://canaryd.canary.svc:8080"
	if !strings.Contains(open, addr) || !strings.Contains(closed, addr) {
		t.Errorf("NOTES.txt does not say %s:\n%s", addr, open)
	}
	if !strings.Contains(open, "open") || strings.Contains(closed, "open") {
		t.Errorf("NOTES.txt does not warn of an open API without tokens (and only then):\n%s\n%s", open, closed)
	}
}

// TestHelmDocs runs the documentation's Helm commands the way Helm would
// read them: every `helm install` (or upgrade) and `--set` of README.md's
// set-up and docs/kubernetes.md's Helm section names this chart and
// flags Helm has, and its values (a `-f values.yaml` is the page's YAML
// block before it) render and pass kubeconform -strict. The values table
// names every value of values.yaml.
func TestHelmDocs(t *testing.T) {
	span := regexp.MustCompile("`((?:helm (?:install|upgrade)|--set) [^`]+)`")
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	commands := 0
	for _, page := range []string{"README.md", "docs/kubernetes.md"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if page == "docs/kubernetes.md" {
			i := strings.Index(text, "\n## Helm\n")
			if i < 0 {
				t.Fatalf("%s has no section ## Helm", page)
			}
			text = text[i:]
			if j := strings.Index(text[1:], "\n## "); j >= 0 {
				text = text[:j+1]
			}
			checkValuesTable(t, page, text)
		}
		found := 0
		for _, m := range span.FindAllStringSubmatchIndex(text, -1) {
			cmd := text[m[2]:m[3]]
			var valuesFile string
			if blocks := block.FindAllStringSubmatch(text[:m[0]], -1); len(blocks) > 0 {
				valuesFile = blocks[len(blocks)-1][1]
			}
			found++
			t.Run(page+": "+cmd, func(t *testing.T) {
				vals, err := helmCommand(cmd, valuesFile)
				if err != nil {
					t.Fatal(err)
				}
				objs, _, err := helmTemplate(vals)
				if err != nil {
					t.Fatalf("helm template: %v", err)
				}
				kubeconform(t, cmd, objs)
			})
		}
		if found == 0 || !strings.Contains(text, "helm install canaryd deploy/helm/canaryd") {
			t.Errorf("%s shows no `helm install canaryd deploy/helm/canaryd …`", page)
		}
		commands += found
	}
	if commands < 5 {
		t.Errorf("%d Helm commands found in the documentation: is the reading broken?", commands)
	}
}

// helmCommand reads a documented helm install, upgrade or lone --set as
// Helm would, and returns the values it gives the chart: those of its -f
// file (the page's YAML block) and --set flags.
func helmCommand(cmd, valuesFile string) (map[string]any, error) {
	words, err := shellWords(cmd)
	if err != nil {
		return nil, err
	}
	vals := map[string]any{}
	var positional []string
	if words[0] == "helm" {
		words = words[2:]
	} else {
		positional = []string{chartRelease, "deploy/" + chartDir}
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		next := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("%s without a value", w)
			}
			i++
			return words[i], nil
		}
		switch w {
		case "--namespace", "-n":
			ns, err := next()
			if err != nil {
				return nil, err
			}
			if ns != chartNamespace {
				return nil, fmt.Errorf("namespace %q: the documentation installs into %q", ns, chartNamespace)
			}
		case "--create-namespace", "--install", "--wait", "--atomic":
		case "--set":
			kv, err := next()
			if err != nil {
				return nil, err
			}
			if err := strvals.ParseInto(kv, vals); err != nil {
				return nil, fmt.Errorf("--set %s: %v", kv, err)
			}
		case "-f", "--values":
			f, err := next()
			if err != nil {
				return nil, err
			}
			if f != "values.yaml" || valuesFile == "" {
				return nil, fmt.Errorf("-f %s: the page shows no values.yaml before it", f)
			}
			file, err := chartutil.ReadValues([]byte(valuesFile))
			if err != nil {
				return nil, fmt.Errorf("values.yaml: %v", err)
			}
			vals = chartutil.CoalesceTables(vals, file.AsMap())
		default:
			if strings.HasPrefix(w, "-") {
				return nil, fmt.Errorf("flag %s: the test does not know it", w)
			}
			positional = append(positional, w)
		}
	}
	if len(positional) != 2 || positional[0] != chartRelease || positional[1] != "deploy/"+chartDir {
		return nil, fmt.Errorf("arguments %v: want the release %s and the chart deploy/%s", positional, chartRelease, chartDir)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, positional[1], "Chart.yaml")); err != nil {
		return nil, err
	}
	return vals, nil
}

// shellWords splits a command as the shell would, for the quoting the
// documentation uses: words, and 'single-quoted' parts.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(`"$\;&|<>`+"`", r):
			return nil, fmt.Errorf("%q: the test reads no %c", s, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("%q: unclosed quote", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// checkValuesTable: the Helm section names every value of values.yaml
// down to its second level (the third under store.postgres), but for
// the maps and lists handed to Kubernetes as they are.
func checkValuesTable(t *testing.T, page, section string) {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asIs := map[string]bool{"resources": true, "networkPolicy.dns": true, "store.postgres.migrate": true, "store.postgres.url": true, "store.postgres.sealingKey": true, "store.postgres.networkPolicy": true}
	var walk func(prefix string, m map[string]any, depth int)
	walk = func(prefix string, m map[string]any, depth int) {
		for k, val := range m {
			p := prefix + k
			if !strings.Contains(section, "`"+p+"`") && !strings.Contains(section, "`"+p+".") {
				t.Errorf("%s's Helm section does not name the value `%s`", page, p)
			}
			sub, ok := val.(map[string]any)
			if ok && len(sub) > 0 && !asIs[p] && (depth < 2 || strings.HasPrefix(p, "store.postgres")) {
				walk(p+".", sub, depth+1)
			}
		}
	}
	walk("", v.AsMap(), 1)
}

// TestHelmChartMetadata checks Chart.yaml: a v2 application chart whose
// kubeVersion admits the Kubernetes the tests render for, and Artifact
// Hub's annotations, each of the form Artifact Hub reads, the image the
// one the chart installs by default.
func TestHelmChartMetadata(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	md := chrt.Metadata
	if err := md.Validate(); err != nil {
		t.Errorf("Chart.yaml: %v", err)
	}
	if md.APIVersion != "v2" || md.Type != "application" || md.Name != "canaryd" {
		t.Errorf("Chart.yaml: apiVersion %q, type %q, name %q; want v2, application, canaryd", md.APIVersion, md.Type, md.Name)
	}
	if !chartutil.IsCompatibleRange(md.KubeVersion, "v1.30.0") || chartutil.IsCompatibleRange(md.KubeVersion, "v1.29.9") {
		t.Errorf("kubeVersion %q: want 1.30 and newer (the preStop sleep action)", md.KubeVersion)
	}
	var images []struct {
		Name, Image string
		Platforms   []string
	}
	if err := yaml.UnmarshalStrict([]byte(md.Annotations["artifacthub.io/images"]), &images); err != nil || len(images) != 1 {
		t.Fatalf("artifacthub.io/images %q: %v", md.Annotations["artifacthub.io/images"], err)
	}
	if want := "ghcr.io/canaryd/canaryd:" + md.AppVersion; images[0].Image != want {
		t.Errorf("artifacthub.io/images names %s, want the default image %s", images[0].Image, want)
	}
	var links []struct{ Name, URL string }
	if err := yaml.UnmarshalStrict([]byte(md.Annotations["artifacthub.io/links"]), &links); err != nil || len(links) == 0 {
		t.Errorf("artifacthub.io/links %q: %v", md.Annotations["artifacthub.io/links"], err)
	}
	var changes []struct{ Kind, Description string }
	if err := yaml.UnmarshalStrict([]byte(md.Annotations["artifacthub.io/changes"]), &changes); err != nil || len(changes) == 0 {
		t.Errorf("artifacthub.io/changes %q: %v", md.Annotations["artifacthub.io/changes"], err)
	}
	for _, c := range changes {
		if !slices.Contains([]string{"added", "changed", "deprecated", "removed", "fixed", "security"}, c.Kind) {
			t.Errorf("artifacthub.io/changes: kind %q is not one Artifact Hub knows", c.Kind)
		}
	}
	for _, k := range []string{"artifacthub.io/category", "artifacthub.io/operator", "artifacthub.io/prerelease", "artifacthub.io/containsSecurityUpdates"} {
		if md.Annotations[k] == "" {
			t.Errorf("Chart.yaml has no annotation %s", k)
		}
	}
	if chrt.Schema == nil {
		t.Errorf("the chart has no values.schema.json")
	}
}
