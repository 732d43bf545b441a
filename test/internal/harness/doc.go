// Package harness starts the canaryd binary, built from the repository's
// cmd/canaryd, for the tests of this module, and gives them the
// repository's AnalysisTemplates with short intervals. The real Prometheus
// they query is canaryd's own internal/promtest, with its fixture (EchoGood
// and EchoBad are two of its namespaces): this module's path is under
// canaryd's, so it may import canaryd's internal packages; it is a module
// of its own so that Argo Rollouts and its Kubernetes libraries stay out of
// canaryd's go.mod.
//
// What this package must not do:
//   - skip a test: when go is missing it fails the test with where to get
//     it, because CI must never pass by testing nothing (promtest does the
//     same for prometheus and promtool);
//   - listen anywhere but 127.0.0.1, or leave a process running after its
//     test: canaryd runs under internal/proctest, in a process group of
//     its own, stopped in the test's cleanup, and (on Linux) killed by the
//     kernel if the test binary dies first.
package harness
