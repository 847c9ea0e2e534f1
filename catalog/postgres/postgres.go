// Package postgres is the production catalog driver: PostgreSQL through pgx v5 and a
// pgxpool. Several sealtraild replicas may share one database: a seal locks its
// project-stream's checkpoint row (SELECT ... FOR UPDATE; in a group commit from a
// cached checkpoint, the checkpoint UPDATE itself, conditional on the size the batch
// was built on) until it commits, so batches of one project-stream are serialized
// across processes, and batches of different project-streams run in parallel.
//
// The event index is range-partitioned by receive time, one partition per UTC month;
// partitions are created ahead at Open and on demand before a seal needs them. The
// schema is applied from embedded migrations under an advisory lock at Open.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sealtrail/sealtrail/catalog"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is an open PostgreSQL catalog. Its methods may be called concurrently.
type DB struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	now  func() time.Time
	// months caches the event partitions known to exist (key: first day of the month).
	months sync.Map
	// checkpoints caches the checkpoint rows known to exist (key: catalog.LogID).
	checkpoints sync.Map
	// seals caches the checkpoints this handle's seals committed (sealcache.go).
	seals sealCache
}

var _ catalog.Catalog = (*DB)(nil)

// Options tune Open; the zero value is the production setting.
type Options struct {
	// MaxConns bounds the pool (default: pool_max_conns from the DSN, else 32). A seal
	// holds one connection while its SealFunc runs, and a SealFunc that reads the
	// catalog needs a second one: keep the number of seals in flight below MaxConns,
	// or seals wait for connections until their context ends.
	MaxConns int32
	// Logger receives operational messages (default slog.Default()).
	Logger *slog.Logger
}

// migrationLock is the advisory lock key serializing migrations across replicas.
const migrationLock = 0x5ea17a11

// Open connects to the database named by dsn (a libpq URL or key=value string),
// applies pending migrations and creates the event partitions around now.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	return open(ctx, dsn, opts, nil)
}

// open is Open; tune, if not nil, adjusts the pool's configuration first (tests).
func open(ctx context.Context, dsn string, opts Options, tune func(*pgxpool.Config)) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DSN: %w", err)
	}
	if tune != nil {
		tune(cfg)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(dsn, "pool_max_conns"):
		cfg.MaxConns = 32
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db := &DB{pool: pool, log: opts.Logger, now: time.Now}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	now := db.now().UTC()
	if err := db.EnsurePartitions(ctx, now.AddDate(0, -1, 0), now.AddDate(0, 2, 0)); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the pool; it waits for acquired connections to be released.
func (db *DB) Close() { db.pool.Close() }

func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock); err != nil {
			db.log.Warn("postgres: releasing the migration lock", slog.Any("err", err))
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("postgres: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		body, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("postgres: read migration %s: %w", name, err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations(version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", version, err)
		}
	}
	return nil
}

// monthOf returns the first instant of t's UTC month.
func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// EnsurePartitions creates the monthly event partitions covering [from, to] that do not
// exist yet. Open covers last month to two months ahead; seals call it for the months
// of their events; an operator job may call it to create partitions further ahead.
func (db *DB) EnsurePartitions(ctx context.Context, from, to time.Time) error {
	for m := monthOf(from); !m.After(to); m = m.AddDate(0, 1, 0) {
		if err := db.ensureMonth(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) ensureMonth(ctx context.Context, m time.Time) error {
	if _, ok := db.months.Load(m); ok {
		return nil
	}
	name := fmt.Sprintf("events_p%04d%02d", m.Year(), int(m.Month()))
	// Creating a partition takes a strong lock on the parent table; the lock timeout
	// keeps a long-running reader from stalling every seal queued behind the DDL. The
	// advisory lock serializes replicas doing the same.
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock+1); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s PARTITION OF events FOR VALUES FROM ('%s') TO ('%s')`,
			pgx.Identifier{name}.Sanitize(), m.Format(time.RFC3339), m.AddDate(0, 1, 0).Format(time.RFC3339)))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: create event partition %s: %w", name, err)
	}
	db.months.Store(m, struct{}{})
	return nil
}

// mapErr turns constraint violations into the catalog's errors.
func mapErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %w", catalog.ErrExists, err)
		case "23503": // foreign_key_violation
			return fmt.Errorf("%w: unknown project: %w", catalog.ErrNotFound, err)
		case "23514": // check_violation
			return fmt.Errorf("%w: %w", catalog.ErrConflict, err)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", catalog.ErrNotFound, err)
	}
	return err
}

// tz returns t for a nullable timestamptz column: nil when zero.
func tz(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// fromTZ reads a nullable timestamptz column.
func fromTZ(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// stamp returns t at millisecond precision, or now when t is zero.
func (db *DB) stamp(t time.Time) time.Time {
	if t.IsZero() {
		t = db.now()
	}
	return catalog.MS(t)
}

type scanner interface{ Scan(...any) error }

// collect scans every row with scan.
func collect[T any](rows pgx.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
