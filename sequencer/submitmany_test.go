package sequencer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestSubmitManyKeepsOrder: SubmitMany seals its entries with increasing sequences,
// answers each on its own (a reused signed id fails alone), and leaves a whole log.
func TestSubmitManyKeepsOrder(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBatch = 7 })
	ctx := context.Background()
	_, key, _ := tlog.GenerateKey()
	first, err := h.seq.Submit(ctx, testLog, signedEntry(t, key, "evt_taken", 0))
	if err != nil {
		t.Fatal(err)
	}
	es := make([]Entry, 30)
	for i := range es {
		es[i] = entry(i)
	}
	es[11] = signedEntry(t, key, "evt_taken", 11) // same id, other content
	res, errs := h.seq.SubmitMany(ctx, testLog, es)
	var sealed []Result
	for i, err := range errs {
		switch {
		case i == 11:
			if !errors.Is(err, ErrIDConflict) {
				t.Fatalf("entry 11: %v, want ErrIDConflict", err)
			}
		case err != nil:
			t.Fatalf("entry %d: %v", i, err)
		default:
			if len(sealed) > 0 && res[i].Sequence <= sealed[len(sealed)-1].Sequence {
				t.Fatalf("entry %d sealed at %d, after %d", i, res[i].Sequence, sealed[len(sealed)-1].Sequence)
			}
			sealed = append(sealed, res[i])
		}
	}
	h.checkLog(testLog, append(sealed, first))
}

// TestSubmitManyBackPressure: entries beyond MaxPending are refused one by one with a
// *BusyError while the others are sealed.
func TestSubmitManyBackPressure(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 5; c.MaxBatch = 5 })
	remove := h.store.Inject(mem.Fault{Op: mem.OpCreate, Key: tiles.GroupPayloadPrefix, Delay: 300 * time.Millisecond})
	defer remove()
	es := make([]Entry, 12)
	for i := range es {
		es[i] = entry(i)
	}
	_, errs := h.seq.SubmitMany(context.Background(), testLog, es)
	var busy, sealed int
	for _, err := range errs {
		switch {
		case errors.Is(err, ErrBusy):
			busy++
		case err == nil:
			sealed++
		default:
			t.Fatal(err)
		}
	}
	if busy == 0 || sealed == 0 {
		t.Fatalf("busy %d, sealed %d: want some of each", busy, sealed)
	}
	cp, _ := h.db.Checkpoint(context.Background(), testLog)
	if cp.Size != uint64(sealed) {
		t.Fatalf("checkpoint size %d, %d sealed", cp.Size, sealed)
	}
}
