package sequencer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

func TestSealContiguousAndProvable(t *testing.T) {
	h := newHarness(t, nil)
	res := h.submitN(testLog, 700)
	seqs := make([]uint64, len(res))
	for i, r := range res {
		seqs[i] = r.Sequence
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("sequences are not 1..700: position %d holds %d", i, s)
		}
	}
	h.checkLog(testLog, res)
	// The other stream of the project is a separate tree starting at 1.
	audit := catalog.LogID{ProjectID: testLog.ProjectID, Stream: catalog.StreamProjectAudit}
	r := h.submitN(audit, 3)
	h.checkLog(audit, r)

	// Reading back returns the payloads as submitted.
	got, err := h.seq.Events(context.Background(), testLog, []uint64{1, 350, 700})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if e.Nonce == nil || tlog.Commitment(*e.Nonce, e.Payload) != e.Leaf.PayloadHash {
			t.Fatalf("event %d does not re-derive its commitment", e.Leaf.Sequence)
		}
	}
}

func TestIdempotentSignedRetries(t *testing.T) {
	h := newHarness(t, nil)
	_, key, _ := tlog.GenerateKey()
	ctx := context.Background()
	e := signedEntry(t, key, "evt_retry_1", 1)
	first, err := h.seq.Submit(ctx, testLog, e)
	if err != nil || first.Duplicate {
		t.Fatalf("first submit: %+v, %v", first, err)
	}
	again, err := h.seq.Submit(ctx, testLog, e)
	if err != nil || !again.Duplicate || again.Sequence != first.Sequence || again.LeafHash != first.LeafHash {
		t.Fatalf("retry: %+v, %v; first %+v", again, err, first)
	}
	other := signedEntry(t, key, "evt_retry_1", 2)
	if _, err := h.seq.Submit(ctx, testLog, other); !errors.Is(err, ErrIDConflict) {
		t.Fatalf("same id, other bytes: %v", err)
	}
	// Within one batch: hold the seal loop with a slow payload write, then submit the
	// same signed event twice and a conflicting one.
	remove := h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: tiles.GroupPayloadPrefix, Delay: 200 * time.Millisecond, Times: 1})
	defer remove()
	blocker := make(chan struct{})
	go func() { _, _ = h.seq.Submit(ctx, testLog, entry(9)); close(blocker) }()
	time.Sleep(50 * time.Millisecond)
	e2 := signedEntry(t, key, "evt_retry_2", 3)
	c2 := signedEntry(t, key, "evt_retry_2", 4)
	type out struct {
		r   Result
		err error
	}
	ch := make(chan out, 3)
	// Enqueue in this order while the first batch is held: the original, its retry,
	// then the conflicting reuse of the id.
	for _, x := range []Entry{e2, e2, c2} {
		go func() { r, err := h.seq.Submit(ctx, testLog, x); ch <- out{r, err} }()
		time.Sleep(20 * time.Millisecond)
	}
	var ok, dup, conflict int
	var seq uint64
	for range 3 {
		o := <-ch
		switch {
		case errors.Is(o.err, ErrIDConflict):
			conflict++
		case o.err != nil:
			t.Fatal(o.err)
		case o.r.Duplicate:
			dup++
			if seq != 0 && o.r.Sequence != seq {
				t.Fatalf("duplicate got sequence %d, original %d", o.r.Sequence, seq)
			}
			seq = o.r.Sequence
		default:
			ok++
			if seq != 0 && o.r.Sequence != seq {
				t.Fatalf("original got sequence %d, duplicate %d", o.r.Sequence, seq)
			}
			seq = o.r.Sequence
		}
	}
	<-blocker
	if ok != 1 || dup != 1 || conflict != 1 {
		t.Fatalf("ok %d, duplicates %d, conflicts %d; want 1 each", ok, dup, conflict)
	}
	h.checkLog(testLog, []Result{first})
}

func TestBackPressure(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 5; c.MaxBatch = 5 })
	remove := h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: tiles.GroupPayloadPrefix, Delay: 300 * time.Millisecond})
	ctx := context.Background()
	done := make(chan error, 20)
	for i := range 20 {
		go func() { _, err := h.seq.Submit(ctx, testLog, entry(i)); done <- err }()
	}
	var busy, sealed int
	for range 20 {
		err := <-done
		var be *BusyError
		switch {
		case errors.As(err, &be) && errors.Is(err, ErrBusy) && be.RetryAfter > 0:
			busy++
		case err == nil:
			sealed++
		default:
			t.Fatal(err)
		}
	}
	remove()
	if busy == 0 || sealed == 0 {
		t.Fatalf("busy %d, sealed %d: want some of each", busy, sealed)
	}
	cp, _ := h.db.Checkpoint(ctx, testLog)
	if cp.Size != uint64(sealed) {
		t.Fatalf("checkpoint size %d, %d sealed: a refused event was recorded", cp.Size, sealed)
	}
}

