package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// writeSeals writes, in tx, the checkpoints and batch rows of every seal of writes:
// all checkpoints in multi-row conditional UPDATEs and all batch rows in multi-row
// INSERTs (tickStmts), rather than two statements per project-stream; then each
// stream's receive-time check (noteTimes), which runs a statement only when the
// receive time of the stream's last event is not cached.
func (db *DB) writeSeals(ctx context.Context, tx *sql.Tx, logs []catalog.LogID, writes []sealWrite, now time.Time) error {
	nowMS := ms(now)
	n, err := db.tick.update.exec(ctx, tx, len(writes), func(i int, to []any) []any {
		w := &writes[i]
		return append(to, w.n, int64(w.cp.Size),
			int64(w.next.Size), w.next.Root[:], catalog.JoinHashes(w.next.Range), nowMS, int64(w.pub))
	})
	if err != nil {
		return fmt.Errorf("update checkpoints: %w", err)
	}
	// The size check makes the commit conditional on the state the seal saw; the
	// in-process lock makes it always hold unless another process shares the file or
	// the cached checkpoint was stale (sealcache.go).
	if n != int64(len(writes)) {
		if len(writes) == 1 {
			return fmt.Errorf("%w: checkpoint of %s moved from size %d during the seal", catalog.ErrConflict, logs[writes[0].at], writes[0].cp.Size)
		}
		return fmt.Errorf("%w: %d of %d checkpoints moved during the seal", catalog.ErrConflict, int64(len(writes))-n, len(writes))
	}
	var direct, small []*sealWrite
	for i := range writes {
		if writes[i].direct {
			direct = append(direct, &writes[i])
		} else {
			small = append(small, &writes[i])
		}
	}
	objects, err := objectIDs(ctx, tx, &db.tick, writes)
	if err != nil {
		return err
	}
	if _, err := db.tick.batch.exec(ctx, tx, len(direct), func(i int, to []any) []any {
		w := direct[i]
		_, off, n := catalog.PayloadColumns(w.b)
		return append(to, key(w.n, w.cp.Size+1), len(w.b.Events), w.b.BatchID, nowMS, objects.of(w.b), off, n)
	}); err != nil {
		return fmt.Errorf("insert batches: %w", mapErr(err))
	}
	if _, err := db.tick.batchRecent.exec(ctx, tx, len(small), func(i int, to []any) []any {
		w := small[i]
		_, off, n := catalog.PayloadColumns(w.b)
		return append(to, w.n, int64(w.cp.Size+1), len(w.b.Events), w.b.BatchID, nowMS, objects.of(w.b), off, n)
	}); err != nil {
		return fmt.Errorf("insert recent batches: %w", mapErr(err))
	}
	for _, w := range writes {
		if err := noteTimes(ctx, tx, db.tick.lastTime, w.n, w.cp.Size, w.lastMS, w.b.Events); err != nil {
			if len(writes) == 1 {
				return err
			}
			return fmt.Errorf("%s: %w", logs[w.at], err)
		}
	}
	return nil
}

// objectNums maps the payload object keys of a tick's batches to their numbers in
// payload_objects (migrations/0018).
type objectNums map[string]int64

// of returns the object column of b's batch row: nil (NULL) for a batch with its own
// payload object, else its group object's number.
func (m objectNums) of(b *catalog.SealBatch) any {
	if b.Object == "" {
		return nil
	}
	return m[b.Object]
}

// objectIDs records, in tx, the key of every group payload object writes name (a
// tick names one) and returns their numbers. A key already recorded (the filesystem
// store appends a tick's payload to the same segment file until it rolls over) is
// only read: the insert that finds it writes nothing.
func objectIDs(ctx context.Context, tx *sql.Tx, st *tickStmts, writes []sealWrite) (objectNums, error) {
	var m objectNums
	for i := range writes {
		name := writes[i].b.Object
		if _, ok := m[name]; ok || name == "" {
			continue
		}
		if m == nil {
			m = make(objectNums, 1)
		}
		if _, err := tx.StmtContext(ctx, st.addObject).ExecContext(ctx, name); err != nil {
			return nil, fmt.Errorf("record payload object %q: %w", name, mapErr(err))
		}
		var id int64
		if err := tx.StmtContext(ctx, st.objectID).QueryRowContext(ctx, name).Scan(&id); err != nil {
			return nil, fmt.Errorf("read payload object %q: %w", name, mapErr(err))
		}
		m[name] = id
	}
	return m, nil
}
