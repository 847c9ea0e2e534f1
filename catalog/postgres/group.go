package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
// several project-streams. Rows of streams never sealed are created first, in their
// own statement, so they can be locked like the others.
//
// A tick starts from the checkpoints this handle last committed or read under the
// lock (sealCache): fn runs at once, and BEGIN, the checkpoint UPDATE (conditional on
// those sizes, taking each row's lock with SKIP LOCKED) and every stream's rows go in
// one pipeline, sent before waiting for the payload objects so the two overlap; then
// COMMIT. Two round trips whatever the number of streams, the first one hidden behind
// the payload write (large groups add two COPYs). Only streams the cache does not
// know are read first: BEGIN and a SELECT … FOR UPDATE SKIP LOCKED in one more
// pipeline, in catalog.SortLogs order; a row another replica holds is skipped (that
// stream waits for the next group) rather than waited for, so replicas never wait on
// each other here and cannot deadlock.
//
// If the UPDATE did not move every checkpoint (another replica sealed one of the
// streams since, or holds its lock), the transaction fails before any row is written
// (sealtrail_expect_rows, migration 0013): SealGroup forgets the group's cached
// checkpoints, rolls back and runs the whole group again from checkpoints read under
// the lock, calling fn a second time; only that run's batches can commit.
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
	order, _, _ := sortedLogs(logs)
	if err := db.createCheckpoints(ctx, order); err != nil {
		return nil, err
	}
	guessed := make(map[catalog.LogID]uint64, len(logs))
	out, err := db.sealGroup(ctx, logs, order, fn, guessed)
	if errors.Is(err, errMoved) {
		db.log.Debug("postgres: seal group: a cached checkpoint was stale; sealing again under the locks", slog.Any("err", err))
		db.seals.drop(logs...)
		out, err = db.sealGroup(ctx, logs, order, fn, guessed)
	}
	return out, err
}

// sealGroup is one attempt of SealGroup. With guessed empty it starts from the cached
// checkpoints (those the cache lacks are read under the lock) and records the sizes it
// guessed in guessed; else it reads every checkpoint under the lock, and the streams
// whose guess was wrong (moved, or locked elsewhere) go without a guess for a while
// (sealCache.chill), so that two replicas writing one stream do not build every
// tick of it twice.
func (db *DB) sealGroup(ctx context.Context, logs, order []catalog.LogID, fn catalog.SealGroupFunc, guessed map[catalog.LogID]uint64) ([]catalog.Sealed, error) {
	byLog := make(map[catalog.LogID]catalog.Checkpoint, len(logs))
	guess := len(guessed) == 0
	var lock []catalog.LogID
	for _, l := range order {
		if guess {
			if cp, ok := db.seals.get(l); ok {
				byLog[l], guessed[l] = cp, cp.Size
				continue
			}
		}
		lock = append(lock, l)
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: seal group: acquire: %w", err)
	}
	open := false // a transaction may be open on conn
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
	if len(lock) > 0 {
		open = true
		got, err := lockCheckpoints(ctx, conn, lock)
		if err != nil {
			return nil, err
		}
		for _, cp := range got {
			byLog[cp.Log] = cp
			db.seals.put(cp)
		}
		if !guess {
			var wrong []catalog.LogID
			for l, size := range guessed {
				if cp, ok := byLog[l]; !ok || cp.Size != size {
					wrong = append(wrong, l)
				}
			}
			db.seals.chill(wrong...)
		}
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
	begin := !open
	open = true
	if err := writeGroup(ctx, conn, writes, now, durable, begin); err != nil {
		return out, fmt.Errorf("postgres: %s: %w", name(), err)
	}
	// The commit point of every batch of the group.
	tag, err := conn.Exec(ctx, `COMMIT`)
	open = false
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	if err != nil {
		// The outcome may be unknown: the next seal reads the truth under the lock.
		for _, w := range writes {
			db.seals.drop(w.log)
		}
		return out, fmt.Errorf("postgres: %s: commit: %w", name(), mapErr(err))
	}
	for _, w := range writes {
		out[w.at].Checkpoint = w.next
		db.seals.put(w.next)
	}
	return out, nil
}

// lockCheckpoints opens the transaction on conn and locks and reads the checkpoint
// rows of logs (in catalog.SortLogs order) that no one else holds, in one round trip:
// BEGIN inside the pipeline turns its implicit transaction into an explicit one, which
// stays open after the pipeline's Sync.
func lockCheckpoints(ctx context.Context, conn *pgxpool.Conn, logs []catalog.LogID) ([]catalog.Checkpoint, error) {
	_, projects, streams := sortedLogs(logs)
	lock := &pgx.Batch{}
	lock.Queue(`BEGIN`)
	lock.Queue(checkpointSelect+`WHERE (c.project_id, c.stream) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		ORDER BY c.project_id, c.stream FOR UPDATE OF c SKIP LOCKED`, projects, streams)
	res := conn.SendBatch(ctx, lock)
	var got []catalog.Checkpoint
	_, err := res.Exec()
	if err == nil {
		rows, qerr := res.Query()
		got, err = collect(rows, qerr, scanCheckpoint)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: seal group: lock checkpoints: %w", err)
	}
	return got, nil
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
