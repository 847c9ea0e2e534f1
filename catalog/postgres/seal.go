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

// copyThreshold is the batch size from which index rows go in by COPY rather than one
// INSERT ... SELECT FROM unnest(...) statement per table.
const copyThreshold = 200

// Seal takes the project-stream lock (SELECT ... FOR UPDATE on the checkpoint row,
// creating the row if absent), runs fn with the checkpoint read under the lock, and
// commits what fn returns in the same transaction: index rows, the batch row and the
// new checkpoint. COMMIT is the point at which the batch exists.
//
// What a crash leaves: before COMMIT, nothing (PostgreSQL rolls the transaction back
// and the lock goes with the connection), at most an orphan payload object that fn
// wrote; after COMMIT, the whole batch. If the COMMIT itself fails with a broken
// connection the outcome is unknown to the caller; the next seal reads the truth under
// the lock, and recovery materializes whatever was committed.
func (db *DB) Seal(ctx context.Context, log catalog.LogID, fn catalog.SealFunc) (catalog.Checkpoint, error) {
	if err := log.Validate(); err != nil {
		return catalog.Checkpoint{}, err
	}
	// Make sure this month's and next month's event partitions exist before taking a
	// connection for the seal (a cache hit almost always), so that the DDL, which needs
	// a connection of its own, never waits for a pool full of seals.
	if now := db.now(); true {
		if err := db.EnsurePartitions(ctx, now, now.AddDate(0, 1, 0)); err != nil {
			return catalog.Checkpoint{}, fmt.Errorf("postgres: seal %s: %w", log, err)
		}
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return catalog.Checkpoint{}, fmt.Errorf("postgres: seal %s: begin: %w", log, err)
	}
	defer func() {
		// After a successful commit this is a no-op; otherwise it releases the lock.
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			db.log.Warn("postgres: seal rollback", slog.String("log", log.String()), slog.Any("err", err))
		}
	}()

	cp, err := lockCheckpoint(ctx, tx, log)
	if errors.Is(err, pgx.ErrNoRows) {
		now := db.stamp(time.Time{})
		if _, err = tx.Exec(ctx, `INSERT INTO checkpoints(project_id, stream, size, root, compact_range, created_at, updated_at)
			VALUES ($1, $2, 0, NULL, '', $3, $3) ON CONFLICT DO NOTHING`, log.ProjectID, string(log.Stream), now); err == nil {
			cp, err = lockCheckpoint(ctx, tx, log)
		}
	}
	if err != nil {
		return cp, fmt.Errorf("postgres: seal %s: lock checkpoint: %w", log, err)
	}

	b, err := fn(ctx, cp)
	if err != nil {
		return cp, err
	}
	if b == nil || len(b.Events) == 0 {
		return cp, nil
	}
	if err := catalog.ValidateSeal(cp, b); err != nil {
		return cp, fmt.Errorf("postgres: seal %s: %w", log, err)
	}
	for _, e := range b.Events {
		if err := db.ensureMonth(ctx, monthOf(e.ReceivedAt)); err != nil {
			return cp, fmt.Errorf("postgres: seal %s: %w", log, err)
		}
	}
	now := db.stamp(time.Time{})
	next := cp.After(b, now)

	if err := writeBatch(ctx, tx, log, cp.Size, next, b, now); err != nil {
		return cp, fmt.Errorf("postgres: seal %s: %w", log, err)
	}
	if b.Durable != nil {
		if err := b.Durable(); err != nil {
			return cp, fmt.Errorf("postgres: seal %s: payload object: %w", log, err)
		}
	}
	// The commit point.
	if err := tx.Commit(ctx); err != nil {
		return cp, fmt.Errorf("postgres: seal %s at size %d: commit: %w", log, cp.Size, mapErr(err))
	}
	return next, nil
}

func lockCheckpoint(ctx context.Context, tx pgx.Tx, log catalog.LogID) (catalog.Checkpoint, error) {
	return scanCheckpoint(tx.QueryRow(ctx, checkpointSelect+`WHERE c.project_id = $1 AND c.stream = $2 FOR UPDATE OF c`,
		log.ProjectID, string(log.Stream)))
}

