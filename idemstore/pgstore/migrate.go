package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationsFS holds the SQL migrations, applied in order by goose.
//
//go:embed migrations/*.sql
var migrationsFS embed.FS

// MigrationTable is goose's version table of this package: its own, so that
// other packages' migrations in the same database never interfere.
const MigrationTable = "idem_goose_db_version"

// migrationLockID is the advisory lock goose holds while migrating, so that
// a gateway and a worker starting together do not migrate twice at once.
const migrationLockID = 0x1de5_7014

// Migrate applies the pending migrations.
func (s *Store) Migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrationsFS, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithTableName(MigrationTable), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", interpretError(err))
	}
	return nil
}
