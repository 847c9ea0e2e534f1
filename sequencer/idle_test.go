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

	liveBefore, inUseBefore := heapInUse()
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
	// A retired stream's last publication may still be waiting for its round.
	for {
		unpublished, err := st.cat.ListUnpublished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(unpublished) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams unpublished after going idle", len(unpublished))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, i := range []int{0, projects / 2, projects - 1} {
		cp, err := st.cat.Checkpoint(ctx, logOf(i))
		if err != nil || cp.Size != perProject || cp.PublishedSize != perProject {
			t.Fatalf("project %d: checkpoint %d published %d (%v)", i, cp.Size, cp.PublishedSize, err)
		}
	}
	// The publish loop trims the edge just after its round recorded the published
	// size (the last publications trickle in within the publication budget).
	for {
		st.seq.edges.mu.Lock()
		edges := len(st.seq.edges.runs)
		st.seq.edges.mu.Unlock()
		if edges == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams' unpublished edges still held", edges)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Let the catalog's background writers (the recent-rows merge, the term index,
	// WAL checkpoints) finish what the last publications left them: on a loaded
	// machine (CI runs packages side by side) they can lag the publications by
	// seconds. Wait for a quiet window longer than the longest of their periods (the
	// embedded catalog's WAL checkpoint, every 3 s), then nothing may be written any
	// more for as long again.
	type counters struct{ objects, seals, publishes, disk int64 }
	snap := func() counters {
		return counters{store.writes.Load(), cat.seals.Load(), cat.publishes.Load(), diskWriteBytes(t)}
	}
	before := snap()
	const quiet = 4 * time.Second
	var settled time.Duration
	for ; ; settled += quiet {
		time.Sleep(quiet)
		after := snap()
		if after == before {
			break
		}
		if after.objects != before.objects || after.seals != before.seals || after.publishes != before.publishes {
			t.Fatalf("idle streams wrote: before %+v, after %+v", before, after)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the catalog's background writers still write: before %+v, after %+v", before, after)
		}
		before = after
	}
	time.Sleep(quiet)
	if after := snap(); after != before {
		t.Fatalf("idle streams wrote: before %+v, after %+v", before, after)
	}
	// Logged only now: with -v and the output on a file, the line is a write of this
	// process that dirties a page of that file (which the disk counter would count).
	t.Logf("background writers settled after %v more", settled)
	// What may stay after idling, however many streams went by: the bounded caches
	// (the sequencer's tile cache of 4,096 tiles, here partial ones of 10 hashes, and
	// its payload cache of at most 4 MiB: under 40 MiB together), plus a few hundred
	// bytes per stream the catalog handle keeps for good (its stream numbers
	// and published sizes, catalog/sqlite) and the runtime's descriptors of the
	// goroutines that ran at once (two per active stream, about 400 bytes each, which
	// the runtime keeps for reuse): 1 KiB each is a generous bound. Anything
	// per-stream the sequencer kept (a sequencer, an edge, a writer: kilobytes each)
	// would exceed it. The bound is on the live heap: the heap's spans in use also
	// hold the free slots that the streams' churn left in them (at 10,000 projects
	// about as much again as the live heap), which later allocations reuse.
	bound := uint64(40<<20 + projects<<10)
	live, inUse := heapInUse()
	t.Logf("%d projects x %d events: %d object writes, %d seals, %d publication rounds; live heap %d MiB before, %d MiB after idling (bound: +%d MiB), spans in use %d and %d MiB",
		projects, perProject, before.objects, before.seals, before.publishes, liveBefore>>20, live>>20, bound>>20, inUseBefore>>20, inUse>>20)
	if live > liveBefore+bound {
		t.Fatalf("live heap grew from %d to %d bytes, beyond the bound of %d", liveBefore, live, bound)
	}
	if rounds := before.publishes; rounds >= int64(projects) {
		t.Fatalf("%d publication rounds for %d streams: publication is not grouped", rounds, projects)
	}
}

// heapInUse returns, after a collection, the bytes of live heap objects and of the
// heap's spans in use.
func heapInUse() (live, inUse uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.HeapInuse
}
