package catalogtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// BenchmarkSeal measures index insert throughput: each iteration is one committed seal
// of batch events (index rows + batch row + checkpoint, one transaction). It reports
// events/s. open returns a fresh catalog. The group/ sub-benchmarks are
// benchmarkSealGroup's.
func BenchmarkSeal(b *testing.B, open func(testing.TB) catalog.Catalog) {
	b.Run("group", func(b *testing.B) { benchmarkSealGroup(b, open) })
	for _, batch := range []int{1, 100, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := open(b)
			log := catalog.LogID{ProjectID: "prj_bench", Stream: catalog.StreamEvents}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := db.Seal(ctx, log, batchFor("e", batch, nil)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// benchmarkSealGroup measures the group commit: each iteration is one SealGroup of
// streams project-streams with batch events each (one transaction for all). It reports
// events/s. open returns a fresh catalog.
func benchmarkSealGroup(b *testing.B, open func(testing.TB) catalog.Catalog) {
	for _, c := range []struct{ streams, batch int }{{1, 20}, {1, 200}, {10, 20}, {100, 2}, {1000, 1}} {
		b.Run(fmt.Sprintf("streams=%d/batch=%d", c.streams, c.batch), func(b *testing.B) {
			db := open(b)
			logs := make([]catalog.LogID, c.streams)
			for i := range logs {
				logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_bench%03d", i), Stream: catalog.StreamEvents}
			}
			ctx := context.Background()
			fn := func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
				out := make([]*catalog.SealBatch, len(cps))
				for k, cp := range cps {
					sb, err := batchFor(fmt.Sprintf("g%d-", k), c.batch, nil)(ctx, cp)
					if err != nil {
						return nil, nil, err
					}
					out[k] = sb
				}
				return out, nil, nil
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sealed, err := db.SealGroup(ctx, logs, fn)
				if err != nil {
					b.Fatal(err)
				}
				for _, s := range sealed {
					if !s.Locked {
						b.Fatal("a project-stream of the group was not locked")
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*c.streams*c.batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
