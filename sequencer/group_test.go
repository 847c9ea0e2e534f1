package sequencer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
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

// TestGroupCommitRetriesAFailedPayloadWrite: the write of a tick's group payload
// object fails once, with several streams in the tick; nothing of the tick is
// recorded, each stream is sealed again alone (each in a group object of its own) and
// every event is sealed, with no duplicate sequence.
func TestGroupCommitRetriesAFailedPayloadWrite(t *testing.T) {
	h, gc, first := gatedHarness(t)
	logs := []catalog.LogID{{ProjectID: "prj_one", Stream: catalog.StreamEvents},
		{ProjectID: "prj_good1", Stream: catalog.StreamEvents}, {ProjectID: "prj_good2", Stream: catalog.StreamProjectAudit}}
	// The held first tick's write goes through; the next tick's fails.
	remove := h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: tiles.GroupPayloadPrefix, Err: errors.New("disk full"), Times: 1, Skip: 1})
	defer remove()
	res := make([][]Result, len(logs))
	var wg sync.WaitGroup
	for i, log := range logs {
		wg.Go(func() { res[i] = h.submitN(log, 2) })
	}
	waitQueued(t, h.seq, len(logs))
	close(gc.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	objects := map[string]bool{}
	for i, log := range logs {
		h.checkLog(log, res[i])
		bs, err := h.db.BatchesCovering(context.Background(), log, 1, 2)
		if err != nil || len(bs) == 0 || slices.ContainsFunc(bs, func(b catalog.Batch) bool { return b.Object == "" }) {
			t.Fatalf("batches of %s: %+v, %v", log, bs, err)
		}
		objects[bs[0].Object] = true // the batch of the failed tick, sealed alone
	}
	if len(objects) != len(logs) {
		t.Fatalf("the streams sealed alone share group objects: %v", objects)
	}
}
