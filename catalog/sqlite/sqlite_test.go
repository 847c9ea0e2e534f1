package sqlite_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
)

// crashChildEnv names the database file when the test binary runs as TestCrash's child.
const crashChildEnv = "SEALTRAIL_SQLITE_CRASH_CHILD"

// crashMergeEnv, set beside crashChildEnv, makes the child merge its recent rows
// every few seals (TestCrashMerging).
const crashMergeEnv = "SEALTRAIL_SQLITE_CRASH_MERGE"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		open := func() (*sqlite.DB, error) { return sqlite.Open(context.Background(), path, sqlite.Options{}) }
		if os.Getenv(crashMergeEnv) != "" {
			open = func() (*sqlite.DB, error) { return sqlite.OpenMerging(context.Background(), path, 200) }
		}
		db, err := open()
		if err != nil {
			panic(err)
		}
		catalogtest.SealUntilKilled(db)
	}
	sqlite.IndexEveryEvent()
	os.Exit(m.Run())
}

// TestCrashMerging is TestCrash with every batch's rows written to the recent tables
// and merged into events and batches every 200 rows or so, by the merger goroutine,
// beside the seals: the kill lands in seals and in merges. Reopening merges what is
// left; every acknowledged batch is there once, nothing else is.
func TestCrashMerging(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	ctx := context.Background()
	for round := 0; round < 10; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashMergeEnv+"=1")
		acked := catalogtest.KillAfterAcks(t, cmd, 5+round*3)
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cp := catalogtest.CheckConsistent(t, db, catalogtest.CrashLog)
		events, batches, err := sqlite.RecentRows(ctx, db)
		db.Close()
		if err != nil || events != 0 || batches != 0 {
			t.Fatalf("round %d: %d events and %d batches left in the recent tables after reopening (%v)", round, events, batches, err)
		}
		if cp.Size < acked {
			t.Fatalf("round %d: checkpoint size %d after the crash, but %d was acknowledged", round, cp.Size, acked)
		}
	}
}

// TestCrash kills a process in the middle of sealing, three times over, and checks
// that every acknowledged seal survived and that no partial batch did.
func TestCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	var acked uint64
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		acked = catalogtest.KillAfterAcks(t, cmd, 8+round*5)
		db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
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

func open(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalog.Catalog {
		return open(t, filepath.Join(t.TempDir(), "catalog.db"))
	})
}

// TestTwoHandles runs concurrent seals through two handles on one file. The in-process
// lock does not span handles, so this exercises the conditional commit: a handle that
// lost the race fails with ErrConflict, and nothing forks.
func TestTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	a, b := open(t, path), open(t, path)
	log := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	ctx := context.Background()
	catalogtest.Seal(t, a, log, "a", 2)
	_, err := a.Seal(ctx, log, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		// While a holds its lock and has read size 2, b commits.
		catalogtest.Seal(t, b, log, "b", 3)
		return &catalog.SealBatch{BatchID: "x", Events: catalogtest.MakeEvents("x", cp.Size+1, 1)}, nil
	})
	if err == nil {
		t.Fatal("a commit based on a stale checkpoint succeeded")
	}
	cp, err := a.Checkpoint(ctx, log)
	if err != nil || cp.Size != 5 {
		t.Fatalf("checkpoint %+v, %v; want size 5", cp, err)
	}
}

// TestReopen checks that committed state survives closing and reopening the file, and
// that reopening does not re-run migrations.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.db")
	log := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := catalogtest.Seal(t, db, log, "e", 7)
	db.Close()
	db = open(t, path)
	got, err := db.Checkpoint(context.Background(), log)
	if err != nil || got.Size != want.Size || got.Root != want.Root || len(got.Range) != len(want.Range) {
		t.Fatalf("after reopen: %+v, %v; want %+v", got, err, want)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no WAL file beside the database: %v", err)
	}
}

func TestOpenRejectsBadPath(t *testing.T) {
	for _, p := range []string{"", "x.db?mode=ro"} {
		if _, err := sqlite.Open(context.Background(), p, sqlite.Options{}); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	catalogtest.BenchmarkSeal(b, func(tb testing.TB) catalog.Catalog {
		return open(tb, filepath.Join(tb.TempDir(), "catalog.db"))
	})
}

func TestRetentionConformance(t *testing.T) {
	catalogtest.RunRetention(t, func(t *testing.T) catalog.RetentionCatalog {
		return open(t, filepath.Join(t.TempDir(), "catalog.db"))
	})
}
