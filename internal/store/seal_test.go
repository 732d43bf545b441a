package store_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/store"
)

// A key file holds 32 bytes as hex, base64 or themselves; anything else is
// refused without quoting it.
func TestReadKeyFile(t *testing.T) {
	key := bytes.Repeat([]byte{0xa5}, store.KeySize)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"hex":       hex.EncodeToString(key) + "\n",
		"base64":    base64.StdEncoding.EncodeToString(key) + "\n",
		"base64url": base64.RawURLEncoding.EncodeToString(key),
		"raw":       string(key),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := store.ReadKeyFile(path)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("%s: %x, %v", name, got, err)
		}
	}
	for name, content := range map[string]string{
		"short":    "c2VjcmV0LXZhbHVl",
		"too long": strings.Repeat("ab", 5000),
		"empty":    "",
	} {
		path := filepath.Join(dir, "bad")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := store.ReadKeyFile(path)
		if err == nil || (content != "" && strings.Contains(err.Error(), content[:8])) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := store.ReadKeyFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was read")
	}
}
