package config

import (
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/internal/ids"
)

// Replicas name this replica among the others that share a store.
type Replicas struct {
	// ReplicaName names this replica in the store's leases (the owner of
	// the analyses it runs begins with it) and in its log: a DNS label.
	// "" means the host name, which in Kubernetes is the pod's name. No
	// analysis id carries it.
	ReplicaName string
}

// replicaSettings are the flags of the replicas, and those removed.
func replicaSettings() []setting {
	return []setting{
		{name: "replica-name", group: groupReplicas, none: "the host name, which in Kubernetes is the pod's name",
			get:   func(c *Config) string { return c.ReplicaName },
			value: func(c *Config) any { return c.ReplicaName },
			usage: "this replica's name, which a store shows as the holder of the analyses it runs: a DNS label, such as the pod's name",
			set: func(c *Config, v string) error {
				if err := ids.CheckName(v); err != nil {
					return err
				}
				c.ReplicaName = v
				return nil
			}},
		removed(groupReplicas, "peers", "replicas share analyses through --store postgres://… (every replica answers every request from it); "+
			`see "Moving from --peers to --store" in docs/operations.md`),
	}
}

// removed is a setting canaryd no longer has: its flag, variable and file
// key are still read, so that a configuration that gives one fails at
// start (exit 64) saying what to do instead (why), rather than as an
// unknown flag or a variable silently ignored. The reference lists it
// apart; it has no value.
func removed(group, name, why string) setting {
	problem := "was removed: " + why
	return setting{name: name, group: group, removed: why,
		usage: "removed: " + why,
		set:   func(*Config, string) error { return errors.New(problem) },
		// Whatever the file's value (a string, a list, a mapping), the
		// key alone is the problem.
		decode: func(_ *Config, data []byte, _ string) []string {
			key := camelCase(name)
			return []string{fmt.Sprintf("line %d: %s: %s", keyLine(data, key), key, problem)}
		}}
}

// keyLine returns the line of the file's top-level key, 0 when the file
// does not parse or has no such key.
func keyLine(data []byte, key string) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i]; strings.EqualFold(k.Value, key) {
			return k.Line
		}
	}
	return 0
}
