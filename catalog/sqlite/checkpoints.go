package sqlite

// Log-structured checkpoint rows (migrations/0016). A seal whose batch goes to the
// recent tables (recent.go) appends its stream's new checkpoint to
// checkpoints_recent instead of rewriting the stream's checkpoints row: a
// checkpoints row with its compact range does not fit in place in a WITHOUT ROWID
// leaf of a 1 KiB page, so each rewrite dirtied an overflow page and a share of a
// leaf, about 1.1 WAL frames per event with 1,000 streams of one event a tick, the
// largest catalog write of that case. Appended in commit order, a tick's checkpoints
// fill a few consecutive pages (about three rows to a page). The merge folds each
// stream's newest row into checkpoints and empties checkpoints_recent in the same
// transaction as it moves the event and batch rows, so a stream has rows in
// checkpoints_recent exactly when it has rows in events_recent, and every row there
// is newer than the stream's checkpoints row.
//
// Every read of a checkpoint goes through the view checkpoints_now (the newest of
// both). The seal's commit stays conditional in SQL, whichever table it writes: the
// UPDATE of a direct seal matches only a checkpoints row still at the size the seal
// started from (a stream with rows in checkpoints_recent has a newer size, so it
// matches nothing), and the INSERT here adds a row only if the stream's newest size,
// in either table, is the one the seal started from. Two writers on one file can
// still not both extend a stream (TestTwoHandles, TestRecentCheckpointsConflict).

// recentCheckpointStatement appends the new checkpoints of rows project-streams to
// checkpoints_recent, each row of VALUES being (log number, project_id, stream, old
// size, new size, root, compact range, published size, ms). A row whose stream is no
// longer at the old size (its newest row here, or else its checkpoints row) adds
// nothing, so the rows affected say whether every stream was where the seal found
// it.
func recentCheckpointStatement(rows int) string {
	return `INSERT INTO checkpoints_recent(log, size, root, compact_range, published_size, updated_ms)
		SELECT v.column1, v.column5, v.column6, v.column7, v.column8, v.column9
		FROM (VALUES ` + valuesRows(rows, recentCPCols) + `) AS v
		WHERE v.column4 = coalesce((SELECT max(x.size) FROM checkpoints_recent x WHERE x.log = v.column1),
			(SELECT c.size FROM checkpoints c WHERE c.project_id = v.column2 AND c.stream = v.column3))`
}

// foldCheckpoints writes each stream's newest row of checkpoints_recent into its
// checkpoints row (the merge, recent.go); the published size is the higher of both.
const foldCheckpoints = `UPDATE checkpoints SET size = x.size, root = x.root, compact_range = x.compact_range,
		updated_ms = x.updated_ms, published_size = max(checkpoints.published_size, x.published_size)
	FROM (SELECT l.project_id, l.stream, r.size, r.root, r.compact_range, r.updated_ms, r.published_size
		FROM checkpoints_recent r JOIN logs l ON l.id = r.log
		WHERE r.size = (SELECT max(m.size) FROM checkpoints_recent m WHERE m.log = r.log)) AS x
	WHERE checkpoints.project_id = x.project_id AND checkpoints.stream = x.stream AND checkpoints.size < x.size`

// clearCheckpoints empties checkpoints_recent after the fold. It runs with
// secure_delete off (recent.go): its rows hold sizes, roots and compact ranges, the
// public Merkle state every checkpoint note and tile publishes, and zeroing the pages
// it frees would log each of them to the WAL once more. Every other delete zeroes
// what it frees.
const clearCheckpoints = `DELETE FROM checkpoints_recent`
