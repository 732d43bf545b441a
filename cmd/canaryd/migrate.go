package main

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/store"
)

// migrateSynopsis is the first line of migrate's usage.
const migrateSynopsis = "migrate --store URL [--timeout D]\n\n" +
	"Brings the schema of the PostgreSQL store URL names (postgres://…, also read\n" +
	"from CANARYD_STORE) up to this canaryd's version, and says from which version\n" +
	"to which. Replicas starting together, or a migrate beside them, migrate once:\n" +
	"the migration holds a lock. The URL's password is never printed.\n" +
	"Exit code: 0 migrated (or already up to date), 3 the store failed, 64 bad flags."

// defaultMigrateTimeout bounds a migration, connecting included.
const defaultMigrateTimeout = 2 * time.Minute

// migrateCommand migrates a postgres store's schema.
func (e *environment) migrateCommand(args []string) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	storeEnv := config.EnvName("store")
	// $CANARYD_STORE is read after the flags, not as the flag's default:
	// a default is printed in the usage, and the URL holds a password.
	url := fs.String("store", "", "the store: a postgres:// or postgresql:// URL (default $"+storeEnv+")")
	timeout := fs.Duration("timeout", defaultMigrateTimeout, "how long connecting and migrating may take")
	if code, ok := e.parseFlags(fs, migrateSynopsis, args); !ok {
		return code
	}
	if *url == "" {
		*url = e.getenv(storeEnv)
	}
	if *url == "" {
		e.printf(e.stderr, "canaryd migrate: --store is required: a postgres:// URL (or set %s)\n", storeEnv)
		return exitUsage
	}
	kind, err := store.ParseURL(*url)
	if err != nil {
		e.printf(e.stderr, "canaryd migrate: --store: %v\n", err)
		return exitUsage
	}
	if kind != store.KindPostgres {
		e.printf(e.stderr, "canaryd migrate: --store: %s has no schema to migrate; migrate is for a postgres:// store\n", store.Memory)
		return exitUsage
	}
	if *timeout <= 0 {
		e.printf(e.stderr, "canaryd migrate: --timeout: must be positive, got %v\n", *timeout)
		return exitUsage
	}
	shown := store.RedactURL(*url)
	ctx, cancel := context.WithTimeout(e.ctx, *timeout)
	defer cancel()
	from, to, err := store.Migrate(ctx, *url)
	if code, sig := interruptedExit(e.ctx); sig != nil {
		e.printf(e.stderr, "canaryd migrate: %s: %v\n", shown, sig)
		return code
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			e.printf(e.stderr, "canaryd migrate: %s: not done after --timeout %v: %v\n", shown, *timeout, err)
		} else {
			e.printf(e.stderr, "canaryd migrate: %s: %v\n", shown, err)
		}
		return exitError
	}
	if from == to {
		e.printf(e.stdout, "canaryd migrate: %s: the schema is at version %d, up to date\n", shown, to)
		return 0
	}
	e.printf(e.stdout, "canaryd migrate: %s: the schema was at version %d, is now at version %d\n", shown, from, to)
	return 0
}
