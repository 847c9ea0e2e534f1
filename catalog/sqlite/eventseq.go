package sqlite

import (
	"context"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
)

// EventSequence returns the sequence of event id in log, or catalog.ErrNotFound: what
// an inclusion proof by event id needs of its row. It reads only the (log, event_id)
// index, whose entries hold the row's key and so its sequence, never the row.
func (db *DB) EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error) {
	n, ok, err := db.logNum(ctx, log, false)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("sqlite: event %q in %s: %w", id, log, catalog.ErrNotFound)
	}
	var k int64
	if err := db.queryRow(ctx, `SELECT k FROM events WHERE log = ? AND event_id = ?`, n, id).Scan(&k); err != nil {
		return 0, fmt.Errorf("sqlite: event %q in %s: %w", id, log, mapErr(err))
	}
	return seqOf(k), nil
}
