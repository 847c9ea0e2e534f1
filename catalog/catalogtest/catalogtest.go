// Package catalogtest is the conformance suite every catalog driver passes: Run exercises
// a driver through the catalog.Catalog method set against a real database, and
// SealRace checks that two handles on one database (two pools, as two replicas would
// have) serialize seals of one project-stream.
package catalogtest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// Open returns a fresh, empty catalog for one test; the driver's test registers its
// cleanup.
type Open func(t *testing.T) catalog.Catalog

// Run runs the whole suite, one parallel subtest per behaviour, each on a fresh catalog.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, catalog.Catalog)
	}{
		{"SealAppends", testSealAppends},
		{"SealFuncError", testSealFuncError},
		{"SealNothing", testSealNothing},
		{"SealWrongSequence", testSealWrongSequence},
		{"SealDuplicateID", testSealDuplicateID},
		{"SealStreamsIndependent", testSealStreamsIndependent},
		{"SealLockScope", testSealLockScope},
		{"SealFuncUsesCatalog", testSealFuncUsesCatalog},
		{"SealConcurrent", func(t *testing.T, db catalog.Catalog) { SealRace(t, db, db) }},
		{"SealGroup", testSealGroup},
		{"SealGroupMany", testSealGroupMany},
		{"PublishedSize", testPublishedSize},
		{"Publish", testPublish},
		{"PublishLocks", testPublishLocks},
		{"PublishGroup", testPublishGroup},
		{"BatchesCovering", testBatchesCovering},
		{"BatchPayloadSegment", testBatchPayloadSegment},
		{"EventsByID", testEventsByID},
		{"QueryFilters", testQueryFilters},
		{"QueryEntity", testQueryEntity},
		{"QueryPagination", testQueryPagination},
		{"EventLeaves", testEventLeaves},
		{"Projects", testProjects},
		{"ProjectRateLimit", testProjectRateLimit},
		{"APIKeys", testAPIKeys},
		{"Members", testMembers},
		{"SigningKeys", testSigningKeys},
		{"Retention", testRetention},
		{"LegalHolds", testLegalHolds},
		{"DataKeys", testDataKeys},
		{"TreeHeads", testTreeHeads},
		{"Anchor", testAnchor},
		{"PublicRead", testPublicRead},
		{"ControlGeneration", testControlGeneration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each subtest has its own database, so they can overlap their fsyncs.
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// H returns a deterministic hash of s, for test values.
func H(s string) catalog.Hash { return sha256.Sum256([]byte(s)) }

// Base is the receive time of sequence 0 in MakeEvents: event seq is received seq
// seconds later.
var Base = time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC)

// MakeEvents returns n index rows from sequence first on, with the id prefix prefix and
// field values cycling so that every filter matches a known subset:
// action "act.<seq%3>", status success/failed alternating, actor user:u<seq%5>,
// target doc:d<seq%4> except every seventh event, which has none.
func MakeEvents(prefix string, first uint64, n int) []catalog.Event {
	evs := make([]catalog.Event, n)
	for i := range evs {
		seq := first + uint64(i)
		e := catalog.Event{
			Sequence:    seq,
			ID:          fmt.Sprintf("%s%d", prefix, seq),
			ReceivedAt:  Base.Add(time.Duration(seq) * time.Second),
			Action:      fmt.Sprintf("act.%d", seq%3),
			Status:      [...]string{"success", "failed"}[seq%2],
			ActorType:   "user",
			ActorID:     fmt.Sprintf("u%d", seq%5),
			PayloadHash: H(fmt.Sprintf("payload %s%d", prefix, seq)),
			LeafHash:    H(fmt.Sprintf("leaf %s%d", prefix, seq)),
		}
		if seq%7 != 0 {
			e.TargetType, e.TargetID = "doc", fmt.Sprintf("d%d", seq%4)
		}
		evs[i] = e
	}
	return evs
}

// batchFor returns a SealFunc committing n events after whatever the checkpoint holds,
// recording what it saw in *seen when seen is non-nil.
func batchFor(prefix string, n int, seen *catalog.Checkpoint) catalog.SealFunc {
	return func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		if seen != nil {
			*seen = cp
		}
		size := cp.Size + uint64(n)
		return &catalog.SealBatch{
			BatchID: fmt.Sprintf("b%s%d", prefix, cp.Size+1),
			Events:  MakeEvents(prefix, cp.Size+1, n),
			Root:    H(fmt.Sprintf("root %d", size)),
			Range:   []catalog.Hash{H(fmt.Sprintf("range %d a", size)), H(fmt.Sprintf("range %d b", size))},
		}, nil
	}
}

