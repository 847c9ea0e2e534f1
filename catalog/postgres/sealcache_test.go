package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// groupFn is a SealGroupFunc committing n events to every stream after whatever its
// checkpoint holds; it records the sizes each run started from.
type groupFn struct {
	n    int
	runs [][]uint64
}

func (g *groupFn) fn(_ context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
	out := make([]*catalog.SealBatch, len(cps))
	sizes := make([]uint64, len(cps))
	for k, cp := range cps {
		sizes[k] = cp.Size
		size := cp.Size + uint64(g.n)
		prefix := fmt.Sprintf("%s.r%d.", cp.Log.ProjectID, len(g.runs))
		out[k] = &catalog.SealBatch{
			BatchID: fmt.Sprintf("b%s%d", prefix, cp.Size+1),
			Events:  catalogtest.MakeEvents(prefix, cp.Size+1, g.n),
			Root:    catalogtest.H(fmt.Sprintf("root %d", size)),
			Range:   []catalog.Hash{catalogtest.H(fmt.Sprintf("range %d", size))},
		}
	}
	g.runs = append(g.runs, sizes)
	return out, nil, nil
}

// twoHandles opens two handles on one database, as two replicas, and names two
// project-streams.
func twoHandles(t *testing.T) (a, b catalog.Catalog, logs []catalog.LogID) {
	dsn := testenv.PostgresDB(t)
	return open(t, dsn), open(t, dsn), []catalog.LogID{
		{ProjectID: "prj_a", Stream: catalog.StreamEvents},
		{ProjectID: "prj_b", Stream: catalog.StreamEvents},
	}
}

func sealGroupOK(t *testing.T, db catalog.Catalog, logs []catalog.LogID, g *groupFn) []catalog.Sealed {
	t.Helper()
	res, err := db.SealGroup(context.Background(), logs, g.fn)
	if err != nil {
		t.Fatalf("SealGroup: %v", err)
	}
	return res
}

// TestSealGroupStaleCache makes the checkpoint a handle cached go stale behind its
// back (another replica seals the stream): the next group must start from the cached
// size, find it moved, and seal again from the checkpoint read under the lock, with
// nothing of the first run written; a stream whose cached checkpoint was right is
// sealed in the same group.
func TestSealGroupStaleCache(t *testing.T) {
	a, b, logs := twoHandles(t)
	la, lb := logs[0], logs[1]
	postgres.SetChill(a.(*postgres.DB), time.Minute) // longer than the test, however slow

	first := &groupFn{n: 3}
	sealGroupOK(t, a, logs, first)
	if len(first.runs) != 1 {
		t.Fatalf("first group ran fn %d times, want 1", len(first.runs))
	}
	other := &groupFn{n: 2}
	sealGroupOK(t, b, []catalog.LogID{la}, other) // la moves to 5 behind a's back

	g := &groupFn{n: 4}
	res := sealGroupOK(t, a, logs, g)
	if want := [][]uint64{{3, 3}, {5, 3}}; fmt.Sprint(g.runs) != fmt.Sprint(want) {
		t.Fatalf("fn ran from sizes %v, want %v (the cached ones, then the ones under the lock)", g.runs, want)
	}
	if res[0].Checkpoint.Size != 9 || res[1].Checkpoint.Size != 7 || !res[0].Locked || !res[1].Locked {
		t.Fatalf("sealed %+v, want sizes 9 and 7, both locked", res)
	}
	for _, c := range []struct {
		log  catalog.LogID
		want []string
	}{
		{la, []string{"bprj_a.r0.1", "bprj_a.r0.4", "bprj_a.r1.6"}},
		{lb, []string{"bprj_b.r0.1", "bprj_b.r1.4"}},
	} {
		bs, err := a.BatchesCovering(context.Background(), c.log, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range bs {
			got = append(got, x.BatchID)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("batches of %s: %v, want %v", c.log, got, c.want)
		}
		catalogtest.CheckConsistent(t, a, c.log)
	}

	// The stream whose guess was wrong is read under the lock for a while (two
	// replicas writing it would otherwise build every tick twice): another seal
	// behind a's back costs no second run now.
	sealGroupOK(t, b, []catalog.LogID{la}, &groupFn{n: 1}) // la: 9 -> 10
	next := &groupFn{n: 1}
	sealGroupOK(t, a, logs, next)
	if len(next.runs) != 1 || next.runs[0][0] != 10 || next.runs[0][1] != 7 {
		t.Fatalf("the group after the retry ran from %v, want once from [10 7]", next.runs)
	}
	catalogtest.CheckConsistent(t, a, la)
}

// TestSealGroupCachedLockedElsewhere has another replica hold the lock of a stream
// this handle has a (still right) cached checkpoint of: the group must neither wait
// for that lock nor seal the stream (Locked false), and seal it once the lock is free.
func TestSealGroupCachedLockedElsewhere(t *testing.T) {
	a, b, logs := twoHandles(t)
	la, lb := logs[0], logs[1]
	sealGroupOK(t, a, logs, &groupFn{n: 2})

	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := b.Seal(context.Background(), la, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			close(held)
			<-release
			return nil, nil // nothing to commit: only the lock was wanted
		})
		done <- err
	}()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g := &groupFn{n: 1}
	res, err := a.SealGroup(ctx, logs, g.fn)
	close(release)
	if err != nil {
		t.Fatalf("SealGroup while another replica holds a lock: %v", err)
	}
	if res[0].Locked || !res[1].Locked || res[1].Checkpoint.Size != 3 {
		t.Fatalf("sealed %+v, want prj_a skipped and prj_b at size 3", res)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cp, err := a.Checkpoint(context.Background(), la); err != nil || cp.Size != 2 {
		t.Fatalf("checkpoint of the skipped stream: %+v, %v; want size 2", cp, err)
	}
	res = sealGroupOK(t, a, logs, &groupFn{n: 1})
	if !res[0].Locked || res[0].Checkpoint.Size != 3 || res[1].Checkpoint.Size != 4 {
		t.Fatalf("after the lock was released: %+v, want sizes 3 and 4", res)
	}
	catalogtest.CheckConsistent(t, a, la)
	catalogtest.CheckConsistent(t, a, lb)
}

// TestSealGroupRoundTrips counts what a tick costs on the wire: a group of streams
// this handle sealed before must be two round trips (BEGIN, the checkpoint UPDATE
// and the rows in one pipeline; COMMIT), whatever the number of streams; streams it
// has not seen add the locking SELECT's.
func TestSealGroupRoundTrips(t *testing.T) {
	var writes atomic.Int64
	db, err := postgres.OpenCounting(context.Background(), testenv.PostgresDB(t), &writes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	logs := make([]catalog.LogID, 5)
	for i := range logs {
		logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_%d", i), Stream: catalog.StreamEvents}
	}
	sealGroupOK(t, db, logs[:3], &groupFn{n: 2}) // creates and caches three checkpoints
	for _, c := range []struct {
		logs []catalog.LogID
		want int64
	}{
		{logs[:3], 2},
		{logs[:3], 2},
		{logs, 4}, // two streams never seen: their rows created, then locked and read first
		{logs, 2},
	} {
		writes.Store(0)
		sealGroupOK(t, db, c.logs, &groupFn{n: 3})
		if got := writes.Load(); got != c.want {
			t.Fatalf("SealGroup of %d streams: %d round trips, want %d", len(c.logs), got, c.want)
		}
	}
	for _, l := range logs {
		catalogtest.CheckConsistent(t, db, l)
	}
}
