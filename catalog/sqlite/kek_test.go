package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

func TestKEKRotation(t *testing.T) {
	catalogtest.KEKRotation(t, open(t, filepath.Join(t.TempDir(), "catalog.db")))
}
