package sequencer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
)

// TestForkStopsAtOnce is the race behind TestForkStopsTheStream, made likely. Another
// tree's tile sits where the tree of size 4 puts its tile, and writing it is slow.
// While the tree of size 4 is being published, more batches are committed (and so
// acknowledged) behind it. Once the fork is found, none of them may be published (the
// trees of size 5 and more have other tile paths, so publishing them would succeed
// and hide the fork) and no event may be acknowledged, however soon after the stop it
// is submitted.
func TestForkStopsAtOnce(t *testing.T) {
	for round := range 10 {
		started := make(chan struct{})
		var once sync.Once
		h := newHarness(t, func(c *Config) {
			c.Store = &onCreate{Store: c.Store, key: "prj_test/events/tile/0/000.p/4", f: func() { once.Do(func() { close(started) }) }}
			c.PublishInterval = time.Millisecond
		})
		h.submitN(testLog, 3)
		if _, err := h.seq.Materialize(context.Background(), testLog); err != nil {
			t.Fatal(err)
		}
		h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: "prj_test/events/tile/0/000.p/4", Delay: 50 * time.Millisecond,
			Conflict: []byte("other tree")})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if _, err := h.seq.Submit(ctx, testLog, entry(99)); err != nil {
			t.Fatalf("round %d: commit of size 4: %v", round, err)
		}
		// The tree of size 4 is being published (and will be found forked).
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the tile of size 4 was never written")
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var refusedAt time.Time    // the first refusal: the stream had stopped
		var ackedAfter []time.Time // submission times of acknowledged events
		for i := range 8 {
			wg.Go(func() {
				for j := range 4 {
					at := time.Now()
					_, err := h.seq.Submit(ctx, testLog, entry(100*i+j))
					mu.Lock()
					if err != nil && (refusedAt.IsZero() || time.Now().Before(refusedAt)) {
						refusedAt = time.Now()
					}
					if err == nil {
						ackedAfter = append(ackedAfter, at)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		h.waitStopped(ctx, testLog)
		stoppedBy := time.Now()
		if _, err := h.seq.Submit(ctx, testLog, entry(7)); err == nil {
			t.Fatalf("round %d: an event was acknowledged after the stream stopped", round)
		}
		cancel()
		for _, at := range ackedAfter {
			if !refusedAt.IsZero() && at.After(refusedAt) {
				t.Fatalf("round %d: an event submitted after a refusal was acknowledged", round)
			}
			if at.After(stoppedBy) {
				t.Fatalf("round %d: acknowledged after the stop", round)
			}
		}
		cp, err := h.db.Checkpoint(context.Background(), testLog)
		if err != nil || cp.PublishedSize != 3 {
			t.Fatalf("round %d: published size %d (%v) after the fork; want 3", round, cp.PublishedSize, err)
		}
	}
}

// onCreate calls f when a Create of key starts.
type onCreate struct {
	tiles.Store
	key string
	f   func()
}

func (s *onCreate) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	if key == s.key {
		s.f()
	}
	return s.Store.Create(ctx, key, data, a)
}