// Seal commits n events to log and returns the new checkpoint, failing the test on error.
func Seal(t testing.TB, db catalog.Catalog, log catalog.LogID, prefix string, n int) catalog.Checkpoint {
	t.Helper()
	cp, err := db.Seal(context.Background(), log, batchFor(prefix, n, nil))
	if err != nil {
		t.Fatalf("Seal(%s, %d events): %v", log, n, err)
	}
	return cp
}

var (
	logA = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	logB = catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamEvents}
	logC = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamProjectAudit}
)

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func mustCheckpoint(t *testing.T, db catalog.Catalog, log catalog.LogID) catalog.Checkpoint {
	t.Helper()
	cp, err := db.Checkpoint(ctxT(t), log)
	if err != nil {
		t.Fatalf("Checkpoint(%s): %v", log, err)
	}
	return cp
}

func testSealAppends(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	_, err := db.Checkpoint(ctx, logA)
	wantErr(t, "Checkpoint of a new stream", err, catalog.ErrNotFound)

	var seen catalog.Checkpoint
	cp, err := db.Seal(ctx, logA, batchFor("e", 3, &seen))
	if err != nil {
		t.Fatal(err)
	}
	if seen.Size != 0 || seen.Log != logA || seen.Root != (catalog.Hash{}) || len(seen.Range) != 0 {
		t.Fatalf("first seal saw %+v, want an empty checkpoint of %s", seen, logA)
	}
	if cp.Size != 3 || cp.Root != H("root 3") || len(cp.Range) != 2 || cp.Range[1] != H("range 3 b") {
		t.Fatalf("Seal returned %+v", cp)
	}
	stored := mustCheckpoint(t, db, logA)
	if stored.Size != 3 || stored.Root != cp.Root || len(stored.Range) != 2 || stored.Range[0] != H("range 3 a") ||
		stored.PublishedSize != 0 || stored.UpdatedAt.IsZero() || stored.CreatedAt.IsZero() {
		t.Fatalf("stored checkpoint %+v", stored)
	}

	cp, err = db.Seal(ctx, logA, batchFor("e", 2, &seen))
	if err != nil {
		t.Fatal(err)
	}
	if seen.Size != 3 || seen.Root != H("root 3") || cp.Size != 5 {
		t.Fatalf("second seal saw size %d, returned %d", seen.Size, cp.Size)
	}
	bs, err := db.BatchesCovering(ctx, logA, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].First != 1 || bs[0].Count != 3 || bs[0].BatchID != "be1" ||
		bs[1].First != 4 || bs[1].Count != 2 || bs[1].BatchID != "be4" || bs[1].Log != logA || bs[1].CreatedAt.IsZero() {
		t.Fatalf("batches %+v", bs)
	}
	want := MakeEvents("e", 1, 5)
	for _, w := range want {
		got, err := db.EventByID(ctx, logA, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Fatalf("EventByID(%s) = %+v, want %+v", w.ID, got, w)
		}
		if seq, err := db.EventSequence(ctx, logA, w.ID); err != nil || seq != w.Sequence {
			t.Fatalf("EventSequence(%s) = %d, %v; want %d", w.ID, seq, err, w.Sequence)
		}
	}
	_, err = db.EventByID(ctx, logA, "nope")
	wantErr(t, "EventByID(unknown)", err, catalog.ErrNotFound)
	_, err = db.EventByID(ctx, logB, "e1")
	wantErr(t, "EventByID in another project", err, catalog.ErrNotFound)
	_, err = db.EventSequence(ctx, logA, "nope")
	wantErr(t, "EventSequence(unknown)", err, catalog.ErrNotFound)
	_, err = db.EventSequence(ctx, logB, "e1")
	wantErr(t, "EventSequence in another project", err, catalog.ErrNotFound)
	_, err = db.EventSequence(ctx, catalog.LogID{ProjectID: "prj_neversealed", Stream: catalog.StreamEvents}, "e1")
	wantErr(t, "EventSequence in a project-stream never sealed", err, catalog.ErrNotFound)
}

