package sequencer

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestSealedEntriesNotRetained: once a batch is acknowledged, its stream keeps none of
// its entries, though the stream stays active (its seal loop lives until IdleTimeout,
// a minute by default). Before, the seal loop's queue of pools kept the last pool it
// took in its backing array, so every stream held its last batch, payloads and all,
// until it retired: with 1,000 tenants posting batches of 1,000 events of 1 KB, about
// a gigabyte of heap (docs/performance.md, "round19").
func TestSealedEntriesNotRetained(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = time.Hour })
	const n = 64
	es := make([]Entry, n)
	payloads := make([]weak.Pointer[byte], n)
	for i := range es {
		es[i] = entry(i)
		es[i].Payload = append(make([]byte, 0, 64<<10), es[i].Payload...) // large enough to stand out
		payloads[i] = weak.Make(&es[i].Payload[0])
	}
	for _, log := range []catalog.LogID{testLog, {ProjectID: "prj_other", Stream: catalog.StreamEvents}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, errs := h.seq.SubmitMany(ctx, log, es[:n/2])
		cancel()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: entry %d: %v", log, i, err)
			}
		}
		es = es[n/2:]
	}
	es = nil
	held := 0
	for range 3 {
		runtime.GC()
		held = 0
		for _, p := range payloads {
			if p.Value() != nil {
				held++
			}
		}
		if held == 0 {
			break
		}
	}
	if held != 0 {
		t.Fatalf("%d of %d acknowledged entries' payloads still reachable from the sequencer", held, n)
	}
	if got := h.seq.activeStreams(); got != 2 {
		t.Fatalf("%d active streams, want the 2 that sealed (the check must not pass by retiring them)", got)
	}
}
