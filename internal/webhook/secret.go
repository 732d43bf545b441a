package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// secretPrefix marks a key in the Standard Webhooks form, "whsec_" followed
// by the base64 of the key bytes.
const secretPrefix = "whsec_"

// ParseSecret turns the contents of a --webhook-secret-file into the HMAC
// key. Two forms are accepted:
//
//   - "whsec_<base64>", the Standard Webhooks form that its libraries and
//     most webhook receivers take: the key is the base64-decoded part
//     (standard alphabet, padded);
//   - anything else: the key is the bytes themselves.
//
// Trailing newlines (LF or CRLF) are trimmed first, so that a file written
// with echo works; nothing else is. An empty key is an error. Errors never
// quote the key.
func ParseSecret(data []byte) ([]byte, error) {
	data = bytes.TrimRight(data, "\r\n")
	if rest, ok := bytes.CutPrefix(data, []byte(secretPrefix)); ok {
		key := make([]byte, base64.StdEncoding.DecodedLen(len(rest)))
		n, err := base64.StdEncoding.Decode(key, rest)
		if err != nil {
			return nil, errors.New("webhook: the secret starts with whsec_ but the rest is not valid base64")
		}
		data = key[:n]
	}
	if len(data) == 0 {
		return nil, errors.New("webhook: the secret is empty")
	}
	return data, nil
}

// ReadSecretFile reads and parses the key file named by --webhook-secret-file
// (see ParseSecret).
func ReadSecretFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook: reading the secret file: %w", err)
	}
	key, err := ParseSecret(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return key, nil
}

// sign returns the webhook-signature header value for one attempt:
// "v1," and the base64 of HMAC-SHA256(key, id + "." + timestamp + "." + body).
func sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