func testSealFuncError(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 2)
	boom := errors.New("payload write failed")
	_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		return nil, boom
	})
	wantErr(t, "Seal with a failing fn", err, boom)
	if cp := mustCheckpoint(t, db, logA); cp.Size != 2 {
		t.Fatalf("size after a failed seal = %d, want 2", cp.Size)
	}
	// The lock was released: the next seal goes through.
	if cp := Seal(t, db, logA, "e", 1); cp.Size != 3 {
		t.Fatalf("size = %d, want 3", cp.Size)
	}
}

func testSealNothing(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	for _, b := range []*catalog.SealBatch{nil, {BatchID: "x"}} {
		cp, err := db.Seal(ctx, logA, func(context.Context, catalog.Checkpoint) (*catalog.SealBatch, error) { return b, nil })
		if err != nil || cp.Size != 0 {
			t.Fatalf("empty seal: %+v, %v", cp, err)
		}
	}
	bs, err := db.BatchesCovering(ctx, logA, 1, 100)
	if err != nil || len(bs) != 0 {
		t.Fatalf("batches after empty seals: %v, %v", bs, err)
	}
	_, err = db.Seal(ctx, catalog.LogID{ProjectID: "prj_a", Stream: "project-audit"}, batchFor("e", 1, nil))
	wantErr(t, "Seal of the API spelling of a stream", err, catalog.ErrInvalid)
}

func testSealWrongSequence(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 2)
	bad := func(mutate func(*catalog.SealBatch)) error {
		_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			b, _ := batchFor("x", 3, nil)(ctx, cp)
			mutate(b)
			return b, nil
		})
		return err
	}
	wantErr(t, "gap", bad(func(b *catalog.SealBatch) { b.Events[1].Sequence++ }), catalog.ErrConflict)
	wantErr(t, "restart at 1", bad(func(b *catalog.SealBatch) {
		for i := range b.Events {
			b.Events[i].Sequence = uint64(i + 1)
		}
	}), catalog.ErrConflict)
	wantErr(t, "no batch id", bad(func(b *catalog.SealBatch) { b.BatchID = "" }), catalog.ErrInvalid)
	wantErr(t, "no receive time", bad(func(b *catalog.SealBatch) { b.Events[2].ReceivedAt = time.Time{} }), catalog.ErrInvalid)
	wantErr(t, "same id twice", bad(func(b *catalog.SealBatch) { b.Events[2].ID = b.Events[0].ID }), catalog.ErrExists)
	if cp := mustCheckpoint(t, db, logA); cp.Size != 2 || cp.Root != H("root 2") {
		t.Fatalf("checkpoint after rejected seals: %+v", cp)
	}
}

func testSealDuplicateID(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 3)
	_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		b, _ := batchFor("n", 3, nil)(ctx, cp)
		b.Events[1].ID = "e2" // sealed in the first batch
		return b, nil
	})
	wantErr(t, "Seal re-using a committed event id", err, catalog.ErrExists)
	cp := mustCheckpoint(t, db, logA)
	bs, berr := db.BatchesCovering(ctx, logA, 1, 100)
	if cp.Size != 3 || berr != nil || len(bs) != 1 {
		t.Fatalf("after a failed seal: checkpoint %+v, batches %v (%v); want the first batch only", cp, bs, berr)
	}
	if _, err := db.EventByID(ctx, logA, "n4"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("an index row of the failed seal exists: %v", err)
	}
	// The same through a large batch (drivers may insert those another way).
	_, err = db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		b, _ := batchFor("n", 1000, nil)(ctx, cp)
		b.Events[999].ID = "e1"
		return b, nil
	})
	wantErr(t, "a large seal re-using a committed event id", err, catalog.ErrExists)
	if cp := mustCheckpoint(t, db, logA); cp.Size != 3 {
		t.Fatalf("size %d after a failed large seal, want 3", cp.Size)
	}
	if _, err := db.EventByID(ctx, logA, "n4"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("an index row of the failed large seal exists: %v", err)
	}
}

