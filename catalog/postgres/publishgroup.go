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

// PublishGroup implements catalog.Catalog: Publish for many project-streams in one
// transaction. It creates their publications rows that are missing, locks them FOR
// UPDATE in catalog.SortLogs order (waiting, as Publish does, for another replica's
// publisher; the common order rules out deadlocks between rounds), reads their
// checkpoints under the locks, runs fn, and raises the published sizes of the streams
// fn published with one statement before the commit.
func (db *DB) PublishGroup(ctx context.Context, logs []catalog.LogID, fn catalog.PublishGroupFunc) ([]catalog.Published, error) {
	if err := catalog.CheckGroup(logs); err != nil {
		return nil, err
	}
	_, projects, streams := sortedLogs(logs)
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: publish group: begin: %w", err)
	}
	defer func() {
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			db.log.Warn("postgres: publish group rollback", slog.Any("err", err))
		}
	}()
	if _, err := tx.Exec(ctx, `INSERT INTO publications(project_id, stream, published_size, updated_at)
		SELECT u.p, u.s, 0, $3 FROM unnest($1::text[], $2::text[]) AS u(p, s) ON CONFLICT DO NOTHING`,
		projects, streams, db.stamp(time.Time{})); err != nil {
		return nil, fmt.Errorf("postgres: publish group: create publications: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM publications WHERE (project_id, stream) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		ORDER BY project_id, stream FOR UPDATE`, projects, streams); err != nil {
		return nil, fmt.Errorf("postgres: publish group: lock: %w", err)
	}
	// Read committed: this sees the latest committed seals, and the published sizes
	// as locked.
	rows, err := tx.Query(ctx, checkpointSelect+`WHERE (c.project_id, c.stream) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
		projects, streams)
	got, err := collect(rows, err, scanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("postgres: publish group: checkpoints: %w", err)
	}
	byLog := make(map[catalog.LogID]catalog.Checkpoint, len(got))
	for _, cp := range got {
		byLog[cp.Log] = cp
	}
	cps := make([]catalog.Checkpoint, len(logs))
	found := make([]bool, len(logs))
	for i, log := range logs {
		cps[i], found[i] = byLog[log]
		cps[i].Log = log
	}
	out := catalog.PublishOutcomes(cps, found, fn(ctx, cps))
	var ps, ss []string
	var sizes []int64
	for i, p := range out {
		if p.Err == nil && cps[i].PublishedSize < cps[i].Size {
			ps, ss = append(ps, p.Checkpoint.Log.ProjectID), append(ss, string(p.Checkpoint.Log.Stream))
			sizes = append(sizes, int64(p.Checkpoint.Size))
		}
	}
	if len(sizes) == 0 {
		return out, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE publications p SET published_size = u.n, updated_at = $4
		FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(p, s, n)
		WHERE p.project_id = u.p AND p.stream = u.s AND p.published_size < u.n`,
		ps, ss, sizes, db.stamp(time.Time{})); err != nil {
		return nil, fmt.Errorf("postgres: publish group: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("postgres: publish group: commit: %w", err)
	}
	return out, nil
}
