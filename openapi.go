// Package canaryd holds what belongs to the repository as a whole and must
// be compiled into the binary: the OpenAPI document of the HTTP API. It sits
// at the root because go:embed cannot reach a parent directory.
package canaryd

import (
	"bytes"
	_ "embed" // for the OpenAPI document
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI 3 document (YAML) of canaryd's HTTP API, the
// authoritative description of its contract. The copy is the caller's.
func OpenAPI() []byte { return bytes.Clone(openAPI) }
