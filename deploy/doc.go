// Package deploy holds canaryd's deployment files, the Kustomize base and
// overlays under kustomize/, and the tests that check them together with the
// repository's Dockerfile and .dockerignore.
//
// It is a Go module of its own so that the Kustomize API it renders with stays
// out of canaryd's go.mod: the main module's `go build ./...` and
// `go test ./...` do not descend into it. Run its tests with
// `cd deploy && go test ./...`.
package deploy
