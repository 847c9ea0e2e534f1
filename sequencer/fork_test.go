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
// While the batch of size 4 is being published, more batches are sealed behind it.
// Once the fork is found, none of them may be published (the trees of size 5 and
// more have other tile paths, so publishing them would succeed and hide the fork)
// and no event may be acknowledged, however soon after the failure it is submitted.
func TestForkStopsAtOnce(t *testing.T) {
	for round := range 10 {
		started := make(chan struct{})
		var once sync.Once
		h := newHarness(t, func(c *Config) {
			c.Store = &onCreate{Store: c.Store, key: "prj_test/events/tile/0/000.p/4", f: func() { once.Do(func() { close(started) }) }}
		})
		h.submitN(testLog, 3)
		h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: "prj_test/events/tile/0/000.p/4", Delay: 50 * time.Millisecond,
			Conflict: []byte("other tree")})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		first := make(chan error, 1)
		go func() { _, err := h.seq.Submit(ctx, testLog, entry(99)); first <- err }()
		// The tree of size 4 is being published (and will be found forked).
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the tile of size 4 was never written")
		}
		var wg sync.WaitGroup
		acked := make(chan int, 64)
		for i := range 8 {
			wg.Go(func() {
				for j := range 4 {
					if _, err := h.seq.Submit(ctx, testLog, entry(100*i+j)); err == nil {
						acked <- 100*i + j
					}
				}
			})
		}
		wg.Wait()
		if err := <-first; err == nil {
			t.Fatalf("round %d: the event of the forked tree was acknowledged", round)
		}
		cancel()
		close(acked)
		for i := range acked {
			t.Fatalf("round %d: event %d was acknowledged after the stream forked", round, i)
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
