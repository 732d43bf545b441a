package config

import (
	"time"

	"github.com/canaryd/canaryd/internal/store"
)

// Storage says where analyses are kept.
type Storage struct {
	// Store is the store's URL: "memory:" (the default) or a
	// postgres:// (postgresql://) URL, which may hold a password: it is
	// shown and logged through store.RedactURL only.
	Store string
	// StoreSecretKeyFile holds the key that seals the secrets a postgres
	// store keeps (store.ReadKeyFile), and StoreSecretKey is that key;
	// none: analyses with secrets are refused on a postgres store.
	StoreSecretKeyFile string
	StoreSecretKey     Secret
	// StoreLease is how long a replica holds an analysis of a postgres
	// store without renewing its lease (every third of it): how long
	// the analyses of a replica that died wait for another to take them.
	StoreLease time.Duration
}

// DefaultStore is the store when none is set.
const DefaultStore = store.Memory

// DefaultStoreLease is --store-lease when unset, and minStoreLease the
// shortest it may be.
const (
	DefaultStoreLease = store.DefaultLeaseTTL
	minStoreLease     = time.Second
)

// DefaultStoreRetention is --retention when --store is a postgres URL and
// no flag, variable or file sets it: finished analyses cost the store's
// disk there, not the replicas' memory, and their history is worth a month.
const DefaultStoreRetention = 30 * 24 * time.Hour

// storeDefaults applies the defaults that a postgres store changes to the
// settings no source set (given names those some source set).
func (c *Config) storeDefaults(given map[string]bool) {
	if kind, err := store.ParseURL(c.storeURL()); err != nil || kind != store.KindPostgres {
		return
	}
	if !given["retention"] {
		c.Retention = DefaultStoreRetention
	}
}

// storeSettings are the flags of the store.
func storeSettings() []setting {
	return []setting{
		{name: "store", group: groupStore,
			usage: "where analyses are kept: memory: (this replica's memory, lost with it) or a postgres:// URL (PostgreSQL 13 or newer, shared by the replicas; its schema is migrated by canaryd migrate)",
			set: func(c *Config, v string) error {
				// ParseURL's errors never quote the URL.
				if _, err := store.ParseURL(v); err != nil {
					return err
				}
				c.Store = v
				return nil
			},
			get:   func(c *Config) string { return store.RedactURL(c.storeURL()) },
			value: func(c *Config) any { return store.RedactURL(c.storeURL()) }},
		withNone(pathSetting(groupStore, "store-secret-key-file", "file holding the key that seals the secrets a postgres store keeps (argument values, webhook URLs with credentials, posted documents) with AES-256-GCM: 32 bytes as 64 hex digits (openssl rand -hex 32) or base64; give every replica the same file",
			func(c *Config) *string { return &c.StoreSecretKeyFile }), "none: on a postgres store, analyses with secrets are refused"),
		positive(durationSetting(groupStore, "store-lease", "with a postgres store, how long a replica holds an analysis without renewing its lease (it renews every third of it): the analyses of a replica that died are taken over by another after at most this long and a second; every replica's clock must agree to well within it",
			func(c *Config) *time.Duration { return &c.StoreLease })),
	}
}

// storeURL is the store's URL, the default when unset.
func (c *Config) storeURL() string {
	if c.Store == "" {
		return DefaultStore
	}
	return c.Store
}

// validate reads the key file and returns the store's problems.
func (s *Storage) validate() []string {
	var problems []string
	if s.Store == "" {
		s.Store = DefaultStore
	}
	if _, err := store.ParseURL(s.Store); err != nil {
		problems = append(problems, "--store: "+err.Error())
	}
	if s.StoreLease > 0 && s.StoreLease < minStoreLease {
		problems = append(problems, "--store-lease: must be at least "+minStoreLease.String()+" (renewed every third of it), got "+s.StoreLease.String())
	}
	s.StoreSecretKey = ""
	if s.StoreSecretKeyFile != "" {
		if err := readable(s.StoreSecretKeyFile); err != nil {
			problems = append(problems, "--store-secret-key-file: "+err.Error())
		} else if key, err := store.ReadKeyFile(s.StoreSecretKeyFile); err != nil {
			problems = append(problems, "--store-secret-key-file: "+err.Error())
		} else {
			s.StoreSecretKey = Secret(key)
		}
	}
	return problems
}
