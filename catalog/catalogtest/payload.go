package catalogtest

import (
	"context"
	"errors"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// testBatchPayloadSegment checks the batch row's payload columns: a batch sealed with
// its segment of a tick's group object reads back with it, a batch without one reads
// back without (the per-batch object), and a segment that is not one is refused.
func testBatchPayloadSegment(t *testing.T, db catalog.Catalog) {
	ctx := context.Background()
	seg := func(obj string, off, n uint64) catalog.SealFunc {
		return func(ctx context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			b, err := batchFor("g", 2, nil)(ctx, cp)
			if err == nil {
				b.Object, b.Offset, b.Length = obj, off, n
			}
			return b, err
		}
	}
	if _, err := db.Seal(ctx, logA, seg("payload/1732460000000-tick", 4096, 1234)); err != nil {
		t.Fatal(err)
	}
	Seal(t, db, logA, "h", 1)
	for _, bad := range []catalog.SealFunc{seg("payload/x", 0, 0), seg("payload/x", 1<<63, 5)} {
		if _, err := db.Seal(ctx, logA, bad); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("Seal of a batch with a bad segment: %v, want ErrInvalid", err)
		}
	}
	bs, err := db.BatchesCovering(ctx, logA, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Object != "payload/1732460000000-tick" || bs[0].Offset != 4096 || bs[0].Length != 1234 ||
		bs[0].Count != 2 || bs[1].Object != "" || bs[1].Offset != 0 || bs[1].Length != 0 || bs[1].First != 3 {
		t.Fatalf("batches %+v", bs)
	}
}