// TestFaultAtEachStep fails the store or the catalog at each step of a batch. A
// failure before the commit must fail the batch and record nothing; a failure after
// it (publishing) must not delay the acknowledgement nor the event's proof, and is
// retried until the events are published; in every case the next batch makes progress
// and the log stays whole.
func TestFaultAtEachStep(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		inject    func(h *harness) (remove func())
		committed bool // the faulted batch ends up recorded
	}{
		{"lock", func(h *harness) func() {
			h.cat.set(func(c *faultyCatalog) { c.sealErr = errBoom })
			return func() { h.cat.set(func(c *faultyCatalog) { c.sealErr = nil }) }
		}, false},
		{"payload write", func(h *harness) func() {
			return h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: tiles.GroupPayloadPrefix, Err: errBoom})
		}, false},
		{"payload write lost ack", func(h *harness) func() {
			return h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: tiles.GroupPayloadPrefix, Err: errBoom, After: true})
		}, false},
		{"commit", func(h *harness) func() {
			h.cat.set(func(c *faultyCatalog) { c.commitErr = errBoom })
			return func() { h.cat.set(func(c *faultyCatalog) { c.commitErr = nil }) }
		}, false},
		{"commit ack lost", func(h *harness) func() {
			h.cat.set(func(c *faultyCatalog) { c.lostCommits = 1 })
			return func() {}
		}, true},
		{"publish lock", func(h *harness) func() {
			h.cat.set(func(c *faultyCatalog) { c.publishErr = errBoom })
			return func() { h.cat.set(func(c *faultyCatalog) { c.publishErr = nil }) }
		}, true},
		{"entry bundle write", func(h *harness) func() {
			return h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: "prj_test/events/tile/entries/", Err: errBoom})
		}, true},
		{"hash tile write", func(h *harness) func() {
			return h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: "prj_test/events/tile/0/", Err: errBoom})
		}, true},
		{"checkpoint write", func(h *harness) func() {
			return h.store.Inject(mem.Fault{Op: mem.OpPut, Key: "prj_test/events/checkpoint", Err: errBoom})
		}, true},
		{"slow store", func(h *harness) func() {
			return h.store.Inject(mem.Fault{Key: "prj_test/", Delay: 20 * time.Millisecond})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			before := h.submitN(testLog, 10)

			remove := tc.inject(h)
			type out struct {
				r   Result
				err error
			}
			ch := make(chan out, 1)
			go func() {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				r, err := h.seq.Submit(ctx, testLog, entry(100))
				ch <- out{r, err}
			}()
			var got out
			if tc.committed {
				// Acknowledged at the commit, whatever publishing does; and while
				// publishing still fails, its inclusion proof verifies at once against
				// the committed tree, from the right edge the tiles do not hold yet.
				got = <-ch
				if got.err != nil {
					t.Fatalf("committed event not acknowledged: %v", got.err)
				}
				h.checkProof(testLog, got.r)
				remove()
			} else {
				got = <-ch
				remove()
				if !errors.Is(got.err, ErrSealFailed) {
					t.Fatalf("got %+v, %v; want ErrSealFailed", got.r, got.err)
				}
				cp, err := h.db.Checkpoint(ctx, testLog)
				if err != nil || cp.Size != 10 {
					t.Fatalf("failed batch changed the checkpoint: size %d, %v", cp.Size, err)
				}
			}
			after := h.submitN(testLog, 10)
			all := append(append(before, after...), got.r)
			if !tc.committed {
				all = all[:len(all)-1]
			}
			h.checkLog(testLog, all)
			cp, _ := h.db.Checkpoint(ctx, testLog)
			if want := uint64(len(all)); cp.Size != want || cp.PublishedSize != want {
				t.Fatalf("checkpoint size %d published %d, want %d", cp.Size, cp.PublishedSize, want)
			}
		})
	}
}

func TestForkStopsTheStream(t *testing.T) {
	h := newHarness(t, nil)
	h.submitN(testLog, 3)
	if _, err := h.seq.Materialize(context.Background(), testLog); err != nil {
		t.Fatal(err)
	}
	// Another tree's tile already sits where the next batch's tile goes.
	remove := h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: "prj_test/events/tile/0/000.p/4", Conflict: []byte("other tree")})
	defer remove()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The next event is committed, and so acknowledged; publishing it finds the
	// fork and stops the stream.
	if _, err := h.seq.Submit(ctx, testLog, entry(0)); err != nil {
		t.Fatal(err)
	}
	h.waitStopped(ctx, testLog)
	for i := range 2 {
		if _, err := h.seq.Submit(ctx, testLog, entry(i)); err == nil {
			t.Fatal("a forked stream acknowledged an event")
		}
	}
	if cp, err := h.db.Checkpoint(ctx, testLog); err != nil || cp.Size != 4 || cp.PublishedSize != 3 {
		t.Fatalf("checkpoint %+v, %v; want size 4, published 3", cp, err)
	}
}

