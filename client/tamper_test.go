package client

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

func boolPtr(b bool) *bool { return &b }

// TestCheckConsistencyHonest: a growing honest log moves the pin forward at every
// check, through the first use (empty pin), an empty proof (same size) and real proofs.
func TestCheckConsistencyHonest(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	store := NewMemoryHeadStore()
	c := newTestClient(t, f, Config{HeadStore: store})
	key := PinKey(f.srv.URL, StreamEvents)
	for _, grow := range []int{0, 1, 0, 5, 250, 1} {
		f.grow(t, tlog.StreamEvents, grow)
		sth, err := c.CheckConsistency(ctx, StreamEvents)
		if err != nil {
			t.Fatalf("after growing by %d: %v", grow, err)
		}
		pin, err := store.Load(ctx, key)
		if err != nil || pin == nil {
			t.Fatalf("pin after check: %v, %v", pin, err)
		}
		if pin.STH != *sth || pin.ServicePublicKey != f.publicKey() {
			t.Fatalf("pinned %+v, check returned %+v", pin, sth)
		}
		if want := f.trees[tlog.StreamEvents].Size(); sth.TreeSize != want {
			t.Fatalf("pinned size %d, live size %d", sth.TreeSize, want)
		}
	}
	if f.proofHits.Load() != 3 {
		t.Errorf("%d consistency proofs fetched, want 3 (one per growth from a non-empty pin)", f.proofHits.Load())
	}
	// The other stream has its own pin.
	f.grow(t, tlog.StreamProjectAudit, 2)
	sth, err := c.CheckConsistency(ctx, StreamProjectAudit)
	if err != nil || sth.Stream != tlog.StreamProjectAudit || sth.TreeSize != 2 {
		t.Fatalf("project-audit check: %+v, %v", sth, err)
	}
	if _, err := c.CheckConsistency(ctx, "audit"); err == nil {
		t.Fatal("unknown stream accepted")
	}
}

