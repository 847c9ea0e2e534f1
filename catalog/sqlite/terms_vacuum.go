package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The term file's vacuum after a scrub (docs/retention.md, "After shredding").
//
// secure_delete zeroes a deleted posting and a freed page, but when SQLite
// rebalances B-tree pages (a chunk's inserts into a full leaf, a segment merge) it
// rebuilds a page by writing its cells from the end of the page down, and the bytes
// between the cell pointers and the new first cell keep whatever was there: old
// copies of postings that moved to a sibling. Once purge has deleted a scrubbed
// value's live postings, such a copy is the last one, and only rebuilding the file
// removes it. So every purge that removed anything records a vacuum as due, in the
// file (term_meta 'vacuum_due', a counter, in the purge's own transaction), and the
// indexer runs VACUUM termVacuumDelay after the last such purge: one rebuild per
// retention pass, not one per scrubbed project-stream. A crash before it leaves the
// record, and the next open runs it (TestTermVacuumAfterReopen). The term file is a
// derived index of about twenty bytes per event, so its VACUUM is much cheaper than
// the catalog's would be.

// termVacuumDelay is how long after the last purge the term file is vacuumed, and
// termVacuumMaxDelay how long after the first one at most, however often purges come.
const (
	termVacuumDelay    = 30 * time.Second
	termVacuumMaxDelay = 5 * time.Minute
)

// noteVacuum records, in tx (a purge that removed postings), that the term file needs
// a vacuum; vacuumAfter then schedules it.
func noteVacuum(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO term_meta(name, value) VALUES ('vacuum_due', '1')
		ON CONFLICT(name) DO UPDATE SET value = CAST(value AS INTEGER) + 1`)
	return err
}

// vacuumAfter schedules the vacuum termVacuumDelay after now, a purge's time, and at
// most termVacuumMaxDelay after the first purge it has not run for.
func (ti *termIndex) vacuumAfter(now time.Time) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.vacuumAt.IsZero() {
		ti.vacuumBy = now.Add(termVacuumMaxDelay)
	}
	ti.vacuumAt = now.Add(termVacuumDelay)
}

// vacuumIfDue vacuums the term file if a vacuum is due at now, and reports whether it
// ran. The record goes only if no purge recorded another meanwhile.
func (ti *termIndex) vacuumIfDue(ctx context.Context, now time.Time) (bool, error) {
	ti.mu.Lock()
	due := !ti.held && !ti.vacuumAt.IsZero() && (!now.Before(ti.vacuumAt) || !now.Before(ti.vacuumBy))
	ti.mu.Unlock()
	if !due {
		return false, nil
	}
	gen, err := ti.vacuumGen(ctx)
	if err != nil {
		return false, fmt.Errorf("vacuum record: %w", err)
	}
	if gen == 0 { // nothing recorded: nothing to do
		ti.doneVacuum(now)
		return false, nil
	}
	started := time.Now()
	if _, err := ti.w.ExecContext(ctx, `VACUUM main`); err != nil {
		ti.retryVacuum(started) // not at every tick while it keeps failing
		return false, fmt.Errorf("vacuum: %w", err)
	}
	if _, err := ti.w.ExecContext(ctx, `DELETE FROM term_meta WHERE name = 'vacuum_due' AND value = ?`, gen); err != nil {
		return true, fmt.Errorf("vacuum record: %w", err)
	}
	// The old pages are in the WAL now; the checkpoint puts the rebuilt ones in the
	// file and empties it.
	if _, err := ti.w.ExecContext(ctx, `PRAGMA main.wal_checkpoint(TRUNCATE)`); err != nil {
		return true, fmt.Errorf("checkpoint after the vacuum: %w", err)
	}
	ti.doneVacuum(started)
	return true, nil
}

// doneVacuum clears the schedule unless a purge after started moved it (that purge's
// vacuum is then due in turn).
func (ti *termIndex) doneVacuum(started time.Time) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if !ti.vacuumAt.After(started.Add(termVacuumDelay)) {
		ti.vacuumAt = time.Time{}
	} else {
		ti.vacuumBy = ti.vacuumAt
	}
}

// vacuumGen returns the term file's vacuum record, the count of purges since its
// last vacuum (0: none).
func (ti *termIndex) vacuumGen(ctx context.Context) (int, error) {
	var gen string
	err := ti.w.QueryRowContext(ctx, `SELECT value FROM term_meta WHERE name = 'vacuum_due'`).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(gen)
}

// retryVacuum makes a failed vacuum due again termVacuumDelay after now.
func (ti *termIndex) retryVacuum(now time.Time) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.vacuumAt = now.Add(termVacuumDelay)
	ti.vacuumBy = ti.vacuumAt
}
