package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/store"
)

// storeOpenTimeout bounds connecting to a postgres store and migrating its
// schema at start.
const storeOpenTimeout = 2 * time.Minute

// openStore opens the store of --store for serve: a memory store for
// memory: (store.NewMemory, this process' alone: store.Shared says so, and
// the analyses live in this process' memory and end with it), or a
// postgres store, its schema migrated first. With a postgres store,
// every replica answers every request from it. The store is wrapped once,
// here (store.Metered): every call is bounded and counted on reg; and the
// commits of this replica's analyses are grouped (store.Grouped): one
// transaction per store.DefaultCommitInterval at most.
func openStore(ctx context.Context, cfg *config.Config, log *zap.Logger, reg promclient.Registerer) (store.Store, error) {
	kind, err := store.ParseURL(cmpStore(cfg.Store))
	if err != nil {
		return nil, &configError{fmt.Errorf("--store: %w", err)}
	}
	if kind == store.KindMemory {
		return store.NewMemory(store.Options{}), nil
	}
	var key []byte
	if k := cfg.StoreSecretKey.Reveal(); k != "" {
		key = []byte(k)
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	st, err := store.Open(ctx, cfg.Store, store.Options{SecretKey: key, Migrate: true, LeaseTTL: cmp.Or(cfg.StoreLease, config.DefaultStoreLease)})
	if err != nil {
		// The store's errors never quote the URL's password.
		return nil, fmt.Errorf("--store %s: %w", store.RedactURL(cfg.Store), err)
	}
	metered, err := store.Metered(st, store.MeteredOptions{Registerer: reg})
	if err != nil {
		st.Close()
		return nil, err
	}
	log.Info("analyses are kept in the store", zap.String("store", store.RedactURL(cfg.Store)))
	return store.Grouped(metered, store.GroupOptions{}), nil
}

func cmpStore(s string) string {
	if s == "" {
		return store.Memory
	}
	return s
}
