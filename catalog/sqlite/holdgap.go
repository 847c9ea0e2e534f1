package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// unheldSQL counts the events of one log (args: log number, project, first key, last
// key, stream, max sequence) that an active legal hold names and that have no held
// payload.
const unheldSQL = `SELECT count(*) FROM legal_hold_events he
	JOIN legal_holds h ON h.project_id = he.project_id AND h.id = he.hold_id AND h.released_ms = 0
	JOIN events e ON e.log = ? AND e.event_id = he.event_id
	WHERE he.project_id = ? AND e.k >= ? AND e.k <= ?
	AND NOT EXISTS (SELECT 1 FROM held_payloads p WHERE p.project_id = he.project_id AND p.stream = ? AND p.seq = (e.k & ?))`

// DestroyUnheldDataKey destroys the data key of (log, epoch) unless an active legal hold
// names an event of first..last that has no held payload (then catalog.ErrConflict).
// The check and the destroy are one write transaction; SQLite runs one writer at a
// time (BEGIN IMMEDIATE), so CreateLegalHold commits either before the check, which
// then sees the hold, or after the destroy.
func (db *DB) DestroyUnheldDataKey(ctx context.Context, log catalog.LogID, epoch string, first, last uint64, at time.Time) (catalog.DataKey, error) {
	n, ok, err := db.logNum(ctx, log)
	if err != nil {
		return catalog.DataKey{}, fmt.Errorf("sqlite: destroy data key %s %s: %w", log, epoch, err)
	}
	// The epoch's events are committed: after a merge they are all in events, which
	// the check joins (recent.go).
	if err := db.mergeRecent(ctx); err != nil {
		return catalog.DataKey{}, fmt.Errorf("sqlite: destroy data key %s %s: %w", log, epoch, err)
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		if ok && first > 0 && last >= first {
			var missing int64
			if err := tx.QueryRowContext(ctx, unheldSQL, n, log.ProjectID, key(n, first), key(n, last),
				string(log.Stream), int64(maxSeq)).Scan(&missing); err != nil {
				return err
			}
			if missing > 0 {
				return fmt.Errorf("%w: %d events under an active legal hold have no held copy", catalog.ErrConflict, missing)
			}
		}
		_, err := tx.ExecContext(ctx, destroyDataKeySQL, ms(db.stamp(at)), log.ProjectID, string(log.Stream), epoch)
		return err
	})
	if err != nil {
		return catalog.DataKey{}, fmt.Errorf("sqlite: destroy data key %s %s: %w", log, epoch, err)
	}
	return db.destroyed(ctx, log, epoch)
}
