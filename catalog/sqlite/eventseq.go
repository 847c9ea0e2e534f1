package sqlite

import (
	"context"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
)

// EventSequence returns the sequence of event id in log, or catalog.ErrNotFound: what
// an inclusion proof by event id needs of its row. An id whose row is in
// events_recent is known in memory (recent.go); for the others it reads only the
// (log, event_id) index of events, whose entries hold the row's key and so its
// sequence, never the row.
func (db *DB) EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error) {
	n, ok, err := db.logNum(ctx, log)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("sqlite: event %q in %s: %w", id, log, catalog.ErrNotFound)
	}
	if s, ok := db.recent.seq(n, id); ok {
		return s, nil // its row is in events_recent (recent.go)
	}
	var k int64
	if err := db.queryRow(ctx, `SELECT k FROM events WHERE log = ? AND event_id = ?`, n, id).Scan(&k); err != nil {
		return 0, fmt.Errorf("sqlite: event %q in %s: %w", id, log, mapErr(err))
	}
	return seqOf(k), nil
}