// TestTamper: every way of misbehaving raises its reason, calls OnTamper exactly once,
// poisons the client (every later call returns the same error without touching the
// network), and a fresh client with the same persisted pin raises it again.
func TestTamper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grow   int // leaves appended to the live tree after the pin
		mode   misbehaviour
		reason TamperReason
		// configured service key instead of trust on first use
		pinKey bool
	}{
		{"forked tree, same size", 0, forkSameSize, ReasonInconsistentTree, false},
		{"forked tree, grown", 4, forkGrown, ReasonInconsistentTree, false},
		{"shrunk tree", 0, shrunk, ReasonTreeShrunk, false},
		{"head signed by another key", 4, otherKeySig, ReasonBadSTHSignature, false},
		{"head signed by another key, key configured", 4, otherKeySig, ReasonBadSTHSignature, true},
		{"service key changed", 4, keyChanged, ReasonServiceKeyChanged, false},
		{"service key changed, key configured", 4, keyChanged, ReasonServiceKeyChanged, true},
		{"head of another project", 4, otherProject, ReasonBadSTHSignature, false},
		{"head of another project, same size", 0, otherProject, ReasonBadSTHSignature, false},
		{"head of the other stream", 4, otherStream, ReasonBadSTHSignature, false},
		{"proof refused with 400", 4, proofRefused, ReasonInconsistentTree, false},
		{"proof hash not hex", 4, proofBadHex, ReasonInconsistentTree, false},
		{"proof hash of 31 bytes", 4, proofShortHash, ReasonInconsistentTree, false},
		{"one proof hash too many", 4, proofExtraHash, ReasonInconsistentTree, false},
		{"one proof hash too few", 4, proofMissingHash, ReasonInconsistentTree, false},
		{"proof for other sizes", 4, proofOtherSizes, ReasonInconsistentTree, false},
		{"proof of the other stream", 4, proofOtherStream, ReasonInconsistentTree, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFakeLog(t)
			f.grow(t, tlog.StreamEvents, 10)
			store, err := NewFileHeadStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			var seen atomic.Pointer[TamperError]
			cfg := Config{HeadStore: store, OnTamper: func(e *TamperError) { calls.Add(1); seen.Store(e) }}
			if tc.pinKey {
				cfg.ServicePublicKey = f.publicKey()
			}
			c := newTestClient(t, f, cfg)
			pinned, err := c.CheckConsistency(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			f.grow(t, tlog.StreamEvents, tc.grow)
			f.setMode(tc.mode)

			_, err = c.CheckConsistency(ctx, StreamEvents)
			var te *TamperError
			if !errors.As(err, &te) || !errors.Is(err, ErrTampered) {
				t.Fatalf("got %v, want a *TamperError", err)
			}
			if te.Reason != tc.reason || te.Stream != StreamEvents || te.CurrentSTH == nil ||
				te.PinnedSTH == nil || *te.PinnedSTH != *pinned {
				t.Fatalf("tamper error %+v, want reason %s with the pinned and current heads", te, tc.reason)
			}
			if calls.Load() != 1 || seen.Load() != te {
				t.Fatalf("OnTamper called %d times", calls.Load())
			}

			// Poisoned: every call returns the same error and sends nothing.
			hits := f.rootHits.Load() + f.logHits.Load()
			calls2 := []func() error{
				func() error { _, err := c.CheckConsistency(ctx, StreamEvents); return err },
				func() error { _, err := c.CheckConsistency(ctx, StreamProjectAudit); return err },
				func() error {
					_, err := c.Log(ctx, EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}})
					return err
				},
				func() error { _, err := c.Query(ctx, QueryInput{}); return err },
				func() error { _, err := c.Verify(ctx, ""); return err },
				func() error { _, err := c.GetRoot(ctx, ""); return err },
				func() error { _, err := c.Export(ctx, ExportInput{}); return err },
				func() error { _, err := c.GetInclusionProof(ctx, InclusionProofInput{EventID: "evt_1"}); return err },
				func() error { _, err := c.GetConsistencyProof(ctx, ConsistencyProofInput{OldSize: 1}); return err },
				func() error { _, err := c.GetAnchors(ctx, "", 0); return err },
				func() error { _, err := c.VerifyInclusion(ctx, "", "evt_1"); return err },
				func() error { _, err := c.VerifyEvent(ctx, &StoredEvent{}); return err },
				c.Err,
			}
			for i, call := range calls2 {
				if err := call(); err != error(te) {
					t.Fatalf("call %d after poisoning returned %v, want the same *TamperError", i, err)
				}
			}
			if got := f.rootHits.Load() + f.logHits.Load(); got != hits {
				t.Fatalf("poisoned client sent %d requests", got-hits)
			}
			if calls.Load() != 1 {
				t.Fatalf("OnTamper called %d times", calls.Load())
			}

			// The pin did not move, so a fresh client over the same store sees it too.
			fresh := newTestClient(t, f, Config{HeadStore: store, ServicePublicKey: cfg.ServicePublicKey})
			_, err = fresh.CheckConsistency(ctx, StreamEvents)
			var te2 *TamperError
			if !errors.As(err, &te2) || te2.Reason != tc.reason || *te2.PinnedSTH != *pinned {
				t.Fatalf("fresh client: %v, want %s against the persisted pin", err, tc.reason)
			}
		})
	}
}

// TestConfiguredKeyMismatchOnFirstUse: with a configured service key, a service that
// presents another key is rejected even before anything is pinned.
func TestConfiguredKeyMismatchOnFirstUse(t *testing.T) {
	f := newFakeLog(t)
	f.grow(t, tlog.StreamEvents, 3)
	other, _, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, f, Config{ServicePublicKey: hex.EncodeToString(other)})
	_, err = c.CheckConsistency(context.Background(), "")
	var te *TamperError
	if !errors.As(err, &te) || te.Reason != ReasonServiceKeyChanged || te.PinnedSTH != nil {
		t.Fatalf("got %v, want service_key_changed with no pinned head", err)
	}
}

