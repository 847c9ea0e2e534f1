package postgres_test

import (
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestMail runs the mail conformance suite with two pools on one database, as two
// replicas hold them.
func TestMail(t *testing.T) {
	catalogtest.TestMail(t, func(t *testing.T) (catalog.Catalog, catalog.Catalog) {
		dsn := testenv.PostgresDB(t)
		return open(t, dsn), open(t, dsn)
	})
}
