// Package harness runs the real parts the tests of this module talk to: the
// canaryd binary, built from the repository's cmd/canaryd, and a real
// Prometheus holding a small Istio fixture.
//
// It is a re-implementation, not a copy, of what canaryd's own
// internal/promtest does: Go forbids importing another module's internal
// packages, and this module is separate so that Argo Rollouts and its
// Kubernetes libraries stay out of canaryd's go.mod.
//
// What this package must not do:
//   - skip a test: when prometheus, promtool or go is missing it fails the
//     test with the command that installs it, because CI must never pass by
//     testing nothing;
//   - listen anywhere but 127.0.0.1, or leave a process running after its
//     test: every process gets a process group of its own, is stopped in
//     the test's cleanup, and (on Linux) is killed by the kernel if the test
//     binary dies first.
package harness
