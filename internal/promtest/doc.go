// Package promtest starts a real Prometheus, loaded with backfilled test
// data, for integration tests anywhere in canaryd (the nested test/ module
// included: its path is under canaryd's, so it may import this package),
// and generates that data.
//
// A test calls Start and queries Server.URL. Start writes the OpenMetrics
// fixtures to files, turns them into TSDB blocks with `promtool tsdb
// create-blocks-from openmetrics` (blocks must exist before Prometheus
// opens its storage), starts `prometheus` on a free loopback port, waits
// for /-/ready, and stops it (and its process group) when the test ends,
// or before, at Server.Stop, for a test of a Prometheus outage.
//
// The generated fixture (WriteFixture, Fixture) is Istio's
// istio_requests_total and istio_request_duration_milliseconds for three
// namespaces whose success rates are known exactly (Namespaces), a fourth
// whose 5xx share rises for half an hour (IncidentNamespace), and a canary
// 30% slower than its stable version (RolloutNamespace, CanaryWorkload and
// StableWorkload, with noise from a fixed formula), for the judge. It spans
// two hours either side of the moment it is made, so that a query "now",
// or a few minutes in the future, has data: Prometheus serves samples with
// future timestamps from backfilled blocks without complaint.
//
// What this package must not do:
//   - skip a test: when prometheus or promtool is missing it fails the test
//     with the command that installs them, because CI must never pass by
//     testing nothing;
//   - listen anywhere but 127.0.0.1, or leave a Prometheus running after its
//     test;
//   - be imported by non-test code, except that WriteFixture may be used by
//     demo tooling to produce the same data.
package promtest
