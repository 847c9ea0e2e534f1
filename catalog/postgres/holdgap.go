package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

// destroyDataKeySQL deletes a data key's wrapped bytes, keeping the first destruction
// time (args: project, stream, epoch, at).
const destroyDataKeySQL = `UPDATE data_keys SET wrapped = NULL, destroyed_at = coalesce(destroyed_at, $4)
	WHERE project_id = $1 AND stream = $2 AND epoch = $3 RETURNING ` + dataKeyCols

// unheldSQL counts the events of one log in a sequence range (args: project, stream,
// first, last) that an active legal hold names and that have no held payload.
const unheldSQL = `SELECT count(*) FROM legal_hold_events he
	JOIN legal_holds h ON h.project_id = he.project_id AND h.id = he.hold_id AND h.released_at IS NULL
	JOIN events e ON e.project_id = he.project_id AND e.stream = $2 AND e.event_id = he.event_id
	WHERE he.project_id = $1 AND e.seq >= $3 AND e.seq <= $4
	AND NOT EXISTS (SELECT 1 FROM held_payloads p WHERE p.project_id = $1 AND p.stream = $2 AND p.seq = e.seq)`

// lockHolds takes the transaction-scoped advisory lock that serializes creating a legal
// hold in projectID with destroying one of its data keys (DestroyUnheldDataKey).
func lockHolds(ctx context.Context, tx pgx.Tx, projectID string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('sealtrail.holds:' || $1, 0))`, projectID); err != nil {
		return fmt.Errorf("lock legal holds of %s: %w", projectID, err)
	}
	return nil
}

// DestroyUnheldDataKey destroys the data key of (log, epoch) unless an active legal hold
// names an event of first..last that has no held payload (then catalog.ErrConflict).
// The check and the destroy are one READ COMMITTED transaction under the project's
// holds lock, which CreateLegalHold takes too: a hold committed before the lock is
// taken is seen by the check (each statement reads a fresh snapshot), a hold created
// later commits after the key is destroyed.
func (db *DB) DestroyUnheldDataKey(ctx context.Context, log catalog.LogID, epoch string, first, last uint64, at time.Time) (catalog.DataKey, error) {
	var k catalog.DataKey
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if err := lockHolds(ctx, tx, log.ProjectID); err != nil {
			return err
		}
		if first > 0 && last >= first {
			var missing int64
			if err := tx.QueryRow(ctx, unheldSQL, log.ProjectID, string(log.Stream), int64(first), int64(last)).Scan(&missing); err != nil {
				return err
			}
			if missing > 0 {
				return fmt.Errorf("%w: %d events under an active legal hold have no held copy", catalog.ErrConflict, missing)
			}
		}
		var err error
		k, err = scanDataKey(tx.QueryRow(ctx, destroyDataKeySQL, log.ProjectID, string(log.Stream), epoch, db.stamp(at)))
		return mapErr(err)
	})
	if err != nil {
		return k, fmt.Errorf("postgres: destroy data key %s %s: %w", log, epoch, err)
	}
	return k, nil
}
