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
		log := logs[w.at]
		return append(to, log.ProjectID, string(log.Stream), int64(w.cp.Size),
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
	if _, err := db.tick.batch.exec(ctx, tx, len(direct), func(i int, to []any) []any {
		w := direct[i]
		log := logs[w.at]
		obj, off, n := catalog.PayloadColumns(w.b)
		return append(to, log.ProjectID, string(log.Stream), int64(w.cp.Size+1),
			len(w.b.Events), w.b.BatchID, nowMS, obj, off, n)
	}); err != nil {
		return fmt.Errorf("insert batches: %w", mapErr(err))
	}
	if _, err := db.tick.batchRecent.exec(ctx, tx, len(small), func(i int, to []any) []any {
		w := small[i]
		obj, off, n := catalog.PayloadColumns(w.b)
		return append(to, w.n, int64(w.cp.Size+1), len(w.b.Events), w.b.BatchID, nowMS, obj, off, n)
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
