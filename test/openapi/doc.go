// Package openapi keeps openapi.yaml usable by the code generators
// callers bring to it: its test generates a Go client with oapi-codegen
// (types and client, the generator's default options) and compiles it, so
// that a document that no longer generates (two components that make one
// type name, a callback emitted twice) fails here rather than in a
// caller's build.
//
// That openapi.yaml says what canaryd does is the server tests' business
// (internal/server validates every response against it).
package openapi
