package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	if err := db.ensureMonths(ctx, b.Events); err != nil {
		return cp, fmt.Errorf("postgres: seal %s: %w", log, err)
	}
	now := db.stamp(time.Time{})
	next := cp.After(b, now)
	if err := writeGroup(ctx, tx, []groupWrite{{log: log, old: cp.Size, next: next, b: b}}, now, nil, false); err != nil {
		return cp, fmt.Errorf("postgres: seal %s: %w", log, err)
	}
	// The commit point.
	if err := tx.Commit(ctx); err != nil {
		db.seals.drop(log) // the outcome may be unknown
		return cp, fmt.Errorf("postgres: seal %s at size %d: commit: %w", log, cp.Size, mapErr(err))
	}
	db.seals.put(next)
	return next, nil
}

func lockCheckpoint(ctx context.Context, tx pgx.Tx, log catalog.LogID) (catalog.Checkpoint, error) {
	return scanCheckpoint(tx.QueryRow(ctx, checkpointSelect+`WHERE c.project_id = $1 AND c.stream = $2 FOR UPDATE OF c`,
		log.ProjectID, string(log.Stream)))
}

// groupWrite is one project-stream's part of a seal transaction.
type groupWrite struct {
	at   int // index in SealGroup's logs
	log  catalog.LogID
	old  uint64 // checkpoint size under the lock
	next catalog.Checkpoint
	b    *catalog.SealBatch
}

// rowQueuer is what writeGroup writes through: a pgx.Tx (Seal) or the connection of
// SealGroup's transaction.
type rowQueuer interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
}

// errMoved is writeGroup's error when its checkpoint UPDATE did not move every
// checkpoint of the group: one moved since the size the seal started from, or another
// replica holds its lock (SQLSTATE ST409, raised by sealtrail_expect_rows).
var errMoved = fmt.Errorf("%w: checkpoints moved or locked elsewhere", catalog.ErrConflict)

// writeGroup writes the rows of every stream of a seal transaction in one pipeline,
// after BEGIN if begin: one statement per table for all streams (the checkpoint
// updates, the batch rows and, for small groups, the index rows, event_ids first,
// whose primary key rejects a duplicate id); large groups' index rows follow by COPY.
// The checkpoint UPDATE comes first and fails the transaction unless it moved every
// checkpoint, so nothing queued behind it is written over a checkpoint that moved.
// While the server runs the pipeline it waits for the payload objects (each batch's
// Durable, then durable), so the commit that follows never names an object that is
// not durable.
func writeGroup(ctx context.Context, q rowQueuer, writes []groupWrite, now time.Time, durable func() error, begin bool) error {
	n, total := len(writes), 0
	var (
		projects, streams, batchIDs = make([]string, n), make([]string, n), make([]string, n)
		sizes, olds, firsts         = make([]int64, n), make([]int64, n), make([]int64, n)
		counts                      = make([]int32, n)
		roots, ranges               = make([][]byte, n), make([][]byte, n)
		objects                     = make([]*string, n) // NULL: the batch's own payload object
		offsets, lengths            = make([]*int64, n), make([]*int64, n)
	)
	for i, w := range writes {
		projects[i], streams[i], batchIDs[i] = w.log.ProjectID, string(w.log.Stream), w.b.BatchID
		sizes[i], olds[i], firsts[i] = int64(w.next.Size), int64(w.old), int64(w.old+1)
		counts[i] = int32(len(w.b.Events))
		objects[i], offsets[i], lengths[i] = catalog.PayloadColumns(w.b)
		roots[i], ranges[i] = w.next.Root[:], catalog.JoinHashes(w.next.Range)
		total += len(w.b.Events)
	}
	batch := &pgx.Batch{}
	if begin {
		batch.Queue(`BEGIN`)
	}
	// Each row's lock is taken without waiting (a row another replica holds is not
	// moved, and then the whole UPDATE fails), so two replicas never wait on each
	// other's rows here, whatever the order they meet them in. Under a lock this seal
	// already holds, both conditions are redundant; they make the commit's premise
	// explicit and cheap to check. The UPDATE joins l by primary key (an index scan per
	// row): with l in a semi-join, IN (SELECT … FROM l), the planner scanned all of l
	// for every row, 200 ms for 1,000 streams.
	batch.Queue(`WITH l AS (SELECT c.project_id, c.stream, u.size, u.root, u.rng FROM checkpoints c
			JOIN unnest($2::text[], $3::text[], $4::bigint[], $5::bytea[], $6::bytea[], $7::bigint[]) AS u(p, s, size, root, rng, old)
			ON c.project_id = u.p AND c.stream = u.s AND c.size = u.old
			FOR UPDATE OF c SKIP LOCKED),
		moved AS (UPDATE checkpoints AS c SET size = l.size, root = l.root, compact_range = l.rng, updated_at = $1
			FROM l WHERE c.project_id = l.project_id AND c.stream = l.stream RETURNING 1)
		SELECT sealtrail_expect_rows(count(*), $8) FROM moved`,
		now, projects, streams, sizes, roots, ranges, olds, int64(n))
	batch.Queue(`INSERT INTO batches(project_id, stream, first_seq, count, batch_id, payload_object, payload_offset, payload_length, created_at)
		SELECT u.*, $1 FROM unnest($2::text[], $3::text[], $4::bigint[], $5::int[], $6::text[], $7::text[], $8::bigint[], $9::bigint[]) AS u`,
		now, projects, streams, firsts, counts, batchIDs, objects, offsets, lengths)
	small := total < copyThreshold
	if small {
		queueIndexRows(batch, writes, total)
	}
	res := q.SendBatch(ctx, batch)
	err := waitDurable(writes, durable)
	if err == nil {
		err = func() error {
			if begin {
				if _, err := res.Exec(); err != nil {
					return fmt.Errorf("begin: %w", err)
				}
			}
			if _, err := res.Exec(); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == "ST409" {
					return fmt.Errorf("%w (%s)", errMoved, pe.Message)
				}
				return fmt.Errorf("update checkpoints: %w", mapErr(err))
			}
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("insert batches: %w", mapErr(err))
			}
			for i := 0; small && i < 2; i++ {
				if _, err := res.Exec(); err != nil {
					return fmt.Errorf("insert %d index rows: %w", total, mapErr(err))
				}
			}
			return nil
		}()
	}
	if cerr := res.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write batch: %w", mapErr(cerr))
	}
	if err != nil || small {
		return err
	}
	return copyIndexRows(ctx, q, writes, total)
}

