package config

import (
	"fmt"
	"strings"

	"github.com/canaryd/canaryd/internal/replica"
)

// Replicas name this replica and the others behind the same Service, so
// that any of them can answer for an analysis another one holds.
type Replicas struct {
	// ReplicaName names this replica in the ids of its analyses
	// ("<name>.<random>") and in the Canaryd-Replica header: a DNS label.
	// "" means the host name, which in Kubernetes is the pod's name.
	ReplicaName string
	// Peers are the other replicas, to which requests for their analyses
	// are forwarded: NAME=URL entries and dns+http://HOST:PORT discovery.
	// None: this replica answers alone.
	Peers []replica.Peer
}

// replicaSettings are the flags of the replicas.
func replicaSettings() []setting {
	return []setting{
		{name: "replica-name", group: groupReplicas, none: "the host name, which in Kubernetes is the pod's name",
			get:   func(c *Config) string { return c.ReplicaName },
			value: func(c *Config) any { return c.ReplicaName },
			usage: "this replica's name, in the ids of its analyses (NAME.RANDOM) and the Canaryd-Replica header: a DNS label, such as the pod's name",
			set: func(c *Config, v string) error {
				if err := replica.CheckName(v); err != nil {
					return err
				}
				c.ReplicaName = v
				return nil
			}},
		{name: "peers", group: groupReplicas, list: true, none: "none: this replica answers alone",
			get: func(c *Config) string {
				peers := make([]string, len(c.Peers))
				for i, p := range c.Peers {
					peers[i] = fmt.Sprint(p)
				}
				return strings.Join(peers, ", ")
			},
			usage: "the other replicas behind the same Service; a request for an analysis one of them holds is forwarded to it (repeatable): NAME=URL, or dns+http://HOST:PORT where HOST (a headless Service) resolves to every replica, listening on PORT",
			set: func(c *Config, v string) error {
				p, err := replica.ParsePeer(v)
				if err != nil {
					return err
				}
				c.Peers = append(c.Peers, p)
				return nil
			},
			reset: func(c *Config) { c.Peers = nil }},
	}
}

// validate returns the problems of the peers as a whole: one replica name
// given two URLs.
func (r Replicas) validate() []string {
	var problems []string
	urls := map[string]string{}
	for i, p := range r.Peers {
		if p.Discover {
			continue
		}
		if u, dup := urls[p.Name]; dup && u != p.URL {
			problems = append(problems, fmt.Sprintf("--peers[%d]: replica %s is given twice, at %s and at %s", i, p.Name, u, p.URL))
			continue
		}
		urls[p.Name] = p.URL
	}
	return problems
}
