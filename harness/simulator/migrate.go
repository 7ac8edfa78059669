package simulator

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// MigrationTable is the goose version table of the simulator's schema, named
// apart from goose's default so the simulator can share a database.
const MigrationTable = "sim_goose_db_version"

// migrationLockID is the advisory lock that serializes the migrations of
// simulator processes starting together; it differs from goose's default so
// it never waits on other schemas' migrations.
const migrationLockID int64 = 0x73696d5f676f6f // "sim_goo"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate brings the simulator's schema up to date.
func migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrations fs: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migration locker: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(MigrationTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("migration provider: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	for _, r := range results {
		logger.InfoContext(ctx, "simulator migration applied", "version", r.Source.Version, "duration", r.Duration)
	}
	return nil
}
