package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

// migrations are the schema's steps, applied in order by tern
// (github.com/jackc/tern/v2/migrate), which records the version reached in
// VersionTable and holds an advisory lock while it migrates, so that
// replicas starting together migrate once. Steps only add: a replica of the
// previous version runs on the next schema, as a rolling upgrade needs.
//
//go:embed migrations/*.sql
var migrations embed.FS

// VersionTable is the table where tern records the schema's version.
const VersionTable = "canaryd_schema_version"

// SchemaVersion is the version of the schema this canaryd needs: the
// number of its migration steps.
var SchemaVersion = func() int32 {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	return int32(len(names))
}()

// ErrSchema: the database's schema is older than this canaryd needs.
var ErrSchema = errors.New("store: the database's schema is out of date: run canaryd migrate --store URL")

// Migrate brings the schema of the database rawURL names up to
// SchemaVersion and says from which version to which.
func Migrate(ctx context.Context, rawURL string) (from, to int32, err error) {
	return MigrateTo(ctx, rawURL, SchemaVersion)
}

// MigrateTo brings the schema to version target, up or down; tests use it
// to build the previous schema.
func MigrateTo(ctx context.Context, rawURL string, target int32) (from, to int32, err error) {
	cfg, err := connConfig(rawURL)
	if err != nil {
		return 0, 0, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, 0, unavailable("migrate", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return 0, 0, migrateError(err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return 0, 0, err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return 0, 0, err
	}
	if from, err = m.GetCurrentVersion(ctx); err != nil {
		return 0, 0, migrateError(err)
	}
	if from > SchemaVersion {
		// A newer canaryd migrated it: its steps only add, so this one
		// runs on it; it has nothing to migrate.
		return from, from, nil
	}
	if err := m.MigrateTo(ctx, target); err != nil {
		return from, 0, migrateError(err)
	}
	to, err = m.GetCurrentVersion(ctx)
	return from, to, migrateError(err)
}

func migrateError(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !serverGone(pgErr) {
		return fmt.Errorf("store: migrating: %w", err)
	}
	return unavailable("migrate", err)
}

// connConfig parses a postgres URL; its error never quotes the URL.
func connConfig(rawURL string) (*pgx.ConnConfig, error) {
	if kind, err := ParseURL(rawURL); err != nil {
		return nil, err
	} else if kind != KindPostgres {
		return nil, errors.New("store: not a postgres:// URL")
	}
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, errors.New("store: the postgres URL does not parse (see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING)")
	}
	return cfg, nil
}
