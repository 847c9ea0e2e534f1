package sqlite

import "context"

// OpenMerging opens path with every batch's rows bound for events_recent and a merge
// as soon as rows of them have gathered (recent.go): TestCrashMerging's child.
func OpenMerging(ctx context.Context, path string, rows int) (*DB, error) {
	return Open(ctx, path, Options{directRows: 1 << 30, directStreams: -1, mergeRows: rows})
}

// RecentRows returns the rows of events_recent and batches_recent.
func RecentRows(ctx context.Context, db *DB) (events, batches int, err error) {
	err = db.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events_recent), (SELECT count(*) FROM batches_recent)`).Scan(&events, &batches)
	return events, batches, err
}

// IndexEveryEvent makes the term indexes opened from now on index every committed
// event, however few of a project-stream's wait (termMinChunk), as the indexer did
// before it indexed whole chunks only: the tests of the postings, their queries and
// their merges need postings of a few events. TestMain calls it before any test runs;
// TestWholeChunksOnly opens its index with the default.
func IndexEveryEvent() { termMinChunk = 1 }
