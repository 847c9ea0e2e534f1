package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	db.terms.hold(true) // the test runs the vacuum itself, below
	for _, log := range logs {
		n, err := db.ScrubEvents(ctx, log, 1, 120, nil)
		if err != nil || n != 120 {
			t.Fatalf("ScrubEvents(%s) = %d, %v; want 120 rows", log, n, err)
		}
	}
	// The term file keeps copies in the unused space of pages it rebuilt
	// (terms_vacuum.go) until its vacuum, due termVacuumDelay after the last scrub.
	if ran, err := db.terms.vacuumIfDue(ctx, time.Now()); err != nil || ran {
		t.Fatalf("vacuum ran at once after the scrubs (%v, %v); want it termVacuumDelay later", ran, err)
	}
	db.terms.hold(false)
	if ran, err := db.terms.vacuumIfDue(ctx, time.Now().Add(termVacuumDelay)); err != nil || !ran {
		t.Fatalf("vacuum due after the scrubs: ran %v, %v", ran, err)
	}
	if gen, err := db.terms.vacuumGen(ctx); err != nil || gen != 0 {
		t.Fatalf("vacuum record %d (%v) after the vacuum; want none", gen, err)
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

// TestTermVacuumAfterReopen checks that a scrub's vacuum survives a close (or a crash)
// before it ran: the record is in the term file, and the next open runs it at once.
func TestTermVacuumAfterReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close) // closed below; a second Close does nothing
	log := catalog.LogID{ProjectID: "prj_vacuum", Stream: catalog.StreamEvents}
	catalogtest.Seal(t, db, log, "evt_v_", 5)
	if err := db.terms.catchUp(); err != nil {
		t.Fatal(err)
	}
	if n, err := db.ScrubEvents(ctx, log, 1, 3, nil); err != nil || n != 3 {
		t.Fatalf("ScrubEvents = %d, %v; want 3 rows", n, err)
	}
	if gen, err := db.terms.vacuumGen(ctx); err != nil || gen != 1 {
		t.Fatalf("vacuum record %d (%v) after a scrub; want 1", gen, err)
	}
	if n, err := db.ScrubEvents(ctx, log, 1, 3, nil); err != nil || n != 0 {
		t.Fatalf("ScrubEvents again = %d, %v; want 0 rows", n, err)
	}
	if gen, err := db.terms.vacuumGen(ctx); err != nil || gen != 1 {
		t.Fatalf("vacuum record %d (%v) after a scrub that removed nothing; want 1", gen, err)
	}
	db.Close()
	again := openRecent(t, path, Options{})
	again.terms.hold(true)
	if gen, err := again.terms.vacuumGen(ctx); err != nil || gen != 1 {
		t.Fatalf("vacuum record %d (%v) after reopening; want 1", gen, err)
	}
	again.terms.hold(false)
	if ran, err := again.terms.vacuumIfDue(ctx, time.Now()); err != nil || !ran {
		// The indexer may have run it first; then the record is gone.
		if gen, gerr := again.terms.vacuumGen(ctx); err != nil || gerr != nil || gen != 0 {
			t.Fatalf("vacuum after reopening: ran %v, %v; record %d (%v)", ran, err, gen, gerr)
		}
	}
	if gen, err := again.terms.vacuumGen(ctx); err != nil || gen != 0 {
		t.Fatalf("vacuum record %d (%v) after the vacuum; want none", gen, err)
	}
	// The index answers as before: actor u4 (sequence 4) kept, u1 (sequence 1) scrubbed.
	for actor, want := range map[string]int{"u4": 1, "u1": 0} {
		got, err := again.QueryEvents(ctx, catalog.Query{Log: log, ActorID: actor, Limit: 10})
		if err != nil || len(got) != want {
			t.Fatalf("actor %s after the vacuum: %d events, %v; want %d", actor, len(got), err, want)
		}
	}
}

// TestTermVacuumRemovesStaleCopies shows what the vacuum after a scrub is for, without
// depending on timing: postings inserted in a shuffled order make SQLite rebuild full
// leaves, deleting some of them then leaves copies of their bytes in the unused space
// of live pages (secure_delete notwithstanding), and the vacuum removes them. The
// rows go into the term file directly; the seed is the first that leaves a copy.
func TestTermVacuumRemovesStaleCopies(t *testing.T) {
	ctx := context.Background()
	const secret = "stale-secret"
	for seed := range 50 {
		path := filepath.Join(t.TempDir(), "c.db")
		db := openRecent(t, path, Options{})
		db.terms.hold(true)
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		tx, err := db.terms.w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range r.Perm(400) {
			value := fmt.Sprintf("%04d-keep", k)
			if k%3 == 0 {
				value = fmt.Sprintf("%04d-%s", k, secret)
			}
			seqs := strings.Repeat("9,", 1+r.IntN(15)) + "9"
			if _, err := tx.ExecContext(ctx, `INSERT INTO term_postings(log, seg, kind, value, last, seqs) VALUES (1, 0, 1, ?, ?, ?)`,
				value, k, seqs); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM term_postings WHERE value LIKE '%`+secret+`'`); err != nil {
			t.Fatal(err)
		}
		if err := noteVacuum(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		copies := func() int {
			if _, err := db.terms.w.ExecContext(ctx, `PRAGMA main.wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path + termsSuffix)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Count(b, []byte(secret))
		}
		n := copies()
		if n == 0 {
			continue // no page kept a copy with this order: try the next
		}
		db.terms.vacuumAfter(time.Now())
		db.terms.hold(false)
		if ran, err := db.terms.vacuumIfDue(ctx, time.Now().Add(termVacuumDelay)); err != nil || !ran {
			t.Fatalf("vacuum: ran %v, %v", ran, err)
		}
		if left := copies(); left != 0 {
			t.Fatalf("seed %d: %d copies of deleted postings before the vacuum, %d after; want none", seed, n, left)
		}
		var rows int
		if err := db.terms.w.QueryRowContext(ctx, `SELECT count(*) FROM term_postings`).Scan(&rows); err != nil || rows != 266 {
			t.Fatalf("%d postings after the vacuum (%v); want the 266 kept", rows, err)
		}
		return
	}
	t.Fatal("no insertion order left a copy of a deleted posting: the test cannot tell")
}