// waitDurable waits for every payload object of the group.
func waitDurable(writes []groupWrite, durable func() error) error {
	for _, w := range writes {
		if w.b.Durable != nil {
			if err := w.b.Durable(); err != nil {
				return fmt.Errorf("payload object of %s: %w", w.log, err)
			}
		}
	}
	if durable != nil {
		if err := durable(); err != nil {
			return fmt.Errorf("payload objects: %w", err)
		}
	}
	return nil
}

// eachEvent calls f for every event of the group, with its stream.
func eachEvent(writes []groupWrite, f func(log catalog.LogID, e *catalog.Event)) {
	for _, w := range writes {
		for i := range w.b.Events {
			f(w.log, &w.b.Events[i])
		}
	}
}

// queueIndexRows queues one INSERT ... SELECT FROM unnest(...) per table for every
// stream's events: one statement (and one cached plan) whatever the group.
func queueIndexRows(batch *pgx.Batch, writes []groupWrite, n int) {
	var (
		projects, streams          = make([]string, 0, n), make([]string, 0, n)
		seqs                       = make([]int64, 0, n)
		ids, actions, statuses     = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		aTypes, aIDs, tTypes, tIDs = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		times                      = make([]time.Time, 0, n)
		payloadHashes, leafHashes  = make([][]byte, 0, n), make([][]byte, 0, n)
	)
	eachEvent(writes, func(log catalog.LogID, e *catalog.Event) {
		projects, streams = append(projects, log.ProjectID), append(streams, string(log.Stream))
		seqs, ids, times = append(seqs, int64(e.Sequence)), append(ids, e.ID), append(times, catalog.MS(e.ReceivedAt))
		actions, statuses = append(actions, e.Action), append(statuses, e.Status)
		aTypes, aIDs = append(aTypes, e.ActorType), append(aIDs, e.ActorID)
		tTypes, tIDs = append(tTypes, e.TargetType), append(tIDs, e.TargetID)
		payloadHashes, leafHashes = append(payloadHashes, e.PayloadHash[:]), append(leafHashes, e.LeafHash[:])
	})
	batch.Queue(`INSERT INTO event_ids(project_id, stream, event_id, seq, received_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[])`,
		projects, streams, ids, seqs, times)
	batch.Queue(`INSERT INTO events(project_id, stream, seq, event_id, received_at, action, status,
		actor_type, actor_id, target_type, target_id, payload_hash, leaf_hash)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::bytea[], $13::bytea[])`,
		projects, streams, seqs, ids, times, actions, statuses,
		aTypes, aIDs, tTypes, tIDs, payloadHashes, leafHashes)
}

// copyIndexRows writes a large group's index rows by COPY, event_ids first.
func copyIndexRows(ctx context.Context, q rowQueuer, writes []groupWrite, n int) error {
	rows := func(f func(log catalog.LogID, e *catalog.Event) []any) pgx.CopyFromSource {
		out := make([][]any, 0, n)
		eachEvent(writes, func(log catalog.LogID, e *catalog.Event) { out = append(out, f(log, e)) })
		return pgx.CopyFromRows(out)
	}
	_, err := q.CopyFrom(ctx, pgx.Identifier{"event_ids"},
		[]string{"project_id", "stream", "event_id", "seq", "received_at"},
		rows(func(log catalog.LogID, e *catalog.Event) []any {
			return []any{log.ProjectID, string(log.Stream), e.ID, int64(e.Sequence), catalog.MS(e.ReceivedAt)}
		}))
	if err != nil {
		return fmt.Errorf("copy %d event ids: %w", n, mapErr(err))
	}
	_, err = q.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"project_id", "stream", "seq", "event_id", "received_at", "action", "status",
			"actor_type", "actor_id", "target_type", "target_id", "payload_hash", "leaf_hash"},
		rows(func(log catalog.LogID, e *catalog.Event) []any {
			return []any{log.ProjectID, string(log.Stream), int64(e.Sequence), e.ID, catalog.MS(e.ReceivedAt),
				e.Action, e.Status, e.ActorType, e.ActorID, e.TargetType, e.TargetID, e.PayloadHash[:], e.LeafHash[:]}
		}))
	if err != nil {
		return fmt.Errorf("copy %d index rows: %w", n, mapErr(err))
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