func TestRecoverPublishesCommittedBatches(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.submitN(testLog, 5)
	if _, err := h.seq.Materialize(ctx, testLog); err != nil {
		t.Fatal(err)
	}
	// Commit a batch whose publication never happens, as a crash after COMMIT would.
	h.cat.set(func(c *faultyCatalog) { c.publishErr = errors.New("crash") })
	go func() { _, _ = h.seq.Submit(ctx, testLog, entry(7)) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cp, _ := h.db.Checkpoint(ctx, testLog)
		if cp.Size == 6 {
			if cp.PublishedSize != 5 {
				t.Fatalf("published %d", cp.PublishedSize)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("batch never committed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A second sequencer (the restarted process) recovers it.
	h.cat.set(func(c *faultyCatalog) { c.publishErr = nil })
	s2, err := New(Config{Catalog: h.db, Store: h.store, Keyring: h.keys, Origin: testOrigin, Key: h.key})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	cp, _ := h.db.Checkpoint(ctx, testLog)
	if cp.PublishedSize != 6 {
		t.Fatalf("recover left published at %d", cp.PublishedSize)
	}
	h.checkLog(testLog, nil)
}

func TestShreddedEventsStillProve(t *testing.T) {
	h := newHarness(t, nil)
	res := h.submitN(testLog, 20)
	h.keys.shred(testLog)
	got, err := h.seq.Events(context.Background(), testLog, []uint64{1, 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if e.Nonce != nil || e.Payload != nil {
			t.Fatal("shredded event still has its payload")
		}
	}
	h.checkLog(testLog, res)
}

// TestReceiveTimesNeverDecrease checks that receive times rise with the sequence when
// the clock of the next sealer is behind: a restarted process whose clock stepped
// back, and two sequencers sealing one project-stream in turn (replicas).
func TestReceiveTimesNeverDecrease(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// Clocks that run, from at; the one at t0 stays an hour behind the other while the
	// test runs.
	start := time.Now()
	clock := func(at time.Time) func() time.Time { return func() time.Time { return at.Add(time.Since(start)) } }
	h := newHarness(t, func(c *Config) { c.Now = clock(t0.Add(time.Hour)) })
	h.submitN(testLog, 5)

	// A second sequencer on the same catalog and store, its clock an hour behind.
	s2, err := New(Config{Catalog: h.db, Store: h.store, Keyring: h.keys, Origin: testOrigin, Key: h.key, Now: clock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(ctx)
	if _, err := s2.Submit(ctx, testLog, entry(100)); err != nil {
		t.Fatal(err)
	}
	// The first sequencer again (its own last batch is no longer the last one), then
	// the second.
	if _, err := h.seq.Submit(ctx, testLog, entry(101)); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Submit(ctx, testLog, entry(102)); err != nil {
		t.Fatal(err)
	}
	evs, err := h.db.QueryEvents(ctx, catalog.Query{Log: testLog, Limit: 100})
	if err != nil || len(evs) != 8 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	got, err := h.seq.Events(ctx, testLog, []uint64{1, 6, 8})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ReceivedAt.Before(evs[i-1].ReceivedAt) {
			t.Errorf("event %d received at %v, before event %d at %v", evs[i].Sequence, evs[i].ReceivedAt,
				evs[i-1].Sequence, evs[i-1].ReceivedAt)
		}
	}
	for _, e := range evs {
		if e.ReceivedAt.Before(t0.Add(time.Hour)) {
			t.Errorf("event %d received at %v, before the first sealer's clock", e.Sequence, e.ReceivedAt)
		}
	}
	for _, e := range got {
		if want := tlog.FormatTime(evs[e.Leaf.Sequence-1].ReceivedAt); e.Leaf.Timestamp != want {
			t.Errorf("leaf %d has timestamp %s, want %s", e.Leaf.Sequence, e.Leaf.Timestamp, want)
		}
	}
	// Time filters find them on the fast path: the catalog saw no time go back.
	from, to := evs[0].ReceivedAt, evs[7].ReceivedAt.Add(time.Millisecond)
	in, err := h.db.QueryEvents(ctx, catalog.Query{Log: testLog, From: from, To: to, Limit: 100})
	if err != nil || len(in) != 8 {
		t.Errorf("time filter found %d events, %v; want 8", len(in), err)
	}
}
