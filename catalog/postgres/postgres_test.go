package postgres_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// crashChildEnv carries the DSN when the test binary runs as TestCrash's child.
const crashChildEnv = "SEALTRAIL_POSTGRES_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashChildEnv); dsn != "" {
		db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
		if err != nil {
			panic(err)
		}
		catalogtest.SealUntilKilled(db)
	}
	os.Exit(m.Run())
}

// TestCrash kills a client process in the middle of sealing, three times over: the
// server must keep every acknowledged seal, roll back the one in flight, and release
// its row lock so the next process can seal.
func TestCrash(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dsn)
		acked := catalogtest.KillAfterAcks(t, cmd, 8+round*5)
		db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cp := catalogtest.CheckConsistent(t, db, catalogtest.CrashLog)
		db.Close()
		if cp.Size < acked {
			t.Fatalf("round %d: checkpoint size %d after the crash, but %d was acknowledged", round, cp.Size, acked)
		}
	}
}

func open(t testing.TB, dsn string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalog.Catalog {
		return open(t, testenv.PostgresDB(t))
	})
}

// TestTwoReplicas seals through two pools on one database, as two sealtraild replicas
// would: the checkpoint row lock must serialize them.
func TestTwoReplicas(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	catalogtest.SealRace(t, open(t, dsn), open(t, dsn))
}

func BenchmarkSeal(b *testing.B) {
	catalogtest.BenchmarkSeal(b, func(tb testing.TB) catalog.Catalog {
		return open(tb, testenv.PostgresDB(tb))
	})
}

func TestRetentionConformance(t *testing.T) {
	catalogtest.RunRetention(t, func(t *testing.T) catalog.RetentionCatalog {
		return open(t, testenv.PostgresDB(t))
	})
}