// TestOpportunisticTamper: a tamper found by a background check after Log poisons the
// client, calls OnTamper once, and the next Log returns it.
func TestOpportunisticTamper(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	var calls atomic.Int32
	c := newTestClient(t, f, Config{AutoVerify: boolPtr(true), AutoVerifyInterval: time.Nanosecond,
		OnTamper: func(*TamperError) { calls.Add(1) }})
	ev := EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}
	if _, err := c.Log(ctx, ev); err != nil {
		t.Fatal(err)
	}
	c.Wait() // the first check pins
	f.setMode(otherKeySig)
	for range 5 {
		_, _ = c.Log(ctx, ev)
		c.Wait()
	}
	_, err := c.Log(ctx, ev)
	var te *TamperError
	if !errors.As(err, &te) || te.Reason != ReasonBadSTHSignature {
		t.Fatalf("Log after a background tamper: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("OnTamper called %d times, want 1", calls.Load())
	}
}

// TestTransportFailureRetried: a check that cannot reach the service pins nothing, is
// not a tamper, and a later interaction retries it.
func TestTransportFailureRetried(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"503", "drop"} {
		t.Run(how, func(t *testing.T) {
			f := newFakeLog(t)
			f.grow(t, tlog.StreamEvents, 2)
			store := NewMemoryHeadStore()
			var checkErrs atomic.Int32
			c := newTestClient(t, f, Config{HeadStore: store, AutoVerify: boolPtr(true), AutoVerifyInterval: time.Nanosecond,
				OnCheckError: func(Stream, error) { checkErrs.Add(1) }})
			key := PinKey(f.srv.URL, StreamEvents)

			// Explicit check: an API error, nothing pinned.
			f.setRootFail(how)
			_, err := c.CheckConsistency(ctx, "")
			var ae *APIError
			if !errors.As(err, &ae) || errors.Is(err, ErrTampered) {
				t.Fatalf("explicit check: %v, want an *APIError", err)
			}
			if pin, _ := store.Load(ctx, key); pin != nil {
				t.Fatalf("a failed check pinned %+v", pin)
			}

			// Opportunistic check: swallowed, then retried by the next call.
			ev := EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}
			if _, err := c.Log(ctx, ev); err != nil {
				t.Fatalf("Log during a failing check: %v", err)
			}
			c.Wait()
			if pin, _ := store.Load(ctx, key); pin != nil || checkErrs.Load() != 1 || c.Err() != nil {
				t.Fatalf("after a failed background check: pin %+v, %d check errors, poison %v", pin, checkErrs.Load(), c.Err())
			}
			f.setRootFail("")
			if _, err := c.Query(ctx, QueryInput{}); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			if pin, _ := store.Load(ctx, key); pin == nil || pin.STH.TreeSize != 3 {
				t.Fatalf("the retry did not pin the live head: %+v", pin)
			}
		})
	}
}

