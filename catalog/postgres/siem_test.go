package postgres_test

import (
	"testing"

	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

func TestSIEMConformance(t *testing.T) {
	catalogtest.RunSIEM(t, func(t *testing.T) catalogtest.SIEMDB {
		return open(t, testenv.PostgresDB(t))
	})
}
