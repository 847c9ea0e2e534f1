package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// TestScrubLeavesNoCopies checks retention's promise for the index rows: once
// ScrubEvents has blanked an actor, none of the catalog's files holds its id. Its
// events went through events_recent, whose pages the merge frees without zeroing
// them (mergeStatements), and through the term index, whose segments merge.
func TestScrubLeavesNoCopies(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db := openRecent(t, path, Options{})
	const secret = "actor-to-forget-7f3a9c"
	logs := make([]catalog.LogID, 8)
	for i := range logs {
		logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_scrub%d", i), Stream: catalog.StreamEvents}
	}
	for tick := range 40 {
		if _, err := db.SealGroup(ctx, logs, func(_ context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
			out := make([]*catalog.SealBatch, len(cps))
			for k, cp := range cps {
				evs := catalogtest.MakeEvents(fmt.Sprintf("evt_%d_", k), cp.Size+1, 3)
				for i := range evs {
					evs[i].ActorID = fmt.Sprintf("%s-%d", secret, i)
				}
				out[k] = &catalog.SealBatch{BatchID: fmt.Sprintf("bat_%d_%d", k, tick), Events: evs,
					Root: catalogtest.H(fmt.Sprint(k, cp.Size)), Range: []catalog.Hash{catalogtest.H("r")}}
			}
			return out, nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		// A chunk a tick: the term index merges their segments (terms_segments.go),
		// and the rows it moves must leave no copies either.
		if err := db.terms.catchUp(); err != nil {
			t.Fatal(err)
		}
	}
	var merged int
	if err := db.terms.w.QueryRowContext(ctx, `SELECT count(*) FROM term_segments WHERE hi - lo > 3`).Scan(&merged); err != nil || merged == 0 {
		t.Fatalf("%d merged segments (%v): the test needs the term index's merges", merged, err)
	}
	mergeAll(t, db)
	var free int
	if err := db.w.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil || free == 0 {
		t.Fatalf("%d free pages after the merge (%v): the test needs the recent rows' freed pages", free, err)
	}
	files := []string{path, path + "-wal", path + termsSuffix, path + termsSuffix + "-wal"}
	found := func() []string {
		if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		var in []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(secret)) {
				in = append(in, filepath.Base(f))
			}
		}
		return in
	}
	if in := found(); len(in) == 0 {
		t.Fatal("the actor id is in no file before the scrub: the test cannot tell")
	}
	for _, log := range logs {
		n, err := db.ScrubEvents(ctx, log, 1, 120, nil)
		if err != nil || n != 120 {
			t.Fatalf("ScrubEvents(%s) = %d, %v; want 120 rows", log, n, err)
		}
	}
	if in := found(); len(in) > 0 {
		t.Errorf("the scrubbed actor id is still in %v", in)
	}
	// The catalog goes on: the scratch table is gone and the freed pages are reused.
	if err := db.w.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'scrub_free'`).Scan(&free); err != nil || free != 0 {
		t.Fatalf("scrub_free left behind (%d, %v)", free, err)
	}
	if !db.recent.clean.Load() {
		t.Error("the free list is not marked clean after the scrubs")
	}
	catalogtest.Seal(t, db, logs[0], "evt_after_", 2)
	mergeAll(t, db)
	if db.recent.clean.Load() {
		t.Error("the free list is still marked clean after a merge that moved rows")
	}
	var sd int
	if err := db.w.QueryRowContext(ctx, `PRAGMA secure_delete`).Scan(&sd); err != nil || sd != 1 {
		t.Fatalf("secure_delete = %d (%v) after merges; want 1", sd, err)
	}
}
