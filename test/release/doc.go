// Package release checks what a canaryd release is made of: `make dist`'s
// archive, checksums and SBOM for one target, the binary inside it, and
// .github/workflows/release.yml, which publishes them and the images on a
// tag (actionlint, then what the workflow must do and may not).
package release