// TestOpportunisticThrottle: within the interval only the first interaction checks,
// and concurrent callers never have more than one check of a stream in flight.
func TestOpportunisticThrottle(t *testing.T) {
	ctx := context.Background()
	ev := EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}

	f := newFakeLog(t)
	c := newTestClient(t, f, Config{AutoVerify: boolPtr(true), AutoVerifyInterval: time.Hour})
	for range 20 {
		if _, err := c.Log(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	c.Wait()
	if got := f.rootHits.Load(); got != 1 {
		t.Fatalf("%d checks within one interval, want 1", got)
	}

	f2 := newFakeLog(t)
	f2.rootDelay = 20 * time.Millisecond
	c2 := newTestClient(t, f2, Config{AutoVerify: boolPtr(true), AutoVerifyInterval: time.Nanosecond})
	done := make(chan error)
	for range 8 {
		go func() {
			for range 10 {
				if _, err := c2.Log(ctx, ev); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c2.Wait()
	if f2.maxInflight.Load() != 1 || f2.rootHits.Load() < 1 {
		t.Fatalf("%d checks, at most %d in flight; want at least 1, at most 1", f2.rootHits.Load(), f2.maxInflight.Load())
	}

	f3 := newFakeLog(t)
	c3 := newTestClient(t, f3, Config{AutoVerify: boolPtr(false)})
	for range 3 {
		_, _ = c3.Log(ctx, ev)
	}
	c3.Wait()
	if f3.rootHits.Load() != 0 {
		t.Fatal("AutoVerify off still checked")
	}
}

// TestVerifyReceipt: receipts verify under the pinned key (pinning one first when
// needed); a receipt signed under another key is service_key_changed.
func TestVerifyReceipt(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	f.grow(t, tlog.StreamEvents, 4)
	c := newTestClient(t, f, Config{})
	rec, err := c.Verify(ctx, "")
	if err != nil || !rec.Valid || rec.TreeSize != 4 || rec.ServicePublicKey != f.publicKey() {
		t.Fatalf("Verify: %+v, %v", rec, err)
	}
	if f.rootHits.Load() != 1 {
		t.Fatalf("Verify with nothing pinned should pin first (%d /root)", f.rootHits.Load())
	}
	f.setMode(keyChanged)
	_, err = c.Verify(ctx, "")
	var te *TamperError
	if !errors.As(err, &te) || te.Reason != ReasonServiceKeyChanged {
		t.Fatalf("receipt under another key: %v", err)
	}
}

// TestOpportunisticOffPath: Log and Query return while their background check is
// still blocked on the service; the check completes afterwards and pins.
func TestOpportunisticOffPath(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	gate := make(chan struct{})
	f.rootGate = gate
	store := NewMemoryHeadStore()
	c := newTestClient(t, f, Config{HeadStore: store, AutoVerify: boolPtr(true), AutoVerifyInterval: time.Nanosecond})
	for range 3 {
		if _, err := c.Log(ctx, EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Query(ctx, QueryInput{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every call above returned although the one check they started cannot finish.
	if pin, _ := store.Load(ctx, PinKey(f.srv.URL, StreamEvents)); pin != nil {
		t.Fatal("pinned before the check could fetch the head")
	}
	close(gate)
	c.Wait()
	if pin, _ := store.Load(ctx, PinKey(f.srv.URL, StreamEvents)); pin == nil || f.rootHits.Load() != 1 {
		t.Fatalf("after release: pin %+v, %d checks", pin, f.rootHits.Load())
	}
}

// TestCloseStopsChecks: Close cancels a check in flight and starts no more.
func TestCloseStopsChecks(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	f.rootDelay = time.Hour // cancelled by Close long before
	c := newTestClient(t, f, Config{AutoVerify: boolPtr(true), AutoVerifyInterval: time.Nanosecond})
	if _, err := c.Log(ctx, EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}); err != nil {
		t.Fatal(err)
	}
	for f.rootHits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Log(ctx, EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if f.rootHits.Load() != 1 {
		t.Fatalf("%d checks, want 1 (none after Close)", f.rootHits.Load())
	}
}

// TestKeyTrustedOncePerService: the first use of a second stream trusts the key pinned
// for the first, so a key change between them is service_key_changed.
func TestKeyTrustedOncePerService(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	c := newTestClient(t, f, Config{})
	if _, err := c.CheckConsistency(ctx, StreamEvents); err != nil {
		t.Fatal(err)
	}
	f.setMode(keyChanged)
	_, err := c.CheckConsistency(ctx, StreamProjectAudit)
	var te *TamperError
	if !errors.As(err, &te) || te.Reason != ReasonServiceKeyChanged || te.Stream != StreamProjectAudit {
		t.Fatalf("got %v, want service_key_changed on project-audit", err)
	}
}

// TestTamperFirstUse: a head validly signed for another stream, or for another project
// than the configured one or the one pinned for the service's other stream, is
// bad_sth_signature even when nothing is pinned for the stream yet.
func TestTamperFirstUse(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		mode    misbehaviour
		project string // Config.ProjectID
		sibling bool   // pin the project-audit stream honestly first
	}{
		{"head of the other stream", otherStream, "", false},
		{"head of another project than the configured one", otherProject, "prj_fake", false},
		{"head of another project than the other stream's pin", otherProject, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeLog(t)
			f.grow(t, tlog.StreamEvents, 3)
			f.grow(t, tlog.StreamProjectAudit, 2)
			c := newTestClient(t, f, Config{ProjectID: tc.project})
			if tc.sibling {
				if _, err := c.CheckConsistency(ctx, StreamProjectAudit); err != nil {
					t.Fatal(err)
				}
			}
			f.setMode(tc.mode)
			_, err := c.CheckConsistency(ctx, StreamEvents)
			var te *TamperError
			if !errors.As(err, &te) || te.Reason != ReasonBadSTHSignature || te.PinnedSTH != nil || te.CurrentSTH == nil {
				t.Fatalf("got %v, want bad_sth_signature with no pinned head", err)
			}
			if c.Err() != error(te) {
				t.Fatalf("not poisoned: %v", c.Err())
			}
		})
	}
	// Without a configured project or any pin, the first head's project is trusted,
	// like the service key.
	f := newFakeLog(t)
	f.setMode(otherProject)
	c := newTestClient(t, f, Config{})
	if sth, err := c.CheckConsistency(ctx, StreamEvents); err != nil || sth.ProjectID != "prj_other" {
		t.Fatalf("first use: %+v, %v", sth, err)
	}
}

// TestProofFailuresNotTamper: a consistency proof that cannot be had (auth, rate limit,
// server error, transport failure, a body that is not the documented JSON) is an error
// that pins nothing and does not poison; the next check proves the growth and pins.
func TestProofFailuresNotTamper(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"401", "403", "404", "429", "500", "502", "503", "drop", "html"} {
		t.Run(how, func(t *testing.T) {
			f := newFakeLog(t)
			f.grow(t, tlog.StreamEvents, 10)
			store := NewMemoryHeadStore()
			c := newTestClient(t, f, Config{HeadStore: store})
			if _, err := c.CheckConsistency(ctx, StreamEvents); err != nil {
				t.Fatal(err)
			}
			f.grow(t, tlog.StreamEvents, 4)
			f.setProofFail(how)
			_, err := c.CheckConsistency(ctx, StreamEvents)
			var ae *APIError
			switch {
			case errors.Is(err, ErrTampered) || c.Err() != nil:
				t.Fatalf("%s poisoned the client: %v", how, err)
			case how == "html" && !errors.Is(err, ErrUnexpectedResponse):
				t.Fatalf("a 200 that is not JSON: %v, want ErrUnexpectedResponse", err)
			case how != "html" && !errors.As(err, &ae):
				t.Fatalf("%s: %v, want an *APIError", how, err)
			case how != "html" && how != "drop" && strconv.Itoa(ae.Status) != how:
				t.Fatalf("%s: status %d", how, ae.Status)
			}
			if pin, _ := store.Load(ctx, PinKey(f.srv.URL, StreamEvents)); pin.STH.TreeSize != 10 {
				t.Fatalf("a failed check moved the pin to %d", pin.STH.TreeSize)
			}
			f.setProofFail("")
			if sth, err := c.CheckConsistency(ctx, StreamEvents); err != nil || sth.TreeSize != 14 {
				t.Fatalf("after the failure cleared: %+v, %v", sth, err)
			}
		})
	}
}