func testSealStreamsIndependent(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 3)
	Seal(t, db, logB, "e", 2) // the same event ids, another project
	Seal(t, db, logC, "e", 1) // and another stream of project a
	for log, size := range map[catalog.LogID]uint64{logA: 3, logB: 2, logC: 1} {
		if cp := mustCheckpoint(t, db, log); cp.Size != size {
			t.Fatalf("%s: size %d, want %d", log, cp.Size, size)
		}
	}
	e, err := db.EventByID(ctx, logC, "e1")
	if err != nil || e.Sequence != 1 {
		t.Fatalf("EventByID in project_audit: %+v, %v", e, err)
	}
	if _, err := db.EventByID(ctx, logC, "e2"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("e2 leaked into another stream: %v", err)
	}
}

// testSealLockScope checks that a seal holds its project-stream's lock for the whole of
// fn, and only that project-stream's.
func testSealLockScope(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			close(inside)
			<-release
			return batchFor("e", 2, nil)(ctx, cp)
		})
		done <- err
	}()
	<-inside
	// Another project-stream is not blocked.
	Seal(t, db, logB, "e", 1)
	// The same one is: a seal that gives up waiting commits nothing.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := db.Seal(short, logA, batchFor("x", 1, nil))
	cancel()
	if err == nil {
		t.Fatal("a second seal of a locked project-stream went through")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var seen catalog.Checkpoint
	if _, err := db.Seal(ctx, logA, batchFor("e", 1, &seen)); err != nil || seen.Size != 2 {
		t.Fatalf("seal after the lock holder: saw size %d, %v", seen.Size, err)
	}
}

// testSealFuncUsesCatalog checks what the sequencer does inside a SealFunc: look up
// the batch's ids (idempotent retries) and create a data key, through the same handle.
func testSealFuncUsesCatalog(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 3)
	_, err := db.Seal(ctx, logA, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		known, err := db.EventsByID(ctx, logA, []string{"e2", "e4"})
		if err != nil {
			return nil, err
		}
		if len(known) != 1 || known["e2"].Sequence != 2 {
			return nil, fmt.Errorf("EventsByID under the lock = %v", known)
		}
		if _, err := db.InsertDataKey(ctx, catalog.DataKey{Log: logA, Epoch: "2026-11", KeyID: "k1", KEKID: "kek", Wrapped: []byte("w")}); err != nil {
			return nil, err
		}
		return batchFor("e", 2, nil)(ctx, cp)
	})
	if err != nil {
		t.Fatal(err)
	}
	if cp := mustCheckpoint(t, db, logA); cp.Size != 5 {
		t.Fatalf("size %d, want 5", cp.Size)
	}
}

