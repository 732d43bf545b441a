package credentials

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// write lays out files under root: "datadog/api-key" → value.
func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		path := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRead: a Secret is its subdirectory's files, trailing line breaks
// dropped; a missing Secret or key is an error naming the file, never a
// value.
func TestRead(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"datadog/api-key": "api-s3cr3t\n",
		"datadog/app-key": "app-s3cr3t",
		"datadog/address": "",
		"other/app-key":   "x",
	})
	d, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Read("datadog")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Get("api-key"); !ok || v != "api-s3cr3t" {
		t.Errorf("api-key = %q, %v", v, ok)
	}
	if v, ok := s.Get("address"); !ok || v != "" {
		t.Errorf("address = %q, %v; want empty and present", v, ok)
	}
	if err := s.Require("api-key", "app-key"); err != nil {
		t.Errorf("Require: %v", err)
	}
	err = s.Require("api-key", "address")
	var missing *MissingError
	if !errors.As(err, &missing) || missing.Key != "address" || !strings.Contains(err.Error(), "datadog/address") {
		t.Errorf("Require(address) = %v; want the missing key named", err)
	}
	o, _ := d.Read("other")
	err = o.Require("api-key")
	if err == nil || !strings.Contains(err.Error(), "other/api-key") {
		t.Errorf("Require on other = %v", err)
	}
	_, err = d.Read("newrelic")
	if !errors.As(err, &missing) || missing.Key != "" || !strings.Contains(err.Error(), `"newrelic"`) || !strings.Contains(err.Error(), Flag) {
		t.Errorf("Read(newrelic) = %v; want the missing Secret named with the flag", err)
	}
	for _, e := range []error{err, s.Require("nope")} {
		if strings.Contains(e.Error(), "s3cr3t") || strings.Contains(e.Error(), root) {
			t.Errorf("%v shows a value or the directory", e)
		}
	}
}

// TestName: a template names the Secret, which must not leave the
// directory.
func TestName(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Dir(root), map[string]string{"outside/api-key": "x"})
	d, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "..", "../outside", "a/b", ".hidden", "Datadog", "a b", strings.Repeat("a", 254), "/etc"} {
		if _, err := d.Read(bad); err == nil || errors.As(err, new(*MissingError)) {
			t.Errorf("Read(%q) = %v; want the name refused", bad, err)
		}
	}
	for _, good := range []string{"datadog", "dd-prod", "team.a", "x"} {
		if why := ValidName(good); why != "" {
			t.Errorf("ValidName(%q) = %q", good, why)
		}
	}
}

// TestRotation: a Secret is read again once it is MaxAge old, so that a
// rotated key applies without a restart; a Secret that appears later is
// found then.
func TestRotation(t *testing.T) {
	root := t.TempDir()
	now := time.Unix(1000, 0)
	d, err := New(root, Options{MaxAge: 10 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read("datadog"); err == nil {
		t.Fatal("a missing Secret was read")
	}
	write(t, root, map[string]string{"datadog/api-key": "one"})
	if _, err := d.Read("datadog"); err == nil {
		t.Error("read again before MaxAge")
	}
	now = now.Add(10 * time.Second)
	s, err := d.Read("datadog")
	if v, _ := s.Get("api-key"); err != nil || v != "one" {
		t.Fatalf("after MaxAge: %q, %v", v, err)
	}
	write(t, root, map[string]string{"datadog/api-key": "two"})
	now = now.Add(5 * time.Second)
	if s, _ := d.Read("datadog"); must(s.Get("api-key")) != "one" {
		t.Error("read again before MaxAge")
	}
	now = now.Add(5 * time.Second)
	if s, _ := d.Read("datadog"); must(s.Get("api-key")) != "two" {
		t.Error("the rotated key is not read")
	}
}

func must(v string, _ bool) string { return v }

// TestMountedSecret: a Secret as kubelet mounts it, its keys links into a
// timestamped directory through ..data, is read through the links; the
// links and directories starting with "." are not keys.
func TestMountedSecret(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"datadog/..2026_01_01_00_00_00.1/api-key": "k", "datadog/..2026_01_01_00_00_00.1/app-key": "a"})
	dir := filepath.Join(root, "datadog")
	if err := os.Symlink("..2026_01_01_00_00_00.1", filepath.Join(dir, "..data")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, k := range []string{"api-key", "app-key"} {
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := New(root, Options{})
	s, err := d.Read("datadog")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Require("api-key", "app-key"); err != nil || len(s.values) != 2 {
		t.Errorf("Require: %v; keys %d", err, len(s.values))
	}
}

// TestBounds: a key's file and a Secret's keys are bounded; the nil Dir
// reads nothing; New refuses what is not a directory.
func TestBounds(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"big/api-key": strings.Repeat("x", MaxValueBytes+1)})
	d, _ := New(root, Options{})
	if _, err := d.Read("big"); err == nil || !strings.Contains(err.Error(), "big/api-key") || strings.Contains(err.Error(), "xxxx") {
		t.Errorf("Read(big) = %v", err)
	}
	many := map[string]string{}
	for i := 0; i <= MaxKeys; i++ {
		many["many/k"+strings.Repeat("a", i)] = "v"
	}
	write(t, root, many)
	if _, err := d.Read("many"); err == nil {
		t.Error("a Secret of too many keys was read")
	}
	var none *Dir
	if _, err := none.Read("datadog"); !errors.Is(err, ErrNoDir) {
		t.Errorf("nil Dir: %v", err)
	}
	if _, err := New(filepath.Join(root, "big", "api-key"), Options{}); err == nil {
		t.Error("New accepted a file")
	}
	if _, err := New(filepath.Join(root, "nope"), Options{}); err == nil {
		t.Error("New accepted a missing directory")
	}
}
