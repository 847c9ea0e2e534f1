package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// openWholeChunks is openHeld with the indexer's default minChunk (TestMain makes
// every other test's index every event).
func openWholeChunks(t testing.TB) *DB {
	t.Helper()
	db := openHeld(t)
	db.terms.mu.Lock()
	db.terms.minChunk = termChunk
	db.terms.mu.Unlock()
	return db
}

// thousands returns batch sizes of 1,000 that add up to n.
func thousands(n int) []int {
	var sizes []int
	for ; n > 0; n -= min(n, 1000) {
		sizes = append(sizes, min(n, 1000))
	}
	return sizes
}

// catchUpHeld runs one catch-up of db's held indexer (openHeld) and holds it again.
func catchUpHeld(tb testing.TB, db *DB) {
	tb.Helper()
	db.terms.hold(false)
	defer db.terms.hold(true)
	if err := db.terms.catchUp(); err != nil {
		tb.Fatal(err)
	}
}

// TestWholeChunksOnly: at the default minChunk the indexer leaves a project-stream
// alone until a whole chunk of it waits, then indexes that chunk as one final segment;
// queries stay exact over the events after the watermark, and the seals' terms stay
// kept until their chunk is indexed.
func TestWholeChunksOnly(t *testing.T) {
	ctx := context.Background()
	db := openWholeChunks(t)
	quiet := genEvents(5, "q", termChunk)
	busy := genEvents(6, "b", termChunk+300)
	sealBatches(t, db, termLogA, quiet[:termChunk-1], thousands(termChunk-1)...)
	sealBatches(t, db, termLogB, busy, thousands(len(busy))...)
	catchUpHeld(t, db)
	marks := checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: quiet[:termChunk-1], termLogB: busy})
	if marks[termLogA] != 0 || marks[termLogB] != termChunk {
		t.Fatalf("watermarks: %s at %d of %d events, %s at %d of %d; want 0 and %d", termLogA, marks[termLogA], termChunk-1,
			termLogB, marks[termLogB], len(busy), termChunk)
	}
	segments := func() []termSeg {
		t.Helper()
		var out []termSeg
		if err := eachRow(ctx, db.terms.w, `SELECT lo, hi FROM term_segments ORDER BY log, lo`, nil, func(r *sql.Rows) error {
			var s termSeg
			err := r.Scan(&s.lo, &s.hi)
			out = append(out, s)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := segments(); !slices.Equal(got, []termSeg{{0, termChunk}}) {
		t.Fatalf("segments %v, want the busy stream's first chunk alone", got)
	}
	db.terms.mu.Lock()
	kept := db.terms.keptTotal
	db.terms.mu.Unlock()
	if kept != termChunk-1+300 {
		t.Fatalf("%d events' terms kept, want the quiet stream's %d and the busy one's last 300", kept, termChunk-1)
	}
	checkQueries(t, db, termLogA, quiet[:termChunk-1], queryShapes(), 1, 4)
	checkQueries(t, db, termLogB, busy, queryShapes(), 1, 4)

	// The quiet stream's next event completes its chunk.
	sealBatches(t, db, termLogA, quiet[termChunk-1:], 1)
	catchUpHeld(t, db)
	marks = checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: quiet, termLogB: busy})
	if marks[termLogA] != termChunk || marks[termLogB] != termChunk {
		t.Fatalf("watermarks after the quiet stream's whole chunk: %d and %d, want %d", marks[termLogA], marks[termLogB], termChunk)
	}
	if got := segments(); len(got) != 2 || got[0] != got[1] || got[0] != (termSeg{0, termChunk}) {
		t.Fatalf("segments %v, want one whole chunk of each stream", got)
	}
	checkQueries(t, db, termLogA, quiet, queryShapes(), 1, 4)
}

// BenchmarkQueryTail measures a query by actor over a project-stream of termChunk-1
// events, the most the default indexer leaves unindexed, against the same events
// indexed: an actor with no event (the whole tail scanned), one in about every eighth
// event (a page of 100 found early), and the newest page of a descending query.
func BenchmarkQueryTail(b *testing.B) {
	ctx := context.Background()
	for _, indexed := range []bool{false, true} {
		db := openHeld(b)
		evs := genEvents(5, "q", termChunk-1)
		sealBatches(b, db, termLogA, evs, thousands(len(evs))...)
		if indexed {
			catchUpHeld(b, db) // TestMain's IndexEveryEvent: every event
		}
		name := map[bool]string{false: "tail", true: "indexed"}[indexed]
		for _, q := range []struct {
			name string
			q    catalog.Query
		}{
			{"absent", catalog.Query{ActorID: "nobody", Limit: 100}},
			{"frequent", catalog.Query{ActorID: "u1", Limit: 100}},
			{"frequent-desc", catalog.Query{ActorID: "u1", Limit: 100, Descending: true}},
		} {
			b.Run(name+"/"+q.name, func(b *testing.B) {
				q.q.Log = termLogA
				for b.Loop() {
					if _, err := db.QueryEvents(ctx, q.q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestScrubBeforeWholeChunk: events scrubbed before their chunk is indexed are indexed
// as the scrub left them, not from the terms their seals handed over.
func TestScrubBeforeWholeChunk(t *testing.T) {
	ctx := context.Background()
	db := openWholeChunks(t)
	const secret = "actor-to-forget-"
	evs := genEvents(8, "s", termChunk)
	for i := range 100 {
		evs[i].ActorID = fmt.Sprint(secret, i)
	}
	sealBatches(t, db, termLogA, evs[:termChunk-1], thousands(termChunk-1)...)
	if _, ok := db.terms.kept(mustLogNum(t, db, termLogA), 1, 100); !ok {
		t.Fatal("the seals' terms are not kept: the test cannot tell")
	}
	db.terms.hold(false)
	if n, err := db.ScrubEvents(ctx, termLogA, 1, 100, nil); err != nil || n != 100 {
		t.Fatalf("ScrubEvents = %d, %v; want 100 rows", n, err)
	}
	db.terms.hold(true)
	for i := range 100 {
		evs[i].Action, evs[i].ActorType, evs[i].ActorID, evs[i].TargetType, evs[i].TargetID = "", "", "", "", ""
	}
	sealBatches(t, db, termLogA, evs[termChunk-1:], 1)
	catchUpHeld(t, db)
	if marks := checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: evs}); marks[termLogA] != termChunk {
		t.Fatalf("watermark %d, want the whole chunk, %d", marks[termLogA], termChunk)
	}
	var named int
	if err := db.terms.w.QueryRowContext(ctx, `SELECT count(*) FROM term_postings WHERE value LIKE ?`, secret+"%").Scan(&named); err != nil || named != 0 {
		t.Fatalf("%d postings (%v) name a scrubbed actor", named, err)
	}
}
