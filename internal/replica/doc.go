// Package replica names the replicas of one canaryd Service and the
// analyses each of them holds, and reads the peer list that tells a replica
// where the others are.
//
// An analysis lives in the memory of the replica that started it. Its id
// says which one: "<replica>.<epoch><random>", the replica's name (an RFC
// 1123 DNS label, the pod name in Kubernetes), when that replica started (9
// characters: a restarted replica can tell an id of its earlier run, whose
// analysis went with the restart, from one it never made) and 26 random
// characters. Any replica can then answer for any id, by forwarding the
// request to the owner the id names (internal/server does the forwarding).
// An id without a replica part (a single canaryd with no name, or one from
// an older version) belongs to whoever holds it; ids of versions before
// the epoch have the random part alone.
//
// Peers come from configuration only (--peers): a static name=URL list, or
// a DNS name whose addresses are the replicas (a headless Service). The
// replica part of an id is only ever compared with names the peers
// themselves report; it never becomes part of an address, so a request
// cannot make canaryd call anything the configuration did not name.
//
// The package is pure: it parses and formats, and must not resolve names,
// open connections or log.
package replica
