package catalogtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

func testPublish(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	_, err := db.Publish(ctx, logA, func(context.Context, catalog.Checkpoint) error { return nil })
	wantErr(t, "Publish of a stream never sealed", err, catalog.ErrNotFound)
	Seal(t, db, logA, "e", 5)

	boom := errors.New("tile write failed")
	_, err = db.Publish(ctx, logA, func(_ context.Context, cp catalog.Checkpoint) error { return boom })
	wantErr(t, "Publish with a failing fn", err, boom)
	if cp := mustCheckpoint(t, db, logA); cp.PublishedSize != 0 {
		t.Fatalf("published size %d after a failed publish", cp.PublishedSize)
	}

	var seen catalog.Checkpoint
	cp, err := db.Publish(ctx, logA, func(_ context.Context, cp catalog.Checkpoint) error { seen = cp; return nil })
	if err != nil || seen.Size != 5 || seen.PublishedSize != 0 || seen.Root != H("root 5") || cp.PublishedSize != 5 || cp.Size != 5 {
		t.Fatalf("Publish saw %+v, returned %+v, %v", seen, cp, err)
	}
	if cp := mustCheckpoint(t, db, logA); cp.PublishedSize != 5 {
		t.Fatalf("stored published size %d, want 5", cp.PublishedSize)
	}
	if un, err := db.ListUnpublished(ctx); err != nil || len(un) != 0 {
		t.Fatalf("ListUnpublished after Publish = %+v, %v", un, err)
	}
	// Nothing new: fn runs, sees nothing to do, and nothing changes.
	cp, err = db.Publish(ctx, logA, func(_ context.Context, cp catalog.Checkpoint) error { seen = cp; return nil })
	if err != nil || seen.PublishedSize != 5 || cp.PublishedSize != 5 {
		t.Fatalf("idle Publish: saw %+v, returned %+v, %v", seen, cp, err)
	}
	// AdvancePublished and Publish agree.
	Seal(t, db, logA, "f", 3)
	if cp, err := db.AdvancePublished(ctx, logA, 7); err != nil || cp.PublishedSize != 7 {
		t.Fatalf("AdvancePublished(7) = %+v, %v", cp, err)
	}
	if cp, err := db.Publish(ctx, logA, func(_ context.Context, cp catalog.Checkpoint) error { seen = cp; return nil }); err != nil ||
		seen.PublishedSize != 7 || cp.PublishedSize != 8 {
		t.Fatalf("Publish after AdvancePublished: saw %+v, returned %+v, %v", seen, cp, err)
	}
}

// testPublishLocks checks that publishers of one project-stream are serialized, and
// that publishing waits neither for a seal in progress nor for another stream.
func testPublishLocks(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 2)
	Seal(t, db, logB, "e", 1)

	// A seal of logA is stuck inside its fn, holding the seal lock.
	inside, release := make(chan struct{}), make(chan struct{})
	sealed := make(chan error, 1)
	go func() {
		_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			close(inside)
			<-release
			return batchFor("s", 1, nil)(ctx, cp)
		})
		sealed <- err
	}()
	<-inside
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	cp, err := db.Publish(short, logA, func(context.Context, catalog.Checkpoint) error { return nil })
	cancel()
	if err != nil || cp.PublishedSize != 2 {
		t.Fatalf("Publish during a seal: %+v, %v; want published size 2 without waiting", cp, err)
	}
	close(release)
	if err := <-sealed; err != nil {
		t.Fatal(err)
	}

	// Concurrent publishers of logA run one at a time; logB is not held up.
	var in, most atomic.Int32
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.Publish(ctx, logA, func(context.Context, catalog.Checkpoint) error {
				n := in.Add(1)
				if n > most.Load() {
					most.Store(n)
				}
				<-hold
				time.Sleep(5 * time.Millisecond)
				in.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); in.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no publisher got the publish lock")
		}
	}
	if cp, err := db.Publish(ctx, logB, func(context.Context, catalog.Checkpoint) error { return nil }); err != nil || cp.PublishedSize != 1 {
		t.Fatalf("Publish of another stream while logA's publish lock is held: %+v, %v", cp, err)
	}
	close(hold)
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d publishers of one stream ran at once", most.Load())
	}
	if cp := mustCheckpoint(t, db, logA); cp.PublishedSize != 3 || cp.Size != 3 {
		t.Fatalf("after the publishers: %+v", cp)
	}
}

// testPublishGroup checks PublishGroup: one fn call for all streams in the order
// given, published sizes raised only where fn succeeded, a stream never sealed
// reported as not found, and duplicate streams refused.
func testPublishGroup(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 5)
	Seal(t, db, logB, "e", 3)
	never := catalog.LogID{ProjectID: "prj_nevergroup", Stream: catalog.StreamEvents}
	boom := errors.New("tile write failed")
	var seen []catalog.Checkpoint
	calls := 0
	out, err := db.PublishGroup(ctx, []catalog.LogID{logB, never, logA}, func(_ context.Context, cps []catalog.Checkpoint) []error {
		calls++
		seen = cps
		return []error{boom, nil, nil}
	})
	if err != nil || calls != 1 || len(seen) != 3 || len(out) != 3 {
		t.Fatalf("PublishGroup: %d calls saw %+v, returned %+v, %v", calls, seen, out, err)
	}
	if seen[0].Log != logB || seen[0].Size != 3 || seen[1].Log != never || seen[1].Size != 0 || seen[2].Log != logA || seen[2].Size != 5 {
		t.Fatalf("fn saw %+v", seen)
	}
	if !errors.Is(out[0].Err, boom) || out[0].Checkpoint.PublishedSize != 0 {
		t.Fatalf("stream whose fn failed: %+v", out[0])
	}
	if !errors.Is(out[1].Err, catalog.ErrNotFound) {
		t.Fatalf("stream never sealed: %+v", out[1])
	}
	if out[2].Err != nil || out[2].Checkpoint.PublishedSize != 5 || out[2].Checkpoint.Size != 5 {
		t.Fatalf("published stream: %+v", out[2])
	}
	if cp := mustCheckpoint(t, db, logA); cp.PublishedSize != 5 {
		t.Fatalf("stored published size of A %d, want 5", cp.PublishedSize)
	}
	if cp := mustCheckpoint(t, db, logB); cp.PublishedSize != 0 {
		t.Fatalf("stored published size of B %d after its fn failed, want 0", cp.PublishedSize)
	}
	out, err = db.PublishGroup(ctx, []catalog.LogID{logA, logB}, func(_ context.Context, cps []catalog.Checkpoint) []error {
		seen = cps
		return make([]error, len(cps))
	})
	if err != nil || seen[0].PublishedSize != 5 || seen[1].PublishedSize != 0 || out[1].Checkpoint.PublishedSize != 3 {
		t.Fatalf("second PublishGroup: saw %+v, returned %+v, %v", seen, out, err)
	}
	if un, err := db.ListUnpublished(ctx); err != nil || len(un) != 0 {
		t.Fatalf("ListUnpublished after PublishGroup = %+v, %v", un, err)
	}
	if _, err := db.PublishGroup(ctx, []catalog.LogID{logA, logA}, func(context.Context, []catalog.Checkpoint) []error {
		t.Fatal("fn ran for a group with a duplicate stream")
		return nil
	}); err == nil {
		t.Fatal("PublishGroup accepted a duplicate stream")
	}
}
