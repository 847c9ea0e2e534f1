package sequencer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles/mem"
)

// gatedCatalog holds the first SealGroup inside its function until release closes,
// and records the streams of every SealGroup call.
type gatedCatalog struct {
	Catalog
	entered, release chan struct{}
	once             sync.Once

	mu     sync.Mutex
	groups [][]catalog.LogID
}

func (c *gatedCatalog) SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error) {
	c.mu.Lock()
	c.groups = append(c.groups, logs)
	c.mu.Unlock()
	return c.Catalog.SealGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		c.once.Do(func() {
			close(c.entered)
			<-c.release
		})
		return fn(ctx, cps)
	})
}

// gatedHarness returns a harness whose first group commit is held, and submits one
// event to the first log so that it is.
func gatedHarness(t *testing.T) (*harness, *gatedCatalog, <-chan error) {
	var gc *gatedCatalog
	h := newHarness(t, func(c *Config) {
		gc = &gatedCatalog{Catalog: c.Catalog, entered: make(chan struct{}), release: make(chan struct{})}
		c.Catalog = gc
	})
	first := make(chan error, 1)
	go func() { _, err := h.seq.Submit(context.Background(), testLog, entry(0)); first <- err }()
	<-gc.entered
	return h, gc, first
}

// waitQueued waits until n batches wait for the next tick.
func waitQueued(t *testing.T, s *Sequencer, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.group.mu.Lock()
		q := len(s.group.queue)
		s.group.mu.Unlock()
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d batches queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommitTakesEveryStream: the batches of every stream that became ready while
// a tick committed go into the next tick together, one SealGroup, and each stream
// gets its own contiguous sequences and a verifying proof.
func TestGroupCommitTakesEveryStream(t *testing.T) {
	h, gc, first := gatedHarness(t)
	const streams = 40
	logs := make([]catalog.LogID, streams)
	results := make([][]Result, streams)
	var wg sync.WaitGroup
	for i := range logs {
		logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_group%02d", i), Stream: catalog.StreamEvents}
		wg.Go(func() { results[i] = h.submitN(logs[i], 3) })
	}
	waitQueued(t, h.seq, streams)
	close(gc.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	gc.mu.Lock()
	largest := 0
	for _, g := range gc.groups {
		largest = max(largest, len(g))
	}
	gc.mu.Unlock()
	if largest != streams {
		t.Fatalf("largest group held %d streams, want all %d that waited", largest, streams)
	}
	for i, log := range logs {
		h.checkLog(log, results[i])
	}
}

// TestGroupCommitIsolatesAFailingStream: one stream's payload write fails in a tick
// shared with other streams; only that stream's events fail (nothing of it is
// recorded), the others are sealed.
func TestGroupCommitIsolatesAFailingStream(t *testing.T) {
	h, gc, first := gatedHarness(t)
	bad := catalog.LogID{ProjectID: "prj_bad", Stream: catalog.StreamEvents}
	good := []catalog.LogID{{ProjectID: "prj_good1", Stream: catalog.StreamEvents}, {ProjectID: "prj_good2", Stream: catalog.StreamProjectAudit}}
	remove := h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: "prj_bad/events/payload/", Err: errors.New("disk full on one prefix")})
	defer remove()
	badErr := make(chan error, 1)
	go func() { _, err := h.seq.Submit(context.Background(), bad, entry(1)); badErr <- err }()
	goodRes := make([][]Result, len(good))
	var wg sync.WaitGroup
	for i, log := range good {
		wg.Go(func() { goodRes[i] = h.submitN(log, 2) })
	}
	waitQueued(t, h.seq, 1+len(good))
	close(gc.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-badErr; !errors.Is(err, ErrSealFailed) {
		t.Fatalf("the failing stream's event: %v, want ErrSealFailed", err)
	}
	if cp, err := h.db.Checkpoint(context.Background(), bad); err == nil && cp.Size != 0 {
		t.Fatalf("the failing stream recorded %d events", cp.Size)
	}
	for i, log := range good {
		h.checkLog(log, goodRes[i])
	}
}
