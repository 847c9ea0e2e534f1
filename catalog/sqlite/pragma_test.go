package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// TestPragmas checks the durability settings docs/catalog.md promises, on the writer
// and on the readers.
func TestPragmas(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, conn := range map[string]*sql.DB{"writer": db.w, "reader": db.r} {
		for pragma, want := range map[string]string{
			"journal_mode":  "wal",
			"synchronous":   "2", // FULL
			"foreign_keys":  "1",
			"secure_delete": "1",
		} {
			var got string
			if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: PRAGMA %s = %s, want %s", name, pragma, got, want)
			}
		}
	}
	// Publishing writes published_size with synchronous=NORMAL; the writer must be
	// back at FULL for the seals after it.
	log := catalog.LogID{ProjectID: "prj_pragma", Stream: catalog.StreamEvents}
	catalogtest.Seal(t, db, log, "e", 3)
	if _, err := db.Publish(ctx, log, func(context.Context, catalog.Checkpoint) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AdvancePublished(ctx, log, 3); err != nil {
		t.Fatal(err)
	}
	for pragma, want := range map[string]string{
		"synchronous": "2", // FULL
		"temp_store":  "2", // MEMORY
		"cache_size":  "-" + strconv.Itoa(writerCacheKiB),
		// The WAL checkpointer's length trigger relies on it (walcheckpoint.go).
		"journal_size_limit": strconv.Itoa(walLimitBytes),
	} {
		var got string
		if err := db.w.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("writer after Publish: PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	if _, err := db.r.ExecContext(ctx, `DELETE FROM projects`); err == nil {
		t.Error("the read pool can write")
	}
	// The term indexer's caches: its own file's, and the attached catalog's, which
	// it reads each stream's last event from (terms.go).
	for pragma, want := range map[string]string{
		"main.cache_size": "-" + strconv.Itoa(termCacheKiB),
		"cat.cache_size":  "-" + strconv.Itoa(termCatalogCacheKiB),
	} {
		var got string
		if err := db.terms.w.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("term indexer: PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}
