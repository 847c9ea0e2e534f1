package postgres_test

import (
	"testing"

	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

func TestDashboardConformance(t *testing.T) {
	catalogtest.RunDashboard(t, func(t *testing.T) catalogtest.DashboardCatalog {
		return open(t, testenv.PostgresDB(t))
	})
}
