package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// openHeld opens a catalog in a temporary directory, closed when the test ends, with
// its indexer held: the test indexes by calling index itself.
func openHeld(t testing.TB) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.terms.hold(true)
	return db
}

// postingRow is one term_postings row, its sequences parsed.
type postingRow struct {
	log, kind int64
	value     string
	last      int64
	seqs      string
}

func dumpPostings(t *testing.T, db *DB) []postingRow {
	t.Helper()
	var out []postingRow
	err := eachRow(context.Background(), db.terms.w, `SELECT log, kind, value, last, seqs FROM term_postings
		ORDER BY log, kind, value, last`, nil, func(r *sql.Rows) error {
		var p postingRow
		if err := r.Scan(&p.log, &p.kind, &p.value, &p.last, &p.seqs); err != nil {
			return err
		}
		seqs, err := parseSeqs(p.seqs) // sorted: group_concat promises no order
		if err != nil {
			return err
		}
		p.seqs = fmt.Sprint(seqs)
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecentPostingsMatchCatalog indexes the same events twice, in the same chunks:
// from the ids the seals handed over, then, emptied, from the catalog. Both must
// write the same postings.
func TestRecentPostingsMatchCatalog(t *testing.T) {
	ctx := context.Background()
	db := openHeld(t)
	r := rand.New(rand.NewPCG(7, 7))
	evs := genEvents(3, "e", 3000)
	for i := range evs {
		if r.IntN(3) == 0 { // some ids recur in many chunks, some once
			evs[i].ActorID = fmt.Sprintf("once_%d", i)
		}
	}
	var sizes []int
	for left := len(evs); left > 0; {
		n := min(left, 1+r.IntN(120))
		sizes = append(sizes, n)
		left -= n
	}
	sealBatches(t, db, termLogA, evs, sizes...)
	n := mustLogNum(t, db, termLogA)
	if _, ok := db.terms.kept(n, 1, uint64(len(evs))); !ok {
		t.Fatal("the seals' ids are not kept for the indexer")
	}
	var chunks []uint64
	for to := uint64(0); to < uint64(len(evs)); {
		to = min(uint64(len(evs)), to+1+uint64(r.IntN(700)))
		chunks = append(chunks, to)
	}
	indexAll := func() {
		for _, to := range chunks {
			if err := db.terms.index(ctx, n, to); err != nil {
				t.Fatal(err)
			}
		}
	}
	indexAll()
	if len(db.terms.recent) != 0 {
		t.Fatalf("ids still kept after indexing: %d logs", len(db.terms.recent))
	}
	fromMemory := dumpPostings(t, db)
	checkTermsConsistent(t, db, map[catalog.LogID][]catalog.Event{termLogA: evs})

	if _, err := db.terms.w.ExecContext(ctx, `DELETE FROM term_postings; DELETE FROM term_segments; DELETE FROM term_state`); err != nil {
		t.Fatal(err)
	}
	db.terms.mu.Lock()
	clear(db.terms.indexed)
	db.terms.mu.Unlock()
	if _, ok := db.terms.kept(n, 1, 1); ok {
		t.Fatal("ids kept after they were indexed")
	}
	indexAll()
	fromCatalog := dumpPostings(t, db)
	if len(fromMemory) < len(chunks) || !reflect.DeepEqual(fromMemory, fromCatalog) {
		t.Fatalf("postings differ: %d rows from the seals' ids, %d from the catalog", len(fromMemory), len(fromCatalog))
	}
}

// TestRecentKeepsOnlyContiguousIDs checks the bookkeeping of kept ids: a gap, an
// indexed prefix, and the bound each start over or drop them, never leaving a view
// that names the wrong sequences.
func TestRecentKeepsOnlyContiguousIDs(t *testing.T) {
	ti := &termIndex{indexed: map[int64]uint64{}, recent: map[int64]*recent{}}
	ev := func(seq uint64) catalog.Event {
		return catalog.Event{Sequence: seq, ActorID: fmt.Sprint("a", seq), TargetID: fmt.Sprint("t", seq),
			Action: fmt.Sprint("act", seq%3), Status: [...]string{"success", "failed"}[seq%2]}
	}
	evs := func(from, to uint64) []catalog.Event {
		var out []catalog.Event
		for s := from; s <= to; s++ {
			out = append(out, ev(s))
		}
		return out
	}
	ti.keep(1, evs(1, 10))
	ti.keep(1, evs(11, 20))
	got, ok := ti.kept(1, 5, 20)
	for k, want := range [][2]string{{"a5", "a20"}, {"t5", "t20"}, {"act2", "act2"}, {"failed", "success"}} {
		if !ok || len(got[k]) != 16 || got[k][0] != want[0] || got[k][15] != want[1] {
			t.Fatalf("kept(5, 20) = %v, %v; want kind %d from %s to %s", got, ok, termKinds[k], want[0], want[1])
		}
	}
	if _, ok := ti.kept(1, 5, 21); ok {
		t.Fatal("kept past the last event")
	}
	ti.forget(1, 12)
	if _, ok := ti.kept(1, 12, 13); ok {
		t.Fatal("kept a forgotten event")
	}
	if got, ok := ti.kept(1, 13, 20); !ok || got[0][0] != "a13" || got[0][7] != "a20" || got[3][0] != "failed" || len(got[3]) != 8 {
		t.Fatalf("after forget(12): kept(13, 20) = %v, %v", got, ok)
	}
	ti.keep(1, evs(25, 30)) // a gap: start over at 25
	if _, ok := ti.kept(1, 13, 13); ok {
		t.Fatal("kept ids across a gap")
	}
	if got, ok := ti.kept(1, 25, 30); !ok || got[0][0] != "a25" || got[2][0] != "act1" {
		t.Fatalf("after a gap: kept(25, 30) = %v, %v", got, ok)
	}
	ti.indexed[1] = 40
	ti.keep(1, evs(35, 36)) // a gap to events already indexed: nothing kept
	if _, ok := ti.recent[1]; ok {
		t.Fatal("kept ids of events already indexed")
	}
	ti.keep(2, evs(1, keptMax+1)) // more than the bound at once
	if _, ok := ti.recent[2]; ok {
		t.Fatal("kept more than keptMax ids")
	}
	if _, ok := ti.recent[1]; ok || ti.keptTotal != 0 {
		t.Fatalf("another stream's ids kept past the bound (%d kept in all)", ti.keptTotal)
	}
	ti.keep(3, evs(1, keptMax))
	ti.keep(3, evs(keptMax+1, keptMax+1)) // over the bound: start over
	if got, ok := ti.kept(3, keptMax+1, keptMax+1); !ok || len(ti.recent[3].terms[0]) != 1 || got[0][0] != fmt.Sprint("a", keptMax+1) {
		t.Fatalf("over the bound: kept = %v, %v", got, ok)
	}
	ti.forget(3, keptMax+1)
	if _, ok := ti.recent[3]; ok || ti.keptTotal != 0 {
		t.Fatalf("forgetting every kept id left an entry (%d kept in all)", ti.keptTotal)
	}

	// The bound is over all streams: a quiet stream's ids wait until a whole chunk
	// of it does, so the streams that fill it are dropped for the one that
	// crosses it, which keeps its own.
	for n := int64(10); n < 14; n++ {
		ti.keep(n, evs(1, keptMax/4))
	}
	if ti.keptTotal != keptMax {
		t.Fatalf("%d ids kept in four streams of %d", ti.keptTotal, keptMax/4)
	}
	ti.keep(13, evs(keptMax/4+1, keptMax/4+2))
	if len(ti.recent) != 1 || ti.keptTotal != keptMax/4+2 {
		t.Fatalf("past the bound: %d streams and %d ids kept, want stream 13's %d alone", len(ti.recent), ti.keptTotal, keptMax/4+2)
	}
	if got, ok := ti.kept(13, 1, keptMax/4+2); !ok || got[0][keptMax/4+1] != fmt.Sprint("a", keptMax/4+2) {
		t.Fatal("the stream that crossed the bound lost its ids")
	}
	ti.forget(13, 10)
	if ti.keptTotal != keptMax/4+2-10 {
		t.Fatalf("after forget(13, 10): %d ids kept in all, want %d", ti.keptTotal, keptMax/4+2-10)
	}
}

func TestGroupPostings(t *testing.T) {
	got := group(10, []string{"b", "a", "", "b", "c", "b", "a"})
	want := []posting{{"a", 16, []byte("11,16")}, {"b", 15, []byte("10,13,15")}, {"c", 14, []byte("14")}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("group = %+v, want %+v", got, want)
	}
}

// BenchmarkTermIndex measures the indexer alone: it indexes b.N events sealed while
// it was held, whose actor and target ids are drawn from a vocabulary of the given
// size (256: ids that recur, as users do; 0: a new id per event).
func BenchmarkTermIndex(b *testing.B) {
	for _, source := range []string{"kept", "catalog"} {
		for _, vocab := range []int{256, 0} {
			b.Run(fmt.Sprintf("source=%s/vocabulary=%d", source, vocab), func(b *testing.B) {
				benchTermIndex(b, source == "kept", vocab)
			})
		}
	}
}

// benchTermIndex indexes b.N events sealed in batches of 400, a chunk at a time as
// the indexer does, from the ids the seals kept or from the catalog, with vocab
// distinct actor and target ids (0: all unique). Only the indexing is timed.
func benchTermIndex(b *testing.B, kept bool, vocab int) {
	ctx := context.Background()
	db := openHeld(b)
	evs := genEvents(1, "e", b.N)
	for i := range evs {
		id := i
		if vocab > 0 {
			id = i % vocab
		}
		evs[i].ActorID, evs[i].TargetID = fmt.Sprintf("user_%d", id), fmt.Sprintf("doc_%d", id*7)
	}
	n := int64(0)
	b.ResetTimer()
	for from := 0; from < b.N; from += termChunk {
		b.StopTimer()
		chunk := evs[from:min(b.N, from+termChunk)]
		for len(chunk) > 0 {
			k := min(len(chunk), 400)
			sealBatches(b, db, termLogA, chunk[:k], k)
			chunk = chunk[k:]
		}
		if n == 0 {
			n = mustLogNum(b, db, termLogA)
		}
		if !kept {
			db.terms.mu.Lock()
			clear(db.terms.recent)
			db.terms.mu.Unlock()
		}
		b.StartTimer()
		if err := db.terms.index(ctx, n, uint64(min(b.N, from+termChunk))); err != nil {
			b.Fatal(err)
		}
	}
}
