package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// TestPageSize: a new catalog file gets pageSize in WAL mode; a file created with
// another page size (every catalog from before pageSize) keeps it and still seals.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, path string, want int) {
		t.Helper()
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var size int
		var mode string
		if err := db.w.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
			t.Fatal(err)
		}
		if err := db.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if size != want || mode != "wal" {
			t.Errorf("page size %d, journal mode %q; want %d, wal", size, mode, want)
		}
		log := catalog.LogID{ProjectID: "prj_pages", Stream: catalog.StreamEvents}
		if cp := catalogtest.Seal(t, db, log, "p", 300); cp.Size != 300 {
			t.Errorf("size %d after sealing 300 events", cp.Size)
		}
	}
	t.Run("new", func(t *testing.T) {
		check(t, filepath.Join(t.TempDir(), "catalog.db"), pageSize)
	})
	t.Run("existing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "catalog.db")
		c, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{`PRAGMA page_size = 4096`, `PRAGMA journal_mode = WAL`, `CREATE TABLE old (x)`} {
			if _, err := c.ExecContext(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		check(t, path, 4096)
	})
}
