package siem

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tlog"
)

// The runner is tested over the real stack: the SQLite catalog, an in-memory object
// store, the key ring, the sequencer and the control plane; receivers are real TLS
// servers on loopback.

type stack struct {
	t       *testing.T
	ctx     context.Context
	db      *sqlite.DB
	seq     *sequencer.Sequencer
	ctl     *control.Service
	admin   *Admin
	kek     keyring.Wrapper
	project string
}

var operator = control.Actor{Type: "operator", ID: "alice"}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	seq, _ := stacktest.Sequencer(t, db, "siem.test", nil)
	s := &stack{t: t, ctx: ctx, db: db, seq: seq, ctl: control.New(db, seq, nil), kek: stacktest.KEK(t)}
	s.admin = NewAdmin(db, s.ctl, seq, s.kek)
	p, err := s.ctl.CreateProject(ctx, operator, "siem")
	if err != nil {
		t.Fatal(err)
	}
	s.project = p.ID
	return s
}

// seal seals n events in the project's events stream, in order.
func (s *stack) seal(n int) {
	s.t.Helper()
	log := catalog.LogID{ProjectID: s.project, Stream: catalog.StreamEvents}
	es := make([]sequencer.Entry, n)
	for i := range es {
		payload, err := tlog.Canonicalize([]byte(fmt.Sprintf(`{"action":"document.created","actor":{"type":"user","id":"u%d"},"status":"success"}`, i)))
		if err != nil {
			s.t.Fatal(err)
		}
		es[i] = sequencer.Entry{Payload: payload, Index: sequencer.Index{Action: "document.created", Status: "success", ActorType: "user", ActorID: fmt.Sprint("u", i)}}
	}
	_, errs := s.seq.SubmitMany(s.ctx, log, es)
	for _, err := range errs {
		if err != nil {
			s.t.Fatal(err)
		}
	}
}

// runner starts a runner with fast test timings; it stops at test end (or by the
// returned cancel).
func (s *stack) runner(owner string, mod func(*RunnerConfig)) context.CancelFunc {
	s.t.Helper()
	cfg := RunnerConfig{Catalog: s.db, Source: s.seq, KEK: s.kek, Owner: owner, Poll: 20 * time.Millisecond,
		LeaseTTL: 5 * time.Second, BatchSize: 40, MaxAttempts: 50, BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewRunner(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stop := func() { cancel(); <-done }
	s.t.Cleanup(stop)
	return stop
}

func caPEM(srv *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// received is what a receiver got, one entry per accepted request, in order.
type received struct {
	mu      sync.Mutex
	batches [][]uint64
	cond    chan struct{}
}

func newReceived() *received { return &received{cond: make(chan struct{}, 1)} }

func (r *received) add(seqs []uint64) {
	r.mu.Lock()
	r.batches = append(r.batches, seqs)
	r.mu.Unlock()
	select {
	case r.cond <- struct{}{}:
	default:
	}
}

// distinct returns the distinct sequences received, in first-arrival order.
func (r *received) distinct() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.distinctLocked()
}

// waitFor waits until sequences 1..n arrived.
func (r *received) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for len(r.distinct()) < n {
		select {
		case <-r.cond:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("received %d distinct events, want %d", len(r.distinct()), n)
		}
	}
}

// checkOrder asserts at-least-once delivery in order with no gap: every batch is
// contiguous, and starts right after the highest sequence delivered before it or
// replays from an earlier point (a resend after a crash), never beyond; the distinct
// sequences are exactly 1..n. strict also forbids replays.
func (r *received) checkOrder(t *testing.T, n int, strict bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var high uint64
	for i, b := range r.batches {
		if len(b) == 0 {
			t.Fatalf("batch %d is empty", i)
		}
		for j := 1; j < len(b); j++ {
			if b[j] != b[j-1]+1 {
				t.Fatalf("batch %d is not contiguous: %v", i, b)
			}
		}
		switch {
		case b[0] > high+1:
			t.Fatalf("gap: batch %d starts at %d after %d", i, b[0], high)
		case b[0] <= high && strict:
			t.Fatalf("replay without a crash: batch %d starts at %d after %d", i, b[0], high)
		}
		high = max(high, b[len(b)-1])
	}
	if high != uint64(n) {
		t.Fatalf("highest sequence %d, want %d", high, n)
	}
	d := slices.Clone(r.distinctLocked())
	slices.Sort(d)
	for i, s := range d {
		if s != uint64(i+1) {
			t.Fatalf("distinct sequences are not 1..%d: %v", n, d)
		}
	}
}

func (r *received) distinctLocked() []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	for _, b := range r.batches {
		for _, s := range b {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}
