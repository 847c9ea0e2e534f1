package postgres

import (
	"context"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
)

// EventSequence returns the sequence of event id in log, or catalog.ErrNotFound: what
// an inclusion proof by event id needs of its row (EventByID's lookup, reading one
// column).
func (db *DB) EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error) {
	var seq int64
	err := db.pool.QueryRow(ctx, `SELECT e.seq`+byIDFrom+`i.event_id = $3`, log.ProjectID, string(log.Stream), id).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("postgres: event %q in %s: %w", id, log, mapErr(err))
	}
	return uint64(seq), nil
}
