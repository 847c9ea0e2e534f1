package tiles_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
)

// TestFaults drives a sequencer-like loop (materialize each batch, retrying until it
// succeeds) over a store that fails, is slow, or holds a conflicting object, and
// checks after every attempt that each stored tile and bundle is byte-identical to
// the one a fault-free run writes, so no proof can ever read a wrong one; and that
// the loop made progress, or stopped on a fork.
func TestFaults(t *testing.T) {
	ends := []uint64{1, 200, 256, 300, 1000, 66000, 66001}
	ref := newRefTree(synthLeaf)
	ref.grow(ends[len(ends)-1])
	clean := mem.New()
	buildLog(t, clean, testPrefix, ref, ends, 1<<20)
	want := storeContents(t, clean)
	boom := errors.New("injected failure")

	tests := []struct {
		name     string
		fault    mem.Fault
		timeout  time.Duration
		coldEdge bool   // a fresh Writer per attempt, so the edge is read from the store
		stopAt   uint64 // the batch end where the loop must stop; 0: it must finish
	}{
		{name: "FailBeforeCreate", fault: mem.Fault{Op: mem.OpCreate, Err: boom, Times: 3}},
		{name: "FailAfterCreate", fault: mem.Fault{Op: mem.OpCreate, Err: boom, After: true, Times: 3}},
		{name: "FailGet", fault: mem.Fault{Op: mem.OpGet, Err: boom, Times: 2}, coldEdge: true},
		{name: "SlowCreate", fault: mem.Fault{Op: mem.OpCreate, Delay: time.Minute, Times: 1}, timeout: 300 * time.Millisecond},
		{name: "SlowGet", fault: mem.Fault{Op: mem.OpGet, Delay: time.Minute, Times: 1}, timeout: 300 * time.Millisecond, coldEdge: true},
		{name: "Fork", fault: mem.Fault{Op: mem.OpCreate, Key: testPrefix.Key("tile/0/003.p/232"), Conflict: []byte("another tree")}, stopAt: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mem.New()
			w := tiles.NewWriter(s, testPrefix, nil)
			size := uint64(0)
			check := func() {
				t.Helper()
				for k, got := range storeContents(t, s) {
					if tt.fault.Conflict != nil && k == tt.fault.Key {
						continue // the planted object of the other tree
					}
					if !bytes.Equal(got, want[k]) {
						t.Fatalf("after a fault, %s holds %d bytes that differ from the fault-free run", k, len(got))
					}
				}
			}
			for _, end := range ends {
				s.Inject(tt.fault)
				done := false
				for attempt := 0; attempt < 10 && !done; attempt++ {
					ctx := t.Context()
					if tt.timeout > 0 {
						// The first attempt meets the slow call and gives up after
						// tt.timeout; later ones get room to finish on a loaded
						// machine (the fault fires once), so "no progress" means a
						// writer that cannot recover, not a slow run.
						timeout := tt.timeout
						if attempt > 0 {
							timeout = 20 * time.Second
						}
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, timeout)
						defer cancel()
					}
					if tt.coldEdge {
						w = tiles.NewWriter(s, testPrefix, nil)
					}
					err := w.Materialize(ctx, size, synthLeaves(size, end), ref.root(end))
					check()
					switch {
					case err == nil:
						done = true
					case errors.Is(err, tiles.ErrConflict):
						if end != tt.stopAt {
							t.Fatalf("conflict at batch ending %d: %v", end, err)
						}
						return // stopped, as a sequencer must on a fork
					case errors.Is(err, boom), errors.Is(err, context.DeadlineExceeded):
					default:
						t.Fatalf("batch ending %d: unexpected error %v", end, err)
					}
				}
				if !done {
					t.Fatalf("no progress: batch ending %d never materialized", end)
				}
				size = end
				r := tiles.NewReader(s, testPrefix, tiles.Tree{Size: end, Root: ref.root(end)}, nil)
				checkProofs(t, r, ref, [][2]uint64{{0, end}, {end - 1, end}}, [][2]uint64{{1, end}})
			}
			if tt.stopAt != 0 {
				t.Fatalf("the loop did not stop at %d", tt.stopAt)
			}
			diffObjects(t, storeContents(t, s), want)
		})
	}
}
