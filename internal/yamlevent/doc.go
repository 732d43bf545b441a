// Package yamlevent reads YAML as a stream of events (a scalar, the start
// and end of a sequence or mapping, an alias), one at a time, building no
// tree, so that a caller can count what a document holds and refuse it
// (too many nodes, an alias) while it is read rather than after a tree of
// the whole of it has been built.
//
// The scanner and parser are go.yaml.in/yaml/v3's port of libyaml
// (apic.go, parserc.go, readerc.go, scannerc.go, yamlh.go and
// yamlprivateh.go, unchanged but for the package name; LICENSE is theirs),
// so that the events, and the errors, are those of the yaml.v3 decoder
// that canaryd used before: yaml.v3 keeps them unexported. Event is the
// only addition. The package must not grow a decoder: what the events
// mean is its callers' to say.
package yamlevent
