package api

import (
	"bytes"
	"encoding/json"
	"io"
)

// NewEncoder returns a JSON encoder that writes to w as canaryd writes all
// its JSON (responses, stream events, webhook bodies, the command line's
// output): like encoding/json's, but with <, > and & written as they are.
// encoding/json escapes them (\u003c, \u003e, \u0026) for JSON embedded in
// HTML, which canaryd never writes; a message such as "failed (2) >
// failureLimit (1)" must read as it is in curl's output, a log or a
// pipeline step.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// Marshal is json.Marshal as NewEncoder encodes: <, > and & as they are.
func Marshal(v any) ([]byte, error) {
	return marshal(v, "", "")
}

// MarshalIndent is json.MarshalIndent as NewEncoder encodes: <, > and &
// as they are.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	return marshal(v, prefix, indent)
}

func marshal(v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	// Encode ends the value with a newline; Marshal does not.
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
