//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestFileModes: with umask 0 (under which SQLite alone creates 0644 files), the
// catalog file, the term index file and their WAL and shared-memory files are 0600.
func TestFileModes(t *testing.T) {
	testenv.Umask(t, 0)
	dir := t.TempDir()
	db, err := Open(context.Background(), filepath.Join(dir, "catalog.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != private.FileMode {
			t.Errorf("%s has mode %#o, want %#o", e.Name(), fi.Mode().Perm(), private.FileMode)
		}
		names = append(names, e.Name())
	}
	want := []string{"catalog.db", "catalog.db-shm", "catalog.db-terms", "catalog.db-terms-shm", "catalog.db-terms-wal", "catalog.db-wal"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %q, want %q", names, want)
	}
}
