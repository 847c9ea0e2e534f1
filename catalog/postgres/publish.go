package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

// checkpointSelect reads a checkpoint with its published size (0 until the first
// publication).
const checkpointSelect = `SELECT c.project_id, c.stream, c.size, c.root, c.compact_range,
	coalesce(p.published_size, 0), c.created_at, c.updated_at
	FROM checkpoints c LEFT JOIN publications p ON p.project_id = c.project_id AND p.stream = c.stream `

func scanCheckpoint(row scanner) (catalog.Checkpoint, error) {
	var (
		cp        catalog.Checkpoint
		stream    string
		size, pub int64
		root, rng []byte
	)
	if err := row.Scan(&cp.Log.ProjectID, &stream, &size, &root, &rng, &pub, &cp.CreatedAt, &cp.UpdatedAt); err != nil {
		return cp, err
	}
	cp.Log.Stream = catalog.Stream(stream)
	cp.Size, cp.PublishedSize = uint64(size), uint64(pub)
	cp.CreatedAt, cp.UpdatedAt = cp.CreatedAt.UTC(), cp.UpdatedAt.UTC()
	var err error
	if cp.Root, err = catalog.HashFrom(root); err != nil {
		return cp, err
	}
	if cp.Range, err = catalog.SplitHashes(rng); err != nil {
		return cp, err
	}
	return cp, nil
}

// Checkpoint returns the committed checkpoint of log, or catalog.ErrNotFound if the
// project-stream has never been sealed.
func (db *DB) Checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error) {
	cp, err := scanCheckpoint(db.pool.QueryRow(ctx, checkpointSelect+`WHERE c.project_id = $1 AND c.stream = $2`,
		log.ProjectID, string(log.Stream)))
	if err != nil {
		return cp, fmt.Errorf("postgres: checkpoint %s: %w", log, mapErr(err))
	}
	return cp, nil
}

// raisePublished sets the published size of log to size unless it is already larger.
const raisePublished = `INSERT INTO publications(project_id, stream, published_size, updated_at) VALUES ($1, $2, $3, $4)
	ON CONFLICT (project_id, stream) DO UPDATE SET published_size = excluded.published_size, updated_at = excluded.updated_at
	WHERE publications.published_size < excluded.published_size`

// AdvancePublished raises published_size to size if it is lower; it never lowers it, so
// racing publishers are harmless. It takes neither the seal nor the publish lock. size
// beyond the committed size is catalog.ErrConflict. It returns the checkpoint after.
func (db *DB) AdvancePublished(ctx context.Context, log catalog.LogID, size uint64) (catalog.Checkpoint, error) {
	cp, err := db.Checkpoint(ctx, log)
	if err != nil {
		return cp, err
	}
	// Sizes only grow, so a size within the checkpoint read now stays within it.
	if size > cp.Size {
		return cp, fmt.Errorf("%w: publish %s to %d beyond committed size %d", catalog.ErrConflict, log, size, cp.Size)
	}
	if _, err := db.pool.Exec(ctx, raisePublished, log.ProjectID, string(log.Stream), int64(size), db.stamp(time.Time{})); err != nil {
		return cp, fmt.Errorf("postgres: advance published %s to %d: %w", log, size, err)
	}
	return db.Checkpoint(ctx, log)
}

// Publish runs fn under the publish lock of log, a row lock on its publications row
// that serializes publishers across replicas and never waits for a seal, with the
// checkpoint read under that lock. If fn returns nil, published_size becomes cp.Size
// in the same transaction, before the lock is released; if it fails, nothing changes
// and its error is returned. It returns the checkpoint as left after, and
// catalog.ErrNotFound for a project-stream never sealed.
func (db *DB) Publish(ctx context.Context, log catalog.LogID, fn func(ctx context.Context, cp catalog.Checkpoint) error) (catalog.Checkpoint, error) {
	if err := log.Validate(); err != nil {
		return catalog.Checkpoint{}, err
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return catalog.Checkpoint{}, fmt.Errorf("postgres: publish %s: begin: %w", log, err)
	}
	defer func() {
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			db.log.Warn("postgres: publish rollback", slog.String("log", log.String()), slog.Any("err", err))
		}
	}()
	lock := func() error {
		var pub int64
		return tx.QueryRow(ctx, `SELECT published_size FROM publications WHERE project_id = $1 AND stream = $2 FOR UPDATE`,
			log.ProjectID, string(log.Stream)).Scan(&pub)
	}
	err = lock()
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err = tx.Exec(ctx, `INSERT INTO publications(project_id, stream, published_size, updated_at) VALUES ($1, $2, 0, $3)
			ON CONFLICT DO NOTHING`, log.ProjectID, string(log.Stream), db.stamp(time.Time{})); err == nil {
			err = lock()
		}
	}
	if err != nil {
		return catalog.Checkpoint{}, fmt.Errorf("postgres: publish %s: lock: %w", log, err)
	}
	// Read committed: this sees the latest committed seal, and the published size as
	// locked.
	cp, err := scanCheckpoint(tx.QueryRow(ctx, checkpointSelect+`WHERE c.project_id = $1 AND c.stream = $2`,
		log.ProjectID, string(log.Stream)))
	if err != nil {
		return cp, fmt.Errorf("postgres: publish %s: %w", log, mapErr(err))
	}
	if err := fn(ctx, cp); err != nil {
		return cp, err
	}
	if cp.PublishedSize >= cp.Size {
		return cp, nil
	}
	if _, err := tx.Exec(ctx, raisePublished, log.ProjectID, string(log.Stream), int64(cp.Size), db.stamp(time.Time{})); err != nil {
		return cp, fmt.Errorf("postgres: publish %s: %w", log, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return cp, fmt.Errorf("postgres: publish %s: commit: %w", log, err)
	}
	cp.PublishedSize = cp.Size
	return cp, nil
}

// ListUnpublished returns every checkpoint whose published size is behind its size, for
// recovery at start-up.
func (db *DB) ListUnpublished(ctx context.Context) ([]catalog.Checkpoint, error) {
	rows, err := db.pool.Query(ctx, checkpointSelect+`WHERE coalesce(p.published_size, 0) < c.size ORDER BY c.project_id, c.stream`)
	out, err := collect(rows, err, scanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("postgres: list unpublished: %w", err)
	}
	return out, nil
}
