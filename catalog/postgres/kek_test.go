package postgres_test

import (
	"testing"

	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

func TestKEKRotation(t *testing.T) {
	catalogtest.KEKRotation(t, open(t, testenv.PostgresDB(t)))
}
