package deploy

import (
	"testing"
)

// podName stands for the pod's name where the Deployment takes a value
// from the downward API (metadata.name).
const podName = "$(metadata.name)"

// checkReplicas checks a Deployment on --store memory: (no store given):
// one replica, since each would answer only for the analyses it started
// (several replicas need a store: checkStore); no --peers, which canaryd
// no longer has and refuses at start; the replica named by its pod; and
// one Service, the clients', with no headless Service for the replicas to
// find each other by, nor egress from canaryd to its own pods.
func checkReplicas(t *testing.T, c serveConfig, dep deployment, svc service, services []service, np networkPolicy) {
	t.Helper()
	if store := c.flag("store"); store != "" && store != "memory:" {
		t.Errorf("--store %s: a Deployment on a store is checked by checkStore", store)
	}
	if dep.Spec.Replicas != 1 {
		t.Errorf("%d replicas on --store memory:: each answers only for the analyses it started, so the others' polls get 404; run one, or give them a store (overlays/postgres)", dep.Spec.Replicas)
	}
	if peers := c.flags["peers"]; len(peers) > 0 {
		t.Errorf("--peers %v: removed from canaryd, which refuses it at start; replicas share analyses through --store", peers)
	}
	if got := c.flag("replica-name"); got != podName {
		t.Errorf("--replica-name is %q, want the pod's name from the downward API (CANARYD_REPLICA_NAME from metadata.name)", got)
	}
	for _, s := range services {
		if s.Metadata.Name != svc.Metadata.Name {
			t.Errorf("Service %s beside %s: the replicas no longer call each other", s.Metadata.Name, svc.Metadata.Name)
		}
	}
	if np.allowsEgressToPods("TCP", "8080", dep.Spec.Template.Metadata.Labels) {
		t.Errorf("NetworkPolicy allows egress to canaryd's own pods: the replicas no longer call each other")
	}
	if svc.Spec.SessionAffinity == "ClientIP" {
		t.Errorf("Service %s has ClientIP affinity: it would pin each of canaryd's few callers to one replica", svc.Metadata.Name)
	}
}

// allowsEgressToPods reports whether some egress rule lets the pods reach
// port on pods with the labels, in their own namespace.
func (np networkPolicy) allowsEgressToPods(protocol, port string, labels map[string]string) bool {
	return np.allowsEgressTo(protocol, port, func(p peer) bool {
		return p.NamespaceSelector == nil && p.IPBlock == nil && p.PodSelector != nil && subset(p.PodSelector.MatchLabels, labels)
	})
}
