package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

// sortedLogs returns logs in catalog.SortLogs order (the order every group takes its
// row locks in) and their project ids and streams, as arrays for unnest.
func sortedLogs(logs []catalog.LogID) (order []catalog.LogID, projects, streams []string) {
	order = slices.Clone(logs)
	catalog.SortLogs(order)
	projects, streams = make([]string, len(order)), make([]string, len(order))
	for i, l := range order {
		projects[i], streams[i] = l.ProjectID, string(l.Stream)
	}
	return order, projects, streams
}

// SealGroup is the group commit (catalog.Catalog): one transaction for the batches of
// several project-streams. It locks their checkpoint rows with FOR UPDATE SKIP LOCKED,
// in catalog.SortLogs order: a row another replica holds is skipped (that stream waits
// for the next group) rather than waited for, so replicas never wait on each other
// here and cannot deadlock. Rows of streams never sealed are created first, in their
// own statement, so they can be locked like the others.
//
// Three round trips whatever the number of streams: BEGIN with the locking SELECT
// (one pipeline), every stream's rows (writeGroup, one pipeline, overlapping the wait
// for the payload objects), COMMIT. Large groups add two COPYs.
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
	order, projects, streams := sortedLogs(logs)
	if err := db.createCheckpoints(ctx, order); err != nil {
		return nil, err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: seal group: acquire: %w", err)
	}
	open := true
	defer func() {
		// After a successful commit there is nothing to undo; otherwise this releases
		// the locks. A connection left in a transaction is closed by Release anyway.
		if open {
			if _, err := conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`); err != nil {
				db.log.Warn("postgres: seal group rollback", slog.Any("err", err))
			}
		}
		conn.Release()
	}()
	// BEGIN inside the pipeline turns its implicit transaction into an explicit one,
	// which stays open after the pipeline's Sync: one round trip for both.
	lock := &pgx.Batch{}
	lock.Queue(`BEGIN`)
	lock.Queue(checkpointSelect+`WHERE (c.project_id, c.stream) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		ORDER BY c.project_id, c.stream FOR UPDATE OF c SKIP LOCKED`, projects, streams)
	res := conn.SendBatch(ctx, lock)
	var got []catalog.Checkpoint
	if _, err = res.Exec(); err == nil {
		rows, qerr := res.Query()
		got, err = collect(rows, qerr, scanCheckpoint)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
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
	var writes []groupWrite
	for k, b := range batches {
		cp, log := cps[k], logs[at[k]]
		if b == nil || len(b.Events) == 0 {
			continue
		}
		if err := catalog.ValidateSeal(cp, b); err != nil {
			return out, fmt.Errorf("postgres: seal %s: %w", log, err)
		}
		if err := db.ensureMonths(ctx, b.Events); err != nil {
			return out, fmt.Errorf("postgres: seal %s: %w", log, err)
		}
		writes = append(writes, groupWrite{at: at[k], log: log, old: cp.Size, next: cp.After(b, now), b: b})
	}
	if len(writes) == 0 {
		return out, nil
	}
	name := func() string {
		if len(writes) == 1 {
			return fmt.Sprintf("seal %s at size %d", writes[0].log, writes[0].old)
		}
		return fmt.Sprintf("seal group of %d project-streams", len(writes))
	}
	if err := writeGroup(ctx, conn, writes, now, durable); err != nil {
		return out, fmt.Errorf("postgres: %s: %w", name(), err)
	}
	// The commit point of every batch of the group.
	tag, err := conn.Exec(ctx, `COMMIT`)
	open = false
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	if err != nil {
		return out, fmt.Errorf("postgres: %s: commit: %w", name(), mapErr(err))
	}
	for _, w := range writes {
		out[w.at].Checkpoint = w.next
	}
	return out, nil
}

// createCheckpoints creates the checkpoint rows of the streams of logs this DB has not
// seen yet (the statement leaves an existing row alone: no write, no lock). Checkpoint
// rows are never deleted, so a row seen once stays; the cache spares the statement's
// round trip in every other group.
func (db *DB) createCheckpoints(ctx context.Context, logs []catalog.LogID) error {
	var projects, streams []string
	for _, l := range logs {
		if _, ok := db.checkpoints.Load(l); !ok {
			projects, streams = append(projects, l.ProjectID), append(streams, string(l.Stream))
		}
	}
	if len(projects) == 0 {
		return nil
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO checkpoints(project_id, stream, size, root, compact_range, created_at, updated_at)
		SELECT u.p, u.s, 0, NULL, '', $3, $3 FROM unnest($1::text[], $2::text[]) AS u(p, s) ON CONFLICT DO NOTHING`,
		projects, streams, db.stamp(time.Time{})); err != nil {
		return fmt.Errorf("postgres: seal group: create checkpoints: %w", err)
	}
	for i := range projects {
		db.checkpoints.Store(catalog.LogID{ProjectID: projects[i], Stream: catalog.Stream(streams[i])}, struct{}{})
	}
	return nil
}

// ensureMonths makes sure the event partitions of the events' months exist (one cache
// look-up per distinct month, not per event).
func (db *DB) ensureMonths(ctx context.Context, events []catalog.Event) error {
	var last time.Time
	for i := range events {
		if m := monthOf(events[i].ReceivedAt); !m.Equal(last) {
			if err := db.ensureMonth(ctx, m); err != nil {
				return err
			}
			last = m
		}
	}
	return nil
}
