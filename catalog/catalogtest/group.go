package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// groupOf returns a SealGroupFunc sealing n events on each checkpoint it gets (none
// where n is 0), counting the calls of its durable function into durables.
// GroupOf returns a SealGroupFunc that seals n[log] test events into each log.
func GroupOf(n map[catalog.LogID]int) catalog.SealGroupFunc {
	durables := 0
	return groupOf(n, &durables)
}

func groupOf(n map[catalog.LogID]int, durables *int) catalog.SealGroupFunc {
	return func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		out := make([]*catalog.SealBatch, len(cps))
		for i, cp := range cps {
			if n[cp.Log] == 0 {
				continue
			}
			b, err := batchFor(cp.Log.ProjectID+string(cp.Log.Stream)[:1], n[cp.Log], nil)(ctx, cp)
			if err != nil {
				return nil, nil, err
			}
			out[i] = b
		}
		return out, func() error { *durables++; return nil }, nil
	}
}

// testSealGroup: one group commits the batches of several project-streams together,
// each at its own next sequences; a stream with no batch is left as it was; a bad
// batch of one stream commits nothing of any; a stream whose lock is held elsewhere is
// skipped, not waited for.
func testSealGroup(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 2)
	durables := 0
	logs := []catalog.LogID{logB, logA, logC}
	res, err := db.SealGroup(ctx, logs, groupOf(map[catalog.LogID]int{logA: 3, logB: 1}, &durables))
	if err != nil {
		t.Fatal(err)
	}
	if durables != 1 {
		t.Fatalf("durable called %d times, want once before the commit", durables)
	}
	for i, want := range []uint64{1, 5, 0} {
		if !res[i].Locked || res[i].Checkpoint.Log != logs[i] || res[i].Checkpoint.Size != want {
			t.Fatalf("result %d: %+v, want %s locked at size %d", i, res[i], logs[i], want)
		}
		cp, err := db.Checkpoint(ctx, logs[i])
		if err != nil || cp.Size != want || cp.Root != res[i].Checkpoint.Root {
			t.Fatalf("%s: checkpoint %+v (%v), want size %d", logs[i], cp, err, want)
		}
	}
	if bs, err := db.BatchesCovering(ctx, logA, 3, 5); err != nil || len(bs) != 1 || bs[0].First != 3 || bs[0].Count != 3 {
		t.Fatalf("batches of %s: %+v, %v", logA, bs, err)
	}

	// A bad batch (wrong sequences) in one stream: nothing of the group is committed.
	bad := func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		out, durable, err := groupOf(map[catalog.LogID]int{logA: 1, logB: 1}, &durables)(ctx, cps)
		for i, cp := range cps {
			if cp.Log == logB {
				out[i].Events[0].Sequence++
			}
		}
		return out, durable, err
	}
	if _, err := db.SealGroup(ctx, []catalog.LogID{logA, logB}, bad); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("group with a bad batch: %v, want ErrConflict", err)
	}
	// A failing durable function commits nothing either.
	failing := func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		out, _, err := groupOf(map[catalog.LogID]int{logA: 1, logB: 1}, &durables)(ctx, cps)
		return out, func() error { return errors.New("object write failed") }, err
	}
	if _, err := db.SealGroup(ctx, []catalog.LogID{logA, logB}, failing); err == nil {
		t.Fatal("group whose payload objects failed committed")
	}
	for log, want := range map[catalog.LogID]uint64{logA: 5, logB: 1} {
		if cp, err := db.Checkpoint(ctx, log); err != nil || cp.Size != want {
			t.Fatalf("%s after failed groups: size %d (%v), want %d", log, cp.Size, err, want)
		}
	}
	if _, err := db.SealGroup(ctx, []catalog.LogID{logA, logA}, groupOf(nil, &durables)); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("a stream twice in one group: %v", err)
	}

	// logA's lock is held by a seal in progress: the group seals logB and skips logA.
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			close(held)
			<-release
			return nil, nil
		})
		done <- err
	}()
	<-held
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res, err = db.SealGroup(gctx, []catalog.LogID{logA, logB}, groupOf(map[catalog.LogID]int{logA: 1, logB: 2}, &durables))
	cancel()
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Locked || !res[1].Locked || res[1].Checkpoint.Size != 3 {
		t.Fatalf("group beside a held lock: %+v", res)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cp := Seal(t, db, logA, "e", 1); cp.Size != 6 {
		t.Fatalf("%s after the group: size %d, want 6", logA, cp.Size)
	}
}

// testSealGroupMany seals one event in each of many new project-streams in one group.
func testSealGroupMany(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	n := map[catalog.LogID]int{}
	var logs []catalog.LogID
	for i := range 300 {
		l := catalog.LogID{ProjectID: fmt.Sprintf("prj_g%03d", i), Stream: catalog.StreamEvents}
		logs = append(logs, l)
		n[l] = 1 + i%3
	}
	durables := 0
	res, err := db.SealGroup(ctx, logs, groupOf(n, &durables))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		if !res[i].Locked || res[i].Checkpoint.Size != uint64(n[l]) {
			t.Fatalf("%s: %+v", l, res[i])
		}
	}
	evs, err := db.QueryEvents(ctx, catalog.Query{Log: logs[299], Limit: 10})
	if err != nil || len(evs) != n[logs[299]] {
		t.Fatalf("index rows of %s: %d (%v)", logs[299], len(evs), err)
	}
}
