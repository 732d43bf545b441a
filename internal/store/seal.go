package store

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// KeySize is the size of a secret key: AES-256.
const KeySize = 32

// maxKeyFile bounds what ReadKeyFile reads.
const maxKeyFile = 4096

// ReadKeyFile reads the key that seals a store's secrets
// (--store-secret-key-file): 32 bytes written as 64 hexadecimal digits or
// in base64 (standard or URL alphabet, padded or not), or the 32 bytes
// themselves; a trailing newline is ignored. `openssl rand -hex 32` makes
// one. Its errors never quote the file's content.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, maxKeyFile+1)
	n, _ := f.Read(buf)
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > maxKeyFile {
		return nil, fmt.Errorf("%s is larger than a key (%d bytes at most)", path, maxKeyFile)
	}
	return ParseKey(buf[:n])
}

// ParseKey reads a key as ReadKeyFile does.
func ParseKey(b []byte) ([]byte, error) {
	if len(b) == KeySize {
		return bytes.Clone(b), nil
	}
	s := string(bytes.TrimSpace(b))
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("not a %d-byte key: write it as 64 hexadecimal digits (openssl rand -hex 32) or in base64", KeySize)
}

// sealer seals and opens a store's secrets with AES-256-GCM. A sealed
// value is: version byte 1, the key's id (the first 4 bytes of its
// sha256, so that a replica with another key says so), a random 12-byte
// nonce, and the ciphertext with its tag. The analysis' id is the
// additional data: a sealed value moved to another row does not open.
type sealer struct {
	aead cipher.AEAD
	id   [4]byte
}

func newSealer(key []byte) (*sealer, error) {
	if key == nil {
		return nil, nil
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("store: the secret key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &sealer{aead: aead}
	sum := sha256.Sum256(key)
	copy(s.id[:], sum[:4])
	return s, nil
}

const sealVersion = 1

func (s *sealer) seal(id string, plain []byte) []byte {
	out := make([]byte, 0, 1+4+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out = append(out, sealVersion)
	out = append(out, s.id[:]...)
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand does not fail
	out = append(out, nonce...)
	return s.aead.Seal(out, nonce, plain, []byte(id))
}

// Errors of opening sealed secrets.
var (
	errNoKey    = errors.New("the analysis' secrets are sealed and this canaryd has no --store-secret-key-file")
	errOtherKey = errors.New("the analysis' secrets are sealed with another key than this canaryd's --store-secret-key-file")
	errDamaged  = errors.New("the analysis' sealed secrets do not open: damaged, or moved from another analysis")
)

func (s *sealer) open(id string, sealed []byte) ([]byte, error) {
	if s == nil {
		return nil, errNoKey
	}
	head := 1 + 4 + s.aead.NonceSize()
	if len(sealed) < head || sealed[0] != sealVersion {
		return nil, errDamaged
	}
	if !bytes.Equal(sealed[1:5], s.id[:]) {
		return nil, errOtherKey
	}
	plain, err := s.aead.Open(nil, sealed[5:head], sealed[head:], []byte(id))
	if err != nil {
		return nil, errDamaged
	}
	return plain, nil
}

// secrets are what an analysis keeps sealed.
type secrets struct {
	Args       map[string]string `json:"args,omitempty"`
	WebhookURL string            `json:"webhookUrl,omitempty"`
	Document   []byte            `json:"document,omitempty"`
}

// split divides a new analysis into what is stored in clear and what is
// sealed: with a key, the secret arguments, a webhook URL with userinfo or
// a query, and the document are sealed; without one, an analysis with a
// secret is refused (SecretError) and the rest is stored in clear.
// sealed is nil when there is nothing to seal.
func (s *sealer) split(a *NewAnalysis) (document []byte, webhookURL string, sealed []byte, err error) {
	var sec secrets
	for _, arg := range a.Args {
		if arg.secret() {
			if s == nil {
				return nil, "", nil, &SecretError{Field: "args." + arg.Name}
			}
			if sec.Args == nil {
				sec.Args = map[string]string{}
			}
			sec.Args[arg.Name] = arg.Value
		}
	}
	if a.Webhook != nil {
		if webhookHasSecret(a.Webhook.URL) {
			if s == nil {
				return nil, "", nil, &SecretError{Field: "webhook.url"}
			}
			sec.WebhookURL = a.Webhook.URL
		}
		webhookURL = RedactURL(a.Webhook.URL)
	}
	document = a.Document
	if a.Document != nil && s != nil {
		// With a key every document is sealed: what makes one a credential
		// is not always recognisable.
		sec.Document, document = a.Document, nil
	} else if a.Credentials && s == nil {
		return nil, "", nil, &SecretError{Field: "spec"}
	}
	if sec.Args == nil && sec.WebhookURL == "" && sec.Document == nil {
		return document, webhookURL, nil, nil
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return nil, "", nil, err
	}
	return document, webhookURL, s.seal(a.ID, plain), nil
}

// fill puts what sealed holds back into a (Get), or says why it cannot
// in a.SealError.
func (s *sealer) fill(a *Analysis, sealed []byte) {
	if sealed == nil {
		return
	}
	plain, err := s.open(a.ID, sealed)
	if err != nil {
		a.SealError = err
		return
	}
	var sec secrets
	if err := json.Unmarshal(plain, &sec); err != nil {
		a.SealError = errDamaged
		return
	}
	for i := range a.Args {
		if v, ok := sec.Args[a.Args[i].Name]; ok {
			a.Args[i].Value = v
		}
	}
	if sec.WebhookURL != "" && a.Webhook != nil {
		a.Webhook.URL = sec.WebhookURL
	}
	if sec.Document != nil {
		a.Document = sec.Document
	}
}
