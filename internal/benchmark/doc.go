// Package benchmark holds canaryd's load benchmarks, run by `make bench`:
// one-round evaluation against a real Prometheus beside the same query sent
// directly, and thousands of concurrent analyses against a stub Prometheus.
// They report what they measure (latency percentiles, schedule lateness,
// memory per analysis, CPU) as benchmark metrics; they assert nothing about
// speed. The package has no code outside its tests.
package benchmark
