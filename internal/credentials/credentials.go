// Package credentials reads the credentials of metric providers from a
// directory laid out as Kubernetes mounts Secrets (--credentials-dir): one
// subdirectory per Secret, named as the Secret, and one file per key,
// holding the key's value (DIR/datadog/api-key, DIR/newrelic/account-id).
// An Argo Rollouts user mounts the Secrets Argo reads (datadog, newrelic,
// influxdb, a profile's name) there, unchanged.
//
// A Secret is read when a metric needs it, and read again once it is older
// than Options.MaxAge, so that a rotated Secret (kubelet replaces the
// files) takes effect without a restart.
//
// What this package must not do:
//   - read outside the directory: a Secret's name, which a template
//     chooses (secretRef.name, profile), must be a Kubernetes Secret name
//     (lower-case letters, digits, "-" and "."; no "/", no leading ".");
//   - put a value in an error: errors name the Secret and the key, the file
//     relative to the directory ("datadog/api-key"), never what it holds;
//   - read without a bound: a key's file is at most MaxValueBytes, a Secret
//     at most MaxKeys keys.
package credentials

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The bounds of what is read.
const (
	// MaxValueBytes is the longest value a key's file may hold.
	MaxValueBytes = 64 << 10
	// MaxKeys is the most keys a Secret may have.
	MaxKeys = 64
	// DefaultMaxAge is Options.MaxAge when none is set.
	DefaultMaxAge = 10 * time.Second
)

// Flag names the setting that sets the directory, in messages.
const Flag = "--credentials-dir"

// Options configure a Dir.
type Options struct {
	// MaxAge is how long a Secret read is used before it is read again;
	// DefaultMaxAge when zero, and a negative one reads it for every use.
	MaxAge time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Dir is a directory of Secrets. A nil *Dir has none: every Read fails
// with ErrNoDir. It is safe for concurrent use.
type Dir struct {
	root   string
	maxAge time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]*entry
}

type entry struct {
	read   time.Time
	secret Secret
	err    error
}

// New returns the Dir of root. It checks that root is a directory; the
// Secrets in it are read when they are needed.
func New(root string, o Options) (*Dir, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Flag, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: %s is not a directory", Flag, root)
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Dir{root: root, maxAge: o.MaxAge, now: o.Now, cache: map[string]*entry{}}, nil
}

// ErrNoDir is Read's error when there is no directory.
var ErrNoDir = errors.New("canaryd reads no credentials directory (" + Flag + ")")

// Secret is the keys of one Secret and their values. It is shared and must
// not be changed.
type Secret struct {
	// Name is the Secret's name, its subdirectory.
	Name   string
	values map[string]string
}

// Get returns the value of key, and whether the Secret has it.
func (s Secret) Get(key string) (string, bool) {
	v, ok := s.values[key]
	return v, ok
}

// Require returns a *MissingError for the first of keys that the Secret
// lacks or holds empty, nil when it has them all.
func (s Secret) Require(keys ...string) error {
	for _, k := range keys {
		if s.values[k] == "" {
			return &MissingError{Secret: s.Name, Key: k}
		}
	}
	return nil
}

// MissingError says that a Secret, or one of its keys, is not in the
// directory. It names the file, relative to the directory, and never a
// value.
type MissingError struct {
	Secret string
	// Key is empty when the whole Secret is missing.
	Key string
}

func (e *MissingError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("no Secret %q in the credentials directory (%s): the directory %s/ is missing", e.Secret, Flag, e.Secret)
	}
	return fmt.Sprintf("the Secret %q has no key %q: the file %s/%s in the credentials directory (%s) is missing or empty", e.Secret, e.Key, e.Secret, e.Key, Flag)
}

// name is a Kubernetes Secret's name (a DNS subdomain name).
var name = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// ValidName says why s cannot name a Secret, "" when it can.
func ValidName(s string) string {
	if !name.MatchString(s) {
		return "a Secret's name is lower-case letters, digits, \"-\" and \".\", starting and ending with a letter or digit, at most 253 characters"
	}
	return ""
}

// Read returns the Secret name: every key of its subdirectory, a file
// each (names starting with "." are Kubernetes' own and skipped), its value
// the file's bytes without trailing line breaks. A Secret read less than
// MaxAge ago is not read again; a missing one is looked for again after
// MaxAge too.
func (d *Dir) Read(secret string) (Secret, error) {
	if d == nil {
		return Secret{}, ErrNoDir
	}
	if why := ValidName(secret); why != "" {
		return Secret{}, fmt.Errorf("%q is not a Secret's name: %s", clip(secret), why)
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.cache[secret]; e != nil && d.maxAge > 0 && now.Sub(e.read) < d.maxAge {
		return e.secret, e.err
	}
	s, err := d.read(secret)
	d.cache[secret] = &entry{read: now, secret: s, err: err}
	return s, err
}

// read reads a Secret's files.
func (d *Dir) read(secret string) (Secret, error) {
	dir := filepath.Join(d.root, secret)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Secret{}, &MissingError{Secret: secret}
	}
	if err != nil {
		return Secret{}, fmt.Errorf("reading the Secret %q in the credentials directory (%s): %w", secret, Flag, pathError(err))
	}
	s := Secret{Name: secret, values: map[string]string{}}
	for _, e := range entries {
		key := e.Name()
		if strings.HasPrefix(key, ".") {
			continue // ..data and the timestamped directories of a mounted Secret
		}
		if len(s.values) == MaxKeys {
			return Secret{}, fmt.Errorf("the Secret %q has more than %d keys", secret, MaxKeys)
		}
		v, ok, err := readValue(filepath.Join(dir, key))
		switch {
		case err != nil:
			return Secret{}, fmt.Errorf("reading %s/%s in the credentials directory (%s): %w", secret, key, Flag, err)
		case ok:
			s.values[key] = v
		}
	}
	return s, nil
}

// readValue reads one key's file; ok is false for what is not a regular
// file once links are followed (a directory).
func readValue(path string) (string, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, pathError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, pathError(err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxValueBytes+1))
	if err != nil {
		return "", false, pathError(err)
	}
	if len(b) > MaxValueBytes {
		return "", false, fmt.Errorf("longer than the %d bytes a credential may have", MaxValueBytes)
	}
	return strings.TrimRight(string(b), "\r\n"), true, nil
}

// pathError is err without the path it names, which the caller names
// relative to the directory.
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// clip keeps a quoted name in a message short.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
