package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// recentCheckpointCount returns the rows of checkpoints_recent.
func recentCheckpointCount(t testing.TB, db *DB) int { return tableRows(t, db, "checkpoints_recent") }

// checkpointOf returns the checkpoint of log as text, without its times (a merge
// keeps the rest).
func checkpointOf(t testing.TB, db *DB, log catalog.LogID) string {
	t.Helper()
	cp, err := db.Checkpoint(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("\ncheckpoint %d %x %x published %d", cp.Size, cp.Root, cp.Range, cp.PublishedSize)
}

// TestRecentCheckpointsConflict runs two handles on one file, one appending its
// checkpoints to checkpoints_recent and one rewriting checkpoints directly, each
// committing while the other is in a seal: whichever table the stale seal writes,
// its commit fails with ErrConflict, and nothing forks (checkpoints.go).
func TestRecentCheckpointsConflict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	a := openRecent(t, path, Options{}) // small batches, and their checkpoints, go to the recent tables
	b := openAt(t, path)                // a one-stream tick writes checkpoints directly
	ctx := context.Background()
	log := catalog.LogID{ProjectID: "prj_cp", Stream: catalog.StreamEvents}
	catalogtest.Seal(t, a, log, "a", 2)
	if n := recentCheckpointCount(t, a); n != 1 {
		t.Fatalf("%d rows in checkpoints_recent after a small seal, want 1", n)
	}
	mergeAll(t, a)
	if n := recentCheckpointCount(t, a); n != 0 {
		t.Fatalf("%d rows in checkpoints_recent after the merge, want 0", n)
	}

	// b starts from size 2 in checkpoints, knowing the file current (its last
	// commit was the file's last), so it takes no second look at events_recent; a
	// appends size 3 to checkpoints_recent meanwhile; b's UPDATE of checkpoints (still
	// at 2) must not match.
	catalogtest.Seal(t, b, catalog.LogID{ProjectID: "prj_other", Stream: catalog.StreamEvents}, "o", 1)
	_, err := b.Seal(ctx, log, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		catalogtest.Seal(t, a, log, "a2", 1)
		return &catalog.SealBatch{BatchID: "b1", Events: catalogtest.MakeEvents("b1", cp.Size+1, 1)}, nil
	})
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("a direct seal over an appended checkpoint: %v, want ErrConflict", err)

	}
	// a starts from size 3 in checkpoints_recent; b commits size 4 meanwhile; a's
	// append must not add a second row after 3.
	_, err = a.Seal(ctx, log, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		catalogtest.Seal(t, b, log, "b2", 1)
		return &catalog.SealBatch{BatchID: "a3", Events: catalogtest.MakeEvents("a3", cp.Size+1, 1)}, nil
	})
	if !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("an append over a newer checkpoint: %v, want ErrConflict", err)
	}
	for _, db := range []*DB{a, b} {
		if cp := catalogtest.CheckConsistent(t, db, log); cp.Size != 4 {
			t.Fatalf("checkpoint size %d, want 4", cp.Size)
		}
	}
	mergeAll(t, a)
	for _, db := range []*DB{a, b} {
		if cp := catalogtest.CheckConsistent(t, db, log); cp.Size != 4 {
			t.Fatalf("checkpoint size %d after the merge, want 4", cp.Size)
		}
	}
	catalogtest.Seal(t, a, log, "a4", 1)
	catalogtest.Seal(t, b, log, "b4", 1)
	if cp := catalogtest.CheckConsistent(t, a, log); cp.Size != 6 {
		t.Fatalf("checkpoint size %d, want 6", cp.Size)
	}
}

// TestRecentCheckpointsReads checks that every read of a checkpoint (one stream, a
// group, the unpublished list, the grown logs) sees the newest appended one, with
// the published size of both tables, before and after the merge folds it.
func TestRecentCheckpointsReads(t *testing.T) {
	db := openRecent(t, filepath.Join(t.TempDir(), "c.db"), Options{})
	db.terms.hold(true)
	ctx := context.Background()
	log := catalog.LogID{ProjectID: "prj_cr", Stream: catalog.StreamEvents}
	catalogtest.Seal(t, db, log, "a", 3)
	mergeAll(t, db)
	if _, err := db.AdvancePublished(ctx, log, 3); err != nil {
		t.Fatal(err)
	}
	db.pub.flush(db)
	want := catalogtest.Seal(t, db, log, "b", 2)
	want = catalogtest.Seal(t, db, log, "c", 4)
	if want.Size != 9 || recentCheckpointCount(t, db) != 2 {
		t.Fatalf("size %d with %d appended checkpoints, want 9 and 2", want.Size, recentCheckpointCount(t, db))
	}
	read := func(when string) {
		t.Helper()
		var filePub int64 // what the file holds, without this handle's memory
		if err := db.r.QueryRowContext(ctx, `SELECT published_size FROM checkpoints_now WHERE project_id = ? AND stream = ?`,
			log.ProjectID, string(log.Stream)).Scan(&filePub); err != nil || filePub != 3 {
			t.Fatalf("%s: published size %d in the file, %v; want 3", when, filePub, err)
		}
		cp, err := db.Checkpoint(ctx, log)
		if err != nil || cp.Size != 9 || cp.Root != want.Root || len(cp.Range) != len(want.Range) || cp.PublishedSize != 3 {
			t.Fatalf("%s: Checkpoint = %+v, %v; want %+v published to 3", when, cp, err, want)
		}
		cps, found, err := db.checkpoints(ctx, []catalog.LogID{log})
		if err != nil || !found[0] || cps[0].Size != 9 || cps[0].Root != want.Root {
			t.Fatalf("%s: checkpoints = %+v, %v", when, cps, err)
		}
		un, err := db.ListUnpublished(ctx)
		if err != nil || len(un) != 1 || un[0].Size != 9 || un[0].PublishedSize != 3 {
			t.Fatalf("%s: ListUnpublished = %+v, %v", when, un, err)
		}
		grown, err := db.GrownLogs(ctx, catalog.LogID{}, 10)
		if err != nil || len(grown) != 1 || grown[0].Size != 9 || grown[0].Root != want.Root {
			t.Fatalf("%s: GrownLogs = %+v, %v", when, grown, err)
		}
	}
	read("appended")
	mergeAll(t, db)
	if n := recentCheckpointCount(t, db); n != 0 {
		t.Fatalf("%d rows in checkpoints_recent after the merge", n)
	}
	read("folded")
}