// SealRace seals the same project-streams from goroutines spread over dbs (handles on one
// database: the same handle twice, or two pools as two replicas would have) and checks
// that sequences come out contiguous, batches do not overlap and the checkpoint counts
// every event exactly once.
func SealRace(t *testing.T, dbs ...catalog.Catalog) {
	ctx := ctxT(t)
	const (
		workers = 6
		seals   = 8
	)
	logs := []catalog.LogID{logA, logB}
	var wg sync.WaitGroup
	errs := make(chan error, workers*seals*len(logs))
	for w := 0; w < workers; w++ {
		db := dbs[w%len(dbs)]
		for _, log := range logs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := 0; s < seals; s++ {
					n := 1 + (w+s)%4
					_, err := db.Seal(ctx, log, func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
						b, _ := batchFor(fmt.Sprintf("w%d.", w), n, nil)(ctx, cp)
						b.BatchID = fmt.Sprintf("w%d-s%d", w, s)
						// Unique ids across workers, sequences from the checkpoint.
						for i := range b.Events {
							b.Events[i].ID = fmt.Sprintf("w%d-s%d-%d", w, s, i)
						}
						return b, nil
					})
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var total uint64
	for w := 0; w < workers; w++ {
		for s := 0; s < seals; s++ {
			total += uint64(1 + (w+s)%4)
		}
	}
	for _, log := range logs {
		cp := mustCheckpoint(t, dbs[0], log)
		if cp.Size != total {
			t.Fatalf("%s: size %d, want %d", log, cp.Size, total)
		}
		bs, err := dbs[len(dbs)-1].BatchesCovering(ctx, log, 1, total)
		if err != nil {
			t.Fatal(err)
		}
		next := uint64(1)
		for _, b := range bs {
			if b.First != next {
				t.Fatalf("%s: batch %s starts at %d, want %d", log, b.BatchID, b.First, next)
			}
			next = b.End()
		}
		if next != total+1 || len(bs) != workers*seals {
			t.Fatalf("%s: %d batches end at %d, want %d ending at %d", log, len(bs), next, workers*seals, total+1)
		}
		evs, err := dbs[0].QueryEvents(ctx, catalog.Query{Log: log, Limit: catalog.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(evs)) != total {
			t.Fatalf("%s: %d index rows, want %d", log, len(evs), total)
		}
		for i, e := range evs {
			if e.Sequence != uint64(i+1) {
				t.Fatalf("%s: row %d has sequence %d", log, i, e.Sequence)
			}
		}
	}
}

func testPublishedSize(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	_, err := db.AdvancePublished(ctx, logA, 1)
	wantErr(t, "AdvancePublished of an unknown stream", err, catalog.ErrNotFound)
	Seal(t, db, logA, "e", 5)
	Seal(t, db, logB, "e", 2)
	Seal(t, db, logC, "e", 1)
	un, err := db.ListUnpublished(ctx)
	if err != nil || len(un) != 3 || un[0].Log != logA || un[1].Log != logC || un[2].Log != logB {
		t.Fatalf("ListUnpublished = %+v, %v", un, err)
	}
	cp, err := db.AdvancePublished(ctx, logA, 3)
	if err != nil || cp.PublishedSize != 3 || cp.Size != 5 {
		t.Fatalf("AdvancePublished(3) = %+v, %v", cp, err)
	}
	cp, err = db.AdvancePublished(ctx, logA, 2) // a slower replica: never backwards
	if err != nil || cp.PublishedSize != 3 {
		t.Fatalf("AdvancePublished(2) = %+v, %v; want published size 3", cp, err)
	}
	_, err = db.AdvancePublished(ctx, logA, 6)
	wantErr(t, "AdvancePublished beyond the committed size", err, catalog.ErrConflict)
	if cp := mustCheckpoint(t, db, logA); cp.PublishedSize != 3 {
		t.Fatalf("published size %d after a rejected advance", cp.PublishedSize)
	}
	for _, log := range []catalog.LogID{logA, logB} {
		cp := mustCheckpoint(t, db, log)
		if _, err := db.AdvancePublished(ctx, log, cp.Size); err != nil {
			t.Fatal(err)
		}
	}
	un, err = db.ListUnpublished(ctx)
	if err != nil || len(un) != 1 || un[0].Log != logC || un[0].Size != 1 || un[0].PublishedSize != 0 {
		t.Fatalf("ListUnpublished = %+v, %v", un, err)
	}
	// Racing publishers end at the largest size.
	Seal(t, db, logA, "f", 100)
	var wg sync.WaitGroup
	for s := uint64(6); s <= 105; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := db.AdvancePublished(ctx, logA, s); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if cp := mustCheckpoint(t, db, logA); cp.PublishedSize != 105 {
		t.Fatalf("published size %d after racing advances, want 105", cp.PublishedSize)
	}
}

func testBatchesCovering(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	for _, n := range []int{3, 1, 4, 2} { // batches [1,3] [4] [5,8] [9,10]
		Seal(t, db, logA, "e", n)
	}
	Seal(t, db, logB, "e", 20)
	for _, tc := range []struct {
		first, last uint64
		firsts      []uint64
	}{
		{1, 10, []uint64{1, 4, 5, 9}},
		{2, 2, []uint64{1}},
		{3, 3, []uint64{1}},
		{3, 4, []uint64{1, 4}},
		{4, 4, []uint64{4}},
		{6, 9, []uint64{5, 9}},
		{8, 8, []uint64{5}},
		{10, 1000, []uint64{9}},
		{11, 20, nil},
		{7, 2, nil},
		{0, 1, []uint64{1}},
	} {
		bs, err := db.BatchesCovering(ctx, logA, tc.first, tc.last)
		if err != nil {
			t.Fatal(err)
		}
		var firsts []uint64
		for _, b := range bs {
			firsts = append(firsts, b.First)
		}
		if fmt.Sprint(firsts) != fmt.Sprint(tc.firsts) {
			t.Errorf("BatchesCovering(%d, %d) starts at %v, want %v", tc.first, tc.last, firsts, tc.firsts)
		}
	}
}
