package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// TestSealCacheSeesOtherConnections seals one project-stream through two handles on
// one file in turn: each handle's cached checkpoint goes stale when the other commits,
// and the data_version check must notice it, so no seal fails.
func TestSealCacheSeesOtherConnections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	a, b := openAt(t, path), openAt(t, path)
	log := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	size := uint64(0)
	for i, db := range []*DB{a, b, a, a, b, b, a} {
		cp := catalogtest.Seal(t, db, log, string(rune('a'+i)), i+1)
		size += uint64(i + 1)
		if cp.Size != size {
			t.Fatalf("seal %d: size %d, want %d", i, cp.Size, size)
		}
	}
	for _, db := range []*DB{a, b} {
		if cp := catalogtest.CheckConsistent(t, db, log); cp.Size != size {
			t.Fatalf("size %d, want %d", cp.Size, size)
		}
	}
}

// TestSealCacheDropsOnConflict makes a handle's cached checkpoint stale behind the
// data_version check (as when the other commit lands during the seal): the seal must
// fail with ErrConflict and commit nothing, and the next one start from the file.
func TestSealCacheDropsOnConflict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	a, b := openAt(t, path), openAt(t, path)
	ctx := context.Background()
	logs := []catalog.LogID{{ProjectID: "prj_a", Stream: catalog.StreamEvents}, {ProjectID: "prj_b", Stream: catalog.StreamEvents}}
	for _, log := range logs {
		catalogtest.Seal(t, a, log, "a", 2)
	}
	catalogtest.Seal(t, b, logs[1], "b", 3)
	// a takes b's commit for its own: the cache stays.
	var v int64
	if err := a.tick.version.QueryRowContext(ctx).Scan(&v); err != nil {
		t.Fatal(err)
	}
	a.seals.mu.Lock()
	a.seals.version = v
	a.seals.mu.Unlock()
	_, err := a.SealGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		var out []*catalog.SealBatch
		for _, cp := range cps {
			out = append(out, &catalog.SealBatch{BatchID: fmt.Sprintf("x%d", cp.Size+1),
				Events: catalogtest.MakeEvents("x", cp.Size+1, 1), Root: catalogtest.H("x")})
		}
		return out, nil, nil
	})
	if !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "1 of 2 checkpoints moved") {
		t.Fatalf("seal over a stale cached checkpoint: %v, want ErrConflict for 1 of 2", err)
	}
	for i, want := range []uint64{2, 5} {
		if cp := catalogtest.CheckConsistent(t, a, logs[i]); cp.Size != want {
			t.Fatalf("%s: size %d after the failed seal, want %d", logs[i], cp.Size, want)
		}
	}
	for i, want := range []uint64{3, 6} {
		if cp := catalogtest.Seal(t, a, logs[i], "y", 1); cp.Size != want {
			t.Fatalf("%s: size %d after the next seal, want %d", logs[i], cp.Size, want)
		}
		catalogtest.CheckConsistent(t, a, logs[i])
	}
}

// TestUpdatePlan checks that the many-row checkpoint UPDATE looks each row up by its
// (project_id, stream) key rather than scanning the table once per row, and that the term
// indexer's reads of many streams at once look their rows up by key.
func TestUpdatePlan(t *testing.T) {
	db := openAt(t, filepath.Join(t.TempDir(), "c.db"))
	for _, c := range []struct {
		q     string
		db    *sql.DB
		args  []any
		want  string
		never string
	}{
		{updateStatement(4), db.w, make([]any, 4*updateCols), "SEARCH checkpoints USING INTEGER PRIMARY KEY (rowid=?)", "SCAN checkpoints"},
		{`SELECT log, indexed_seq FROM term_state WHERE log IN (SELECT value FROM json_each(?))`, db.terms.w, []any{"[1,2]"},
			"SEARCH term_state USING INTEGER PRIMARY KEY", "SCAN term_state"},
		{seenQuery, db.terms.w, []any{"[1,2]"}, "SEARCH cat.events USING INTEGER PRIMARY KEY", "SCAN cat.events"},
		{seenQuery, db.terms.w, []any{"[1,2]"}, "SEARCH cat.events_recent USING COVERING INDEX events_recent_k (k=?)", "SCAN cat.events"},
		// The seal's look-up of a tick's event ids in events (recent.go).
		{idsStatement(4), db.w, make([]any, 4*idCols), "SEARCH e USING COVERING INDEX events_id (log=? AND event_id=?)", "SCAN e"},
	} {
		plan := queryPlan(t, c.db, c.q, c.args)
		if !strings.Contains(plan, c.want) || strings.Contains(plan, c.never) {
			t.Errorf("plan of %.60q: %s", c.q, plan)
		}
	}
}

// queryPlan returns the EXPLAIN QUERY PLAN of q, its steps joined by "; ".
func queryPlan(t *testing.T, db *sql.DB, q string, args []any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

func openAt(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// TestSealCacheBound checks that the cache keeps at most sealCacheMax streams and
// never hands out its own compact range.
func TestSealCacheBound(t *testing.T) {
	var c sealCache
	for i := range sealCacheMax + 10 {
		log := catalog.LogID{ProjectID: fmt.Sprintf("prj_%d", i), Stream: catalog.StreamEvents}
		c.put(log, sealState{cp: catalog.Checkpoint{Log: log, Size: 1, Range: []catalog.Hash{catalogtest.H("r")}}})
	}
	if len(c.m) != sealCacheMax {
		t.Fatalf("%d streams cached, want %d", len(c.m), sealCacheMax)
	}
	log := catalog.LogID{ProjectID: "prj_last", Stream: catalog.StreamEvents}
	c.put(log, sealState{cp: catalog.Checkpoint{Log: log, Size: 1, Range: []catalog.Hash{catalogtest.H("r")}}})
	s, ok := c.get(log)
	if !ok || len(s.cp.Range) != 1 {
		t.Fatalf("the last stream put: %v, %+v", ok, s)
	}
	s.cp.Range[0] = catalogtest.H("changed")
	if again, _ := c.get(log); again.cp.Range[0] != catalogtest.H("r") {
		t.Fatal("changing a checkpoint from get changed the cache")
	}
}
