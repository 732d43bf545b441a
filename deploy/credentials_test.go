package deploy

import (
	"slices"
	"testing"
)

// credentialSecrets are the Secrets that the credentials component mounts,
// as Argo Rollouts' users name them.
var credentialSecrets = []string{"datadog", "newrelic", "influxdb"}

// TestKustomizeCredentials: both overlays mount the providers' Secrets,
// each optional and read-only at /etc/canaryd/credentials/NAME without
// subPath (so that a rotated Secret reaches the pod), and point
// --credentials-dir at them, as internal/credentials reads them
// (DIR/NAME/KEY).
func TestKustomizeCredentials(t *testing.T) {
	for _, tc := range []struct{ name, dir string }{
		{"example", withTokens(t, "kustomize/overlays/example", testTokens)},
		{"postgres", withStoreFiles(t, "kustomize/overlays/postgres")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.dir)
			i := slices.IndexFunc(objs, func(r rendered) bool { return r.Kind == "Deployment" })
			if i < 0 {
				t.Fatal("no Deployment rendered")
			}
			var d deployment
			decode(t, objs[i], &d)
			pod := d.Spec.Template.Spec
			ctr := pod.Containers[0]
			if n := countArg(ctr.Args, "--credentials-dir=/etc/canaryd/credentials"); n != 1 {
				t.Errorf("--credentials-dir=/etc/canaryd/credentials is given %d times, want once: %v", n, ctr.Args)
			}
			for _, name := range credentialSecrets {
				m, ok := ctr.mount("/etc/canaryd/credentials/" + name)
				if !ok {
					t.Errorf("the Secret %s is not mounted at /etc/canaryd/credentials/%s", name, name)
					continue
				}
				if m.SubPath != "" {
					t.Errorf("%s is mounted with subPath %q: a rotated Secret would not reach the pod", name, m.SubPath)
				}
				v, ok := pod.volume(m.Name)
				switch {
				case !ok:
					t.Errorf("the mount of %s names the volume %q, which the pod does not have", name, m.Name)
				case v.Secret == nil || v.Secret.SecretName != name:
					t.Errorf("the volume %q is not the Secret %s: %+v", m.Name, name, v)
				case v.Secret.Optional == nil || !*v.Secret.Optional:
					t.Errorf("the Secret %s is not optional: a cluster without it would not start canaryd", name)
				case len(v.Secret.Items) != 0:
					t.Errorf("the Secret %s lists items %v: every key must be a file", name, v.Secret.Items)
				}
			}
		})
	}
}

func countArg(args []string, arg string) int {
	n := 0
	for _, a := range args {
		if a == arg {
			n++
		}
	}
	return n
}
