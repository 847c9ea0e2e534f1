package catalogtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// BenchmarkSeal measures index insert throughput: each iteration is one committed seal
// of batch events (index rows + batch row + checkpoint, one transaction). It reports
// events/s. open returns a fresh catalog.
func BenchmarkSeal(b *testing.B, open func(testing.TB) catalog.Catalog) {
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
