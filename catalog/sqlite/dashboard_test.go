package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

func TestDashboardConformance(t *testing.T) {
	catalogtest.RunDashboard(t, func(t *testing.T) catalogtest.DashboardCatalog {
		return open(t, filepath.Join(t.TempDir(), "catalog.db"))
	})
}
