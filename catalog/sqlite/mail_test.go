package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// TestMail runs the mail conformance suite with two handles on one file, the way two
// services of one process (or two processes, which SQLite serializes) would share it.
func TestMail(t *testing.T) {
	catalogtest.TestMail(t, func(t *testing.T) (catalog.Catalog, catalog.Catalog) {
		path := filepath.Join(t.TempDir(), "catalog.db")
		return open(t, path), open(t, path)
	})
}
