package deploy

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// podName stands for the pod's name where the Deployment takes a value
// from the downward API (metadata.name).
const podName = "$(metadata.name)"

// checkReplicas checks that the replicas can answer for each other's
// analyses: each is named by its pod's name (the ids of its analyses carry
// it), finds the others through a headless Service that keeps draining pods
// in DNS, may reach them through the NetworkPolicy, and the client Service
// spreads callers over them rather than pinning each to one.
func checkReplicas(t *testing.T, c serveConfig, dep deployment, svc service, services []service, np networkPolicy, sm serviceMonitor) {
	t.Helper()
	if dep.Spec.Replicas < 2 {
		return
	}
	if got := c.flag("replica-name"); got != podName {
		t.Errorf("--replica-name is %q, want the pod's name from the downward API (CANARYD_REPLICA_NAME from metadata.name)", got)
	}
	peers := c.flags["peers"]
	if len(peers) != 1 {
		t.Fatalf("--peers %v, want one dns+http:// entry: the headless Service", peers)
	}
	raw, ok := strings.CutPrefix(peers[0], "dns+")
	u, err := url.Parse(raw)
	if !ok || err != nil || u.Scheme != "http" || u.Port() == "" {
		t.Fatalf("--peers=%s: want dns+http://SERVICE:PORT", peers[0])
	}
	p, _ := c.container.port("http")
	if u.Port() != strconv.Itoa(p.ContainerPort) {
		t.Errorf("--peers=%s: port %s, want the pods' port %d (the addresses are the pods')", peers[0], u.Port(), p.ContainerPort)
	}
	name, _, _ := strings.Cut(u.Hostname(), ".")
	var headless *service
	for i := range services {
		if services[i].Metadata.Name == name {
			headless = &services[i]
		}
	}
	switch {
	case headless == nil:
		t.Errorf("--peers=%s names the Service %q, which is not rendered", peers[0], name)
	case headless.Spec.ClusterIP != "None":
		t.Errorf("Service %s has clusterIP %q, want None: its name must resolve to the pods", name, headless.Spec.ClusterIP)
	case !headless.Spec.PublishNotReadyAddresses:
		t.Errorf("Service %s: publishNotReadyAddresses is false: a draining pod would leave DNS while it still holds analyses", name)
	case len(headless.Spec.Selector) == 0 || !subset(headless.Spec.Selector, dep.Spec.Template.Metadata.Labels):
		t.Errorf("Service %s selector %v does not select the pods %v", name, headless.Spec.Selector, dep.Spec.Template.Metadata.Labels)
	}
	if !np.allowsEgressToPods("TCP", u.Port(), dep.Spec.Template.Metadata.Labels) {
		t.Errorf("NetworkPolicy allows no egress to the other replicas on %s: forwarded requests would time out", u.Port())
	}
	if svc.Spec.SessionAffinity == "ClientIP" {
		t.Errorf("Service %s has ClientIP affinity: with --peers any replica answers, and affinity would pin each of canaryd's few callers to one replica", svc.Metadata.Name)
	}

	// The ServiceMonitor selects both Services by their common labels: only
	// one may have the port it scrapes, or every pod is scraped twice.
	for _, e := range sm.Spec.Endpoints {
		scraped := 0
		for _, s := range services {
			if !subset(sm.Spec.Selector.MatchLabels, s.Metadata.Labels) {
				continue
			}
			for _, sp := range s.Spec.Ports {
				if sp.Name == e.Port {
					scraped++
				}
			}
		}
		if scraped != 1 {
			t.Errorf("ServiceMonitor port %q is on %d of the Services it selects, want 1", e.Port, scraped)
		}
	}
}

// allowsEgressToPods reports whether some egress rule lets the pods reach
// port on pods with the labels, in their own namespace.
func (np networkPolicy) allowsEgressToPods(protocol, port string, labels map[string]string) bool {
	for _, r := range np.Spec.Egress {
		if !r.allowsPort(protocol, port) {
			continue
		}
		if len(r.To) == 0 {
			return true
		}
		for _, p := range r.To {
			if p.NamespaceSelector == nil && p.IPBlock == nil && p.PodSelector != nil && subset(p.PodSelector.MatchLabels, labels) {
				return true
			}
		}
	}
	return false
}
