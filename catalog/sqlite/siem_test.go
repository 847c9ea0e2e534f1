package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

func TestSIEMConformance(t *testing.T) {
	catalogtest.RunSIEM(t, func(t *testing.T) catalogtest.SIEMDB {
		return open(t, filepath.Join(t.TempDir(), "catalog.db"))
	})
}