// writeBatch writes a seal's rows in the seal's transaction, pipelined in one round
// trip: the checkpoint update, the batch row and, for small batches, the index rows
// (event_ids first, whose primary key rejects a duplicate id); large batches' index
// rows follow by COPY.
func writeBatch(ctx context.Context, tx pgx.Tx, log catalog.LogID, oldSize uint64, next catalog.Checkpoint,
	b *catalog.SealBatch, now time.Time) error {
	batch := &pgx.Batch{}
	// The size condition is redundant under the row lock; it makes the commit's
	// premise explicit and cheap to check.
	batch.Queue(`UPDATE checkpoints SET size = $3, root = $4, compact_range = $5, updated_at = $6
		WHERE project_id = $1 AND stream = $2 AND size = $7`,
		log.ProjectID, string(log.Stream), int64(next.Size), next.Root[:], catalog.JoinHashes(next.Range), now, int64(oldSize))
	obj, off, n := catalog.PayloadColumns(b)
	batch.Queue(`INSERT INTO batches(project_id, stream, first_seq, count, batch_id, created_at, payload_object, payload_offset, payload_length)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, log.ProjectID, string(log.Stream), int64(oldSize+1), len(b.Events), b.BatchID, now, obj, off, n)
	small := len(b.Events) < copyThreshold
	if small {
		queueIndexRows(batch, log, b.Events)
	}
	res := tx.SendBatch(ctx, batch)
	err := func() error {
		tag, err := res.Exec()
		if err != nil {
			return fmt.Errorf("update checkpoint: %w", mapErr(err))
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("%w: checkpoint moved from size %d", catalog.ErrConflict, oldSize)
		}
		if _, err := res.Exec(); err != nil {
			return fmt.Errorf("insert batch: %w", mapErr(err))
		}
		for i := 0; small && i < 2; i++ {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("insert %d index rows: %w", len(b.Events), mapErr(err))
			}
		}
		return nil
	}()
	if cerr := res.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write batch: %w", mapErr(cerr))
	}
	if err != nil || small {
		return err
	}
	return copyIndexRows(ctx, tx, log, b.Events)
}

// queueIndexRows queues one INSERT ... SELECT FROM unnest(...) per table: one
// statement (and one cached plan) whatever the batch size.
func queueIndexRows(batch *pgx.Batch, log catalog.LogID, events []catalog.Event) {
	n := len(events)
	var (
		seqs                       = make([]int64, n)
		ids, actions, statuses     = make([]string, n), make([]string, n), make([]string, n)
		aTypes, aIDs, tTypes, tIDs = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		times                      = make([]time.Time, n)
		payloadHashes, leafHashes  = make([][]byte, n), make([][]byte, n)
	)
	for i := range events {
		e := &events[i]
		seqs[i], ids[i], times[i] = int64(e.Sequence), e.ID, catalog.MS(e.ReceivedAt)
		actions[i], statuses[i] = e.Action, e.Status
		aTypes[i], aIDs[i], tTypes[i], tIDs[i] = e.ActorType, e.ActorID, e.TargetType, e.TargetID
		payloadHashes[i], leafHashes[i] = e.PayloadHash[:], e.LeafHash[:]
	}
	batch.Queue(`INSERT INTO event_ids(project_id, stream, event_id, seq, received_at)
		SELECT $1, $2, u.* FROM unnest($3::text[], $4::bigint[], $5::timestamptz[]) AS u`,
		log.ProjectID, string(log.Stream), ids, seqs, times)
	batch.Queue(`INSERT INTO events(project_id, stream, seq, event_id, received_at, action, status,
		actor_type, actor_id, target_type, target_id, payload_hash, leaf_hash)
		SELECT $1, $2, u.* FROM unnest($3::bigint[], $4::text[], $5::timestamptz[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::bytea[], $13::bytea[]) AS u`,
		log.ProjectID, string(log.Stream), seqs, ids, times, actions, statuses,
		aTypes, aIDs, tTypes, tIDs, payloadHashes, leafHashes)
}

// copyIndexRows writes a large batch's index rows by COPY, event_ids first.
func copyIndexRows(ctx context.Context, tx pgx.Tx, log catalog.LogID, events []catalog.Event) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"event_ids"},
		[]string{"project_id", "stream", "event_id", "seq", "received_at"},
		pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
			e := &events[i]
			return []any{log.ProjectID, string(log.Stream), e.ID, int64(e.Sequence), catalog.MS(e.ReceivedAt)}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d event ids: %w", len(events), mapErr(err))
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"project_id", "stream", "seq", "event_id", "received_at", "action", "status",
			"actor_type", "actor_id", "target_type", "target_id", "payload_hash", "leaf_hash"},
		pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
			e := &events[i]
			return []any{log.ProjectID, string(log.Stream), int64(e.Sequence), e.ID, catalog.MS(e.ReceivedAt),
				e.Action, e.Status, e.ActorType, e.ActorID, e.TargetType, e.TargetID, e.PayloadHash[:], e.LeafHash[:]}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d index rows: %w", len(events), mapErr(err))
	}
	return nil
}

// BatchesCovering returns, in order, the committed batches holding any sequence in
// [first, last], both inclusive: BatchesCovering(log, s, s) is the batch of sequence s.
func (db *DB) BatchesCovering(ctx context.Context, log catalog.LogID, first, last uint64) ([]catalog.Batch, error) {
	if first > last {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT first_seq, count, batch_id, created_at, payload_object, payload_offset, payload_length FROM batches
		WHERE project_id = $1 AND stream = $2 AND first_seq <= $4 AND first_seq >= coalesce(
			(SELECT max(first_seq) FROM batches WHERE project_id = $1 AND stream = $2 AND first_seq <= $3), $3)
		ORDER BY first_seq`, log.ProjectID, string(log.Stream), int64(min(first, 1<<63-1)), int64(min(last, 1<<63-1)))
	bs, err := collect(rows, err, func(row scanner) (catalog.Batch, error) {
		var (
			first int64
			count int32
		)
		var (
			obj      *string
			off, siz *int64
		)
		b := catalog.Batch{Log: log}
		err := row.Scan(&first, &count, &b.BatchID, &b.CreatedAt, &obj, &off, &siz)
		b.First, b.Count, b.CreatedAt = uint64(first), uint64(count), b.CreatedAt.UTC()
		b.SetPayloadColumns(obj, off, siz)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: batches of %s [%d, %d]: %w", log, first, last, err)
	}
	out := bs[:0]
	for _, b := range bs {
		if b.End() > first {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
