package sequencer

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
)

// segmentStore is the filesystem store (which appends each tick's payload to its open
// segment file) with its next append failing on demand.
type segmentStore struct {
	*fs.Store
	mu    sync.Mutex
	fault string // "": none; "fail": nothing written; "lost ack": written, then an error
}

var errAppend = errors.New("injected append failure")

func (s *segmentStore) failNext(fault string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = fault
}

func (s *segmentStore) ReservePayload(ctx context.Context, n int64) (tiles.PayloadSlot, error) {
	slot, err := s.Store.ReservePayload(ctx, n)
	s.mu.Lock()
	fault := s.fault
	s.fault = ""
	s.mu.Unlock()
	if err != nil || fault == "" {
		return slot, err
	}
	write := slot.Write
	slot.Write = func(ctx context.Context, data []byte) error {
		if fault == "fail" {
			_ = write(ctx, nil) // releases the slot without writing (a length error)
			return errAppend
		}
		if err := write(ctx, data); err != nil {
			return err
		}
		return errAppend
	}
	return slot, nil
}

// newSegmentHarness is a harness on a filesystem store under root.
func newSegmentHarness(t *testing.T, root string) (*harness, *segmentStore) {
	t.Helper()
	s, err := fs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	store := &segmentStore{Store: s}
	return newHarness(t, func(c *Config) { c.Store = store }), store
}

// segmentFiles returns the payload segment files under root.
func segmentFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "payload", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSegmentsAppend: on the filesystem store successive ticks append their payloads
// to one file, whose segments the batch rows name, and every event reads back.
func TestSegmentsAppend(t *testing.T) {
	root := t.TempDir()
	h, _ := newSegmentHarness(t, root)
	var res []Result
	for range 5 {
		res = append(res, h.submitN(testLog, 7)...)
	}
	if files := segmentFiles(t, root); len(files) != 1 {
		t.Fatalf("5 ticks wrote %d payload files, want 1 segment file: %v", len(files), files)
	}
	batches, err := h.db.BatchesCovering(context.Background(), testLog, 1, 35)
	if err != nil || len(batches) < 5 {
		t.Fatalf("batches %v, %v", batches, err)
	}
	for i, b := range batches {
		if b.Object != batches[0].Object || i > 0 && b.Offset != batches[i-1].Offset+batches[i-1].Length {
			t.Fatalf("batch %d names %s@%d+%d after %+v", i, b.Object, b.Offset, b.Length, batches[i-1])
		}
	}
	h.checkLog(testLog, res)
	h.checkEvents(t, root, 35)
}

// TestSegmentFaults fails the tick's append, or the commit after it, or loses the
// append's acknowledgement, on the filesystem store: the batch fails and records
// nothing, later batches commit (after a failed append, to a new file), and every
// event acknowledged, before or after, reads back; the bytes of the failed tick are
// garbage no batch names. Then a restart between an append and its commit: the new
// process appends to a file of its own.
func TestSegmentFaults(t *testing.T) {
	errCommit := errors.New("injected commit failure")
	for _, tc := range []struct {
		name     string
		inject   func(h *harness, s *segmentStore) (remove func())
		newFiles int // files started by the batches after the fault
	}{
		{"append fails", func(_ *harness, s *segmentStore) func() {
			s.failNext("fail")
			return func() {}
		}, 0},
		{"append ack lost", func(_ *harness, s *segmentStore) func() {
			s.failNext("lost ack")
			return func() {}
		}, 0},
		{"commit fails after the append", func(h *harness, _ *segmentStore) func() {
			h.cat.set(func(c *faultyCatalog) { c.commitErr = errCommit })
			return func() { h.cat.set(func(c *faultyCatalog) { c.commitErr = nil }) }
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			h, store := newSegmentHarness(t, root)
			ctx := context.Background()
			res := h.submitN(testLog, 10)
			remove := tc.inject(h, store)
			ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err := h.seq.Submit(ctx2, testLog, entry(100))
			cancel()
			remove()
			if err == nil {
				t.Fatal("an event whose tick failed was acknowledged")
			}
			if cp, _ := h.db.Checkpoint(ctx, testLog); cp.Size != 10 {
				t.Fatalf("the failed tick recorded something: size %d", cp.Size)
			}
			res = append(res, h.submitN(testLog, 10)...)
			if got := len(segmentFiles(t, root)); got != 1+tc.newFiles {
				t.Fatalf("%d segment files, want %d", got, 1+tc.newFiles)
			}
			h.checkLog(testLog, res)
			h.checkEvents(t, root, 20)
		})
	}
	t.Run("restart between append and commit", func(t *testing.T) {
		root := t.TempDir()
		h, _ := newSegmentHarness(t, root)
		ctx := context.Background()
		res := h.submitN(testLog, 10)
		h.cat.set(func(c *faultyCatalog) { c.commitErr = errCommit })
		ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
		if _, err := h.seq.Submit(ctx2, testLog, entry(100)); err == nil {
			t.Fatal("an event whose commit failed was acknowledged")
		}
		cancel()
		h.cat.set(func(c *faultyCatalog) { c.commitErr = nil })
		if err := h.seq.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// The restarted process: a new store on the same root, a new sequencer.
		store, err := fs.New(root)
		if err != nil {
			t.Fatal(err)
		}
		h.seq, err = New(Config{Catalog: h.db, Store: store, Keyring: h.keys, Origin: testOrigin, Key: h.key})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.seq.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		res = append(res, h.submitN(testLog, 10)...)
		if got := len(segmentFiles(t, root)); got != 2 {
			t.Fatalf("%d segment files after a restart, want 2", got)
		}
		h.checkLog(testLog, res)
		h.checkEvents(t, root, 20)
	})
}

// checkEvents reads events 1..n of testLog back through a sequencer of its own on a
// new store over root (so from the files, not from any cache) and checks their
// payloads.
func (h *harness) checkEvents(t *testing.T, root string, n uint64) {
	t.Helper()
	store, err := fs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Catalog: h.db, Store: store, Keyring: h.keys, Origin: testOrigin, Key: h.key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	seqs := make([]uint64, n)
	for i := range seqs {
		seqs[i] = uint64(i) + 1
	}
	got, err := s.Events(context.Background(), testLog, seqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got {
		if e.Leaf.Sequence != seqs[i] || !bytes.Contains(e.Payload, []byte(`"action":"doc.read"`)) {
			t.Fatalf("event %d read back as %+v", seqs[i], e)
		}
	}
}
