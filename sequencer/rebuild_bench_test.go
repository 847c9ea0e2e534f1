package sequencer

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRebuild measures the full rebuild behind /verify on the embedded default
// (SQLite catalog, filesystem store, real keyring): 100,000 customer-signed events,
// every payload decrypted, commitment re-derived, signature and leaf checked, tiles
// compared. Sealing the log first takes a while. Compare -cpu 1,2.
func BenchmarkRebuild(b *testing.B) {
	const events = 100_000
	ctx := context.Background()
	dir := b.TempDir()
	cfg := newStackConfig(b, "sqlite", filepath.Join(dir, "catalog.db"), dir)
	st := mustOpenStack(b, cfg)
	signer := cfg.clientKey()
	for from := uint64(0); from < events; from += 1000 {
		es := make([]Entry, 1000)
		for i := range es {
			es[i] = tagEntry(signer, from+uint64(i))
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, errs := st.seq.SubmitMany(sctx, stackLog, es)
		cancel()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		res, err := st.seq.Rebuild(ctx, stackLog, cfg.signingKeys)
		if err != nil || res.Break != nil || res.Checked != events {
			b.Fatalf("rebuild: %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
