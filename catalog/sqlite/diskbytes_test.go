package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// processWriteBytes is write_bytes of /proc/self/io: the bytes of storage this
// process dirtied (whole 4 KiB page-cache pages), the load tool's measure.
func processWriteBytes(tb testing.TB) int64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		tb.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("/proc/self/io has no write_bytes")
	return 0
}

// BenchmarkManyStreamsDiskBytes is the catalog's part of the load test's 1,000-project
// case, in process: ticks of one event in each of 1,000 project-streams every 10 ms,
// each stream's published size raised after its tick (as publication does), with the
// background checkpointer, published-size writer and merger running; reported are the
// bytes the process dirtied per event (/proc/self/io) and the CPU time per event.
// With directRows=1 every row goes to events directly, the layout before
// events_recent; mergeRows=0 is the default.
func BenchmarkManyStreamsDiskBytes(b *testing.B) {
	const streams = 1000
	rng := make([]catalog.Hash, 8)
	for i := range rng {
		rng[i] = catalogtest.H(fmt.Sprint("r", i))
	}
	for _, o := range []Options{{}, {mergeRows: 8192}, {mergeRows: 32768}, {directRows: 1}} {
		b.Run(fmt.Sprintf("directRows=%d/mergeRows=%d", o.directRows, o.mergeRows), func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(db.Close)
			logs := make([]catalog.LogID, streams)
			for i := range logs {
				logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_disk%04d", i), Stream: catalog.StreamEvents}
			}
			fn := func(_ context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
				out := make([]*catalog.SealBatch, len(cps))
				for k, cp := range cps {
					evs := catalogtest.MakeEvents(fmt.Sprintf("evt_%s_", cp.Log.ProjectID), cp.Size+1, 1)
					out[k] = &catalog.SealBatch{BatchID: fmt.Sprintf("bat_%04d_%08d", k, cp.Size+1),
						Events: evs, Root: catalogtest.H(fmt.Sprint(cp.Size)), Range: rng}
				}
				return out, nil, nil
			}
			tick := func() {
				res, err := db.SealGroup(ctx, logs, fn)
				if err != nil {
					b.Fatal(err)
				}
				// What Publish does once the stream's tiles are written.
				for _, r := range res {
					db.pub.set(r.Checkpoint.Log, r.Checkpoint.Size)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for range 20 {
				tick()
			}
			time.Sleep(time.Second)
			before := processWriteBytes(b)
			b.ResetTimer()
			for range b.N {
				tick()
			}
			b.StopTimer()
			// What the background writers owe for these ticks.
			time.Sleep(6 * time.Second)
			b.ReportMetric(float64(processWriteBytes(b)-before)/float64(b.N*streams), "disk-B/event")
		})
	}
}
