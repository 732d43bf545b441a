// Package deploy holds canaryd's deployment files, the Kustomize base and
// overlays under kustomize/ and the Helm chart under helm/canaryd, and the
// tests that check them together with the repository's Dockerfile and
// .dockerignore: they render the kustomizations with the Kustomize API and
// the chart with Helm's own packages, and validate what they render with
// kubeconform's validator.
//
// It is a Go module of its own so that the Kustomize and Helm APIs it
// renders with stay out of canaryd's go.mod: the main module's `go build
// ./...` and `go test ./...` do not descend into it. Run its tests with
// `cd deploy && go test ./...`.
package deploy
