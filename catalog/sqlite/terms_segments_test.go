package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

func TestTier(t *testing.T) {
	for _, c := range []struct {
		size uint64
		tier int
	}{{1, 0}, {7, 0}, {8, 1}, {63, 1}, {64, 2}, {511, 2}, {512, 3}, {4095, 3}, {4096, 4}, {32767, 4}, {32768, 5}} {
		if got := tier(c.size); got != c.tier {
			t.Errorf("tier(%d) = %d, want %d", c.size, got, c.tier)
		}
	}
}

func TestMergeable(t *testing.T) {
	// segs builds contiguous segments of the given sizes.
	segs := func(sizes ...uint64) []termSeg {
		var out []termSeg
		lo := uint64(100)
		for _, s := range sizes {
			out = append(out, termSeg{lo: lo, hi: lo + s})
			lo += s
		}
		return out
	}
	for _, c := range []struct {
		name string
		tail []termSeg
		want int
	}{
		{"too few", segs(3, 3, 3, 3, 3, 3, 3), 0},
		{"eight of tier 0", segs(3, 3, 3, 3, 3, 3, 3, 3), 8},
		{"a smaller one among them", segs(9, 9, 2, 9, 9, 9, 9, 9), 8},
		{"a larger one among them", segs(9, 9, 64, 9, 9, 9, 9, 9), 0},
		{"the newest smaller", segs(9, 9, 9, 9, 9, 9, 9, 3), 0},
		{"older ones beyond eight", segs(64, 9, 9, 9, 9, 9, 9, 9, 9), 8},
		{"a final one among them", segs(9, 9, termSegmentFinal, 9, 9, 9, 9, 9), 0},
		{"all final", segs(termSegmentFinal, termSegmentFinal, termSegmentFinal, termSegmentFinal,
			termSegmentFinal, termSegmentFinal, termSegmentFinal, termSegmentFinal), 0},
	} {
		if got := mergeable(c.tail); got != c.want {
			t.Errorf("%s: mergeable = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestTermSegmentsMerge indexes a log in many small chunks, as a quiet project-stream's
// are, and checks that the indexer merges their segments (few segments, a value's rows
// from consecutive chunks joined) while the index stays exact, across a reopen (which
// starts with no tails in memory) and against queries.
func TestTermSegmentsMerge(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	db.terms.hold(true)
	const total = 3000
	evs := genEvents(7, "m", total)
	sealBatches(t, db, termLogA, evs, 1000, 1000, 1000)
	n := mustLogNum(t, db, termLogA)

	r := rand.New(rand.NewPCG(7, 7))
	chunkRows := 0 // posting rows the chunks would have without merges
	index := func(upTo uint64) {
		t.Helper()
		from := termState(t, db)[n]
		for from < upTo {
			to := min(upTo, from+1+r.Uint64N(9))
			distinct := map[[2]string]bool{}
			for _, e := range evs[from:to] {
				for k, v := range eventTerms(&e) {
					if v != "" {
						distinct[[2]string{fmt.Sprint(k), v}] = true
					}
				}
			}
			chunkRows += len(distinct)
			if err := db.terms.index(ctx, n, to); err != nil {
				t.Fatal(err)
			}
			from = to
		}
	}
	index(1500)
	checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: evs})
	// Reopened, the indexer reads the tails from the file.
	db.Close()
	if db, err = Open(ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	db.terms.hold(true)
	index(total)
	checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: evs})

	var segments, largest, rows int
	if err := db.terms.w.QueryRowContext(ctx, `SELECT count(*), max(hi - lo), (SELECT count(*) FROM term_postings WHERE log = ?1)
		FROM term_segments WHERE log = ?1`, n).Scan(&segments, &largest, &rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d segments, the largest of %d events, %d posting rows (%d without merges)", segments, largest, rows, chunkRows)
	// At most termFanout-1 segments of each tier below that of the whole log, and
	// the merges reached the tier of the log's size.
	if bound := (termFanout - 1) * (tier(total) + 1); segments > bound {
		t.Errorf("%d segments, want at most %d", segments, bound)
	}
	if largest < total/termFanout {
		t.Errorf("the largest segment has %d events, want at least %d", largest, total/termFanout)
	}
	// The ids and actions recur: joined rows are far fewer than the chunks'.
	if rows*4 > chunkRows {
		t.Errorf("%d posting rows, want at most a quarter of the chunks' %d", rows, chunkRows)
	}
	// Queries across the segments, two read at a time: the shapes without extra
	// filters (the race detector makes each query slow; TestQueryTermsAgainstScan
	// runs them all on a smaller log).
	defer func(rows, lookup, segs int) { postingRows, termLookup, segmentRows = rows, lookup, segs }(postingRows, termLookup, segmentRows)
	postingRows, termLookup, segmentRows = 4, 16, 2
	shapes := queryShapes()
	var drivers []catalog.Query
	for i := 0; i < len(shapes); i += 3 {
		drivers = append(drivers, shapes[i])
	}
	checkQueries(t, db, termLogA, evs, drivers, 2, 4)
}

// TestTermSegmentsBounded checks that a merged row never holds more than postingMax
// sequences: a value in every event of a long log.
func TestTermSegmentsBounded(t *testing.T) {
	ctx := context.Background()
	db := openHeld(t)
	evs := genEvents(8, "b", 9000)
	for i := range evs {
		evs[i].Status = "success"
	}
	sealBatches(t, db, termLogA, evs, 3000, 3000, 3000)
	n := mustLogNum(t, db, termLogA)
	for to := uint64(0); to < 9000; {
		to = min(9000, to+40)
		if err := db.terms.index(ctx, n, to); err != nil {
			t.Fatal(err)
		}
	}
	checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: evs})
	var most, rows int
	if err := eachRow(ctx, db.terms.w, `SELECT seqs FROM term_postings WHERE log = ? AND kind = ? AND value = 'success'`,
		[]any{n, termStatus}, func(r *sql.Rows) error {
			var list string
			if err := r.Scan(&list); err != nil {
				return err
			}
			seqs, err := parseSeqs(list)
			most = max(most, len(seqs))
			rows++
			return err
		}); err != nil {
		t.Fatal(err)
	}
	if most > postingMax || most < postingMax/2 {
		t.Errorf("the longest row of a status in every event holds %d sequences, want %d/2..%d", most, postingMax, postingMax)
	}
	t.Logf("%d rows for the status, the longest of %d sequences", rows, most)
}
