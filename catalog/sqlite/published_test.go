package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// storedPublished reads published_size of log from the file through c, a connection of
// its own, or -1 if the row is missing.
func storedPublished(t *testing.T, c *sql.DB, log catalog.LogID) int64 {
	t.Helper()
	var n int64
	err := c.QueryRow(`SELECT c.published_size FROM checkpoints c JOIN logs l ON l.id = c.log WHERE l.project_id = ? AND l.stream = ?`,
		log.ProjectID, string(log.Stream)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitStored polls the file until published_size of log is want, for a few seconds.
func waitStored(t *testing.T, c *sql.DB, log catalog.LogID, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := storedPublished(t, c, log)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("published_size of %s in the file is %d after 5s, want %d", log, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func unpublishedLogs(t *testing.T, db *DB) []catalog.LogID {
	t.Helper()
	un, err := db.ListUnpublished(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []catalog.LogID
	for _, cp := range un {
		if cp.PublishedSize >= cp.Size {
			t.Errorf("ListUnpublished lists %s with published size %d of %d", cp.Log, cp.PublishedSize, cp.Size)
		}
		out = append(out, cp.Log)
	}
	return out
}

// TestPublishedSizeFlushed checks that a published size is visible at once through the
// handle, reaches the file shortly after, survives closing, and never passes the
// committed size.
func TestPublishedSizeFlushed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	file, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	logA := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	logB := catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamEvents}
	catalogtest.Seal(t, db, logA, "e", 5)
	catalogtest.Seal(t, db, logB, "e", 3)
	if got := unpublishedLogs(t, db); !slices.Equal(got, []catalog.LogID{logA, logB}) {
		t.Fatalf("ListUnpublished = %v before publishing", got)
	}
	nop := func(context.Context, catalog.Checkpoint) error { return nil }

	cp, err := db.Publish(ctx, logA, nop)
	if err != nil || cp.PublishedSize != 5 || cp.Size != 5 {
		t.Fatalf("Publish = %+v, %v", cp, err)
	}
	// At once, through the handle.
	if cp, err := db.Checkpoint(ctx, logA); err != nil || cp.PublishedSize != 5 || cp.Size != 5 {
		t.Fatalf("Checkpoint right after Publish = %+v, %v", cp, err)
	}
	if got := unpublishedLogs(t, db); !slices.Equal(got, []catalog.LogID{logB}) {
		t.Fatalf("ListUnpublished = %v after publishing %s", got, logA)
	}
	// Shortly after, in the file.
	waitStored(t, file, logA, 5)
	if got := storedPublished(t, file, logB); got != 0 {
		t.Fatalf("published_size of %s in the file = %d, want 0", logB, got)
	}

	// Beyond the committed size: ErrConflict, and nothing changes.
	catalogtest.Seal(t, db, logA, "f", 2) // size 7
	if cp, err := db.AdvancePublished(ctx, logA, 8); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("AdvancePublished(8) beyond size 7 = %+v, %v; want ErrConflict", cp, err)
	}
	if cp, err := db.Checkpoint(ctx, logA); err != nil || cp.PublishedSize != 5 || cp.Size != 7 {
		t.Fatalf("Checkpoint after a refused AdvancePublished = %+v, %v", cp, err)
	}
	// Another log's advance wakes the flusher; once it has written, the file still
	// says 5 for the refused one.
	if cp, err := db.AdvancePublished(ctx, logB, 1); err != nil || cp.PublishedSize != 1 {
		t.Fatalf("AdvancePublished(%s, 1) = %+v, %v", logB, cp, err)
	}
	waitStored(t, file, logB, 1)
	if got := storedPublished(t, file, logA); got != 5 {
		t.Fatalf("published_size of %s in the file = %d after a refused advance, want 5", logA, got)
	}
	if got := unpublishedLogs(t, db); !slices.Equal(got, []catalog.LogID{logA, logB}) {
		t.Fatalf("ListUnpublished = %v after sealing past the published size", got)
	}

	// Never lowered.
	if cp, err := db.AdvancePublished(ctx, logA, 6); err != nil || cp.PublishedSize != 6 {
		t.Fatalf("AdvancePublished(6) = %+v, %v", cp, err)
	}
	if cp, err := db.AdvancePublished(ctx, logA, 4); err != nil || cp.PublishedSize != 6 {
		t.Fatalf("AdvancePublished(4) after 6 = %+v, %v", cp, err)
	}
	waitStored(t, file, logA, 6)
	if cp, err := db.Checkpoint(ctx, logA); err != nil || cp.PublishedSize != 6 || cp.Size != 7 {
		t.Fatalf("Checkpoint = %+v, %v; want published 6 of 7", cp, err)
	}
	if _, err := db.AdvancePublished(ctx, catalog.LogID{ProjectID: "prj_none", Stream: catalog.StreamEvents}, 1); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("AdvancePublished of a log never sealed: %v, want ErrNotFound", err)
	}

	// Published and closed at once: Close writes what is pending.
	if cp, err := db.Publish(ctx, logB, nop); err != nil || cp.PublishedSize != 3 {
		t.Fatalf("Publish(%s) = %+v, %v", logB, cp, err)
	}
	db.Close()
	closed = true
	if a, b := storedPublished(t, file, logA), storedPublished(t, file, logB); a != 6 || b != 3 {
		t.Fatalf("published sizes in the file after Close: %d, %d; want 6, 3", a, b)
	}

	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed = false
	for log, want := range map[catalog.LogID][2]uint64{logA: {6, 7}, logB: {3, 3}} {
		if cp, err := db.Checkpoint(ctx, log); err != nil || cp.PublishedSize != want[0] || cp.Size != want[1] {
			t.Errorf("after reopening: Checkpoint(%s) = %+v, %v; want published %d of %d", log, cp, err, want[0], want[1])
		}
	}
	if got := unpublishedLogs(t, db); !slices.Equal(got, []catalog.LogID{logA}) {
		t.Fatalf("ListUnpublished = %v after reopening, want [%s]", got, logA)
	}
	if _, err := db.AdvancePublished(ctx, logA, 8); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("AdvancePublished(8) beyond size 7 after reopening: %v; want ErrConflict", err)
	}
}
