// Package recipes proves every example under deploy/examples against the
// real canaryd binary and a real Prometheus: each file is parsed as the
// tool it is written for would read it, and what the tool would do with it
// is done for real: the shell of a CI job is run with bash or sh and curl,
// Spinnaker's webhook stage and Flagger's webhooks are sent as Orca and
// Flagger send them. Where a recipe names canaryd's in-cluster address, a
// CI variable or a secret, the test gives the value its own canaryd has;
// nothing else of a recipe is changed.
//
// TestEveryExampleIsTested fails when a file is added to deploy/examples
// without a test here.
package recipes
