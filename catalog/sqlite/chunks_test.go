package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// TestSealChunks seals batches whose sizes use every prepared INSERT (1,000, 100, 10
// and 1 rows) and checks that every index row is there, in order.
func TestSealChunks(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log := catalog.LogID{ProjectID: "prj_chunks", Stream: catalog.StreamEvents}
	var want []catalog.Event
	for _, n := range []int{1, 9, 10, 99, 1000, 2345} {
		events := catalogtest.MakeEvents("e", uint64(len(want))+1, n)
		want = append(want, events...)
		cp, err := db.Seal(ctx, log, func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			return &catalog.SealBatch{BatchID: "b", Events: events, Root: catalogtest.H("root"),
				Range: []catalog.Hash{catalogtest.H("range")}}, nil
		})
		if err != nil || cp.Size != uint64(len(want)) {
			t.Fatalf("Seal of %d: %+v, %v", n, cp, err)
		}
	}
	var got []catalog.Event
	for cursor := uint64(0); ; {
		page, err := db.QueryEvents(ctx, catalog.Query{Log: log, Cursor: cursor, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		cursor = page[len(page)-1].Sequence
	}
	if len(got) != len(want) {
		t.Fatalf("%d index rows, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
