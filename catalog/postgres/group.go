package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

// SealGroup is the group commit (catalog.Catalog): one transaction for the batches of
// several project-streams. It locks their checkpoint rows with FOR UPDATE SKIP LOCKED,
// in catalog.SortLogs order: a row another replica holds is skipped (that stream waits
// for the next group) rather than waited for, so replicas never wait on each other
// here and cannot deadlock. Rows of streams never sealed are created first, in their
// own statement, so they can be locked like the others.
//
// What a crash leaves is what Seal's leaves, for every stream of the group at once:
// before COMMIT nothing, after it every batch.
func (db *DB) SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error) {
	if err := catalog.CheckGroup(logs); err != nil {
		return nil, err
	}
	if now := db.now(); true {
		if err := db.EnsurePartitions(ctx, now, now.AddDate(0, 1, 0)); err != nil {
			return nil, fmt.Errorf("postgres: seal group: %w", err)
		}
	}
	order := slices.Clone(logs)
	catalog.SortLogs(order)
	projects, streams := make([]string, len(order)), make([]string, len(order))
	for i, l := range order {
		projects[i], streams[i] = l.ProjectID, string(l.Stream)
	}
	// An existing row is left alone (no write, no lock).
	if _, err := db.pool.Exec(ctx, `INSERT INTO checkpoints(project_id, stream, size, root, compact_range, created_at, updated_at)
		SELECT u.p, u.s, 0, NULL, '', $3, $3 FROM unnest($1::text[], $2::text[]) AS u(p, s) ON CONFLICT DO NOTHING`,
		projects, streams, db.stamp(time.Time{})); err != nil {
		return nil, fmt.Errorf("postgres: seal group: create checkpoints: %w", err)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: seal group: begin: %w", err)
	}
	defer func() {
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			db.log.Warn("postgres: seal group rollback", slog.Any("err", err))
		}
	}()
	rows, err := tx.Query(ctx, checkpointSelect+`WHERE (c.project_id, c.stream) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		ORDER BY c.project_id, c.stream FOR UPDATE OF c SKIP LOCKED`, projects, streams)
	got, err := collect(rows, err, scanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("postgres: seal group: lock checkpoints: %w", err)
	}
	byLog := make(map[catalog.LogID]catalog.Checkpoint, len(got))
	for _, cp := range got {
		byLog[cp.Log] = cp
	}
	out := make([]catalog.Sealed, len(logs))
	var (
		cps []catalog.Checkpoint
		at  []int
	)
	for i, log := range logs {
		if cp, ok := byLog[log]; ok {
			out[i] = catalog.Sealed{Locked: true, Checkpoint: cp}
			cps, at = append(cps, cp), append(at, i)
		}
	}
	if len(cps) == 0 {
		return out, nil
	}
	batches, durable, err := catalog.RunGroup(ctx, fn, cps)
	if err != nil {
		return out, err
	}
	now := db.stamp(time.Time{})
	nexts := make([]catalog.Checkpoint, len(cps))
	wrote := false
	for k, b := range batches {
		cp, log := cps[k], logs[at[k]]
		if b == nil || len(b.Events) == 0 {
			nexts[k] = cp
			continue
		}
		if err := catalog.ValidateSeal(cp, b); err != nil {
			return out, fmt.Errorf("postgres: seal %s: %w", log, err)
		}
		for _, e := range b.Events {
			if err := db.ensureMonth(ctx, monthOf(e.ReceivedAt)); err != nil {
				return out, fmt.Errorf("postgres: seal %s: %w", log, err)
			}
		}
		next := cp.After(b, now)
		if err := writeBatch(ctx, tx, log, cp.Size, next, b, now); err != nil {
			return out, fmt.Errorf("postgres: seal %s: %w", log, err)
		}
		nexts[k], wrote = next, true
	}
	if !wrote {
		return out, nil
	}
	for k, b := range batches {
		if b != nil && len(b.Events) > 0 && b.Durable != nil {
			if err := b.Durable(); err != nil {
				return out, fmt.Errorf("postgres: seal %s: payload object: %w", logs[at[k]], err)
			}
		}
	}
	if durable != nil {
		if err := durable(); err != nil {
			return out, fmt.Errorf("postgres: seal group: payload objects: %w", err)
		}
	}
	// The commit point of every batch of the group.
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("postgres: seal group of %d project-streams: commit: %w", len(cps), mapErr(err))
	}
	for k, i := range at {
		out[i].Checkpoint = nexts[k]
	}
	return out, nil
}
