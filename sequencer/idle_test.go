package sequencer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestIdleStreamsCostNothing seals 10 events in each of 1,000 projects
// (SEALTRAIL_TEST_IDLE_PROJECTS sets another number: the acceptance run of issue #21
// uses 10,000), then lets every stream go idle: each stream publishes after its
// last batch, its sequencer is dropped, and from then on nothing is written: the
// object store, the catalog's write transactions and the process's disk writes
// (/proc/self/io) stay still, and no per-stream state is left in memory.
func TestIdleStreamsCostNothing(t *testing.T) {
	projects := 1_000
	if v := os.Getenv("SEALTRAIL_TEST_IDLE_PROJECTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SEALTRAIL_TEST_IDLE_PROJECTS=%q", v)
		}
		projects = n
	}
	const perProject = 10
	ctx := context.Background()
	dir := t.TempDir()
	cfg := newStackConfig(t, "sqlite", filepath.Join(dir, "catalog.db"), dir)
	var (
		store *countingStore
		cat   *countingCatalog
	)
	const idle = 200 * time.Millisecond
	st, err := openStack(ctx, cfg, func(c *Config) {
		c.IdleTimeout, c.PublishInterval = idle, 20*time.Millisecond
		store = &countingStore{Store: c.Store}
		cat = &countingCatalog{Catalog: c.Catalog}
		c.Store, c.Catalog = store, cat
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()

	logOf := func(i int) catalog.LogID {
		return catalog.LogID{ProjectID: fmt.Sprintf("prj_idle%05d", i), Stream: catalog.StreamEvents}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 256 {
		wg.Go(func() {
			for i := range work {
				if _, err := st.seq.Submit(ctx, logOf(i/perProject), entry(i)); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range projects * perProject {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	// Every stream publishes after its last batch and its sequencer is dropped.
	deadline := time.Now().Add(3 * time.Minute)
	for st.seq.activeStreams() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still active", st.seq.activeStreams())
		}
		time.Sleep(50 * time.Millisecond)
	}
	unpublished, err := st.cat.ListUnpublished(ctx)
	if err != nil || len(unpublished) != 0 {
		t.Fatalf("%d streams unpublished after going idle (%v)", len(unpublished), err)
	}
	for _, i := range []int{0, projects / 2, projects - 1} {
		cp, err := st.cat.Checkpoint(ctx, logOf(i))
		if err != nil || cp.Size != perProject || cp.PublishedSize != perProject {
			t.Fatalf("project %d: checkpoint %d published %d (%v)", i, cp.Size, cp.PublishedSize, err)
		}
	}
	st.seq.edges.mu.Lock()
	edges := len(st.seq.edges.runs)
	st.seq.edges.mu.Unlock()
	if edges != 0 {
		t.Fatalf("%d streams' unpublished edges still held", edges)
	}

	// Let the catalog's background writers (published sizes, WAL checkpoints) finish
	// what the last publications left them, then nothing may be written any more.
	time.Sleep(2 * idle)
	type counters struct{ objects, seals, publishes, disk int64 }
	snap := func() counters {
		return counters{store.writes.Load(), cat.seals.Load(), cat.publishes.Load(), diskWriteBytes(t)}
	}
	before := snap()
	time.Sleep(5 * idle)
	if after := snap(); after != before {
		t.Fatalf("idle streams wrote: before %+v, after %+v", before, after)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("%d projects x %d events: %d object writes, %d seals, %d publications; heap in use %d MiB after idling",
		projects, perProject, before.objects, before.seals, before.publishes, ms.HeapInuse>>20)
}
