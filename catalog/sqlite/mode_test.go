//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestFileModes: with umask 0 (under which SQLite alone creates 0644 files), the
// catalog file, the term index file and their WAL and shared-memory files are 0600.
func TestFileModes(t *testing.T) {
	testenv.Umask(t, 0)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // the folder is the caller's, not the catalog's
		t.Fatal(err)
	}
	db, err := Open(context.Background(), filepath.Join(dir, "catalog.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := testenv.PrivateTree(t, dir)
	want := []string{".", "catalog.db", "catalog.db-shm", "catalog.db-terms", "catalog.db-terms-shm", "catalog.db-terms-wal", "catalog.db-wal"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %q, want %q", names, want)
	}
}
