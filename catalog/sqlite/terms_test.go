package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// termBase is the earliest receive time genEvents gives; receive times are spread over
// the hour after it, out of sequence order.
var termBase = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)

// genEvents returns n index rows with sequences 1..n and field values drawn from a
// small vocabulary, so that actor and target ids are shared between the two sides and
// between types, some events have their actor as target, and some have no actor or no
// target id.
func genEvents(seed uint64, prefix string, n int) []catalog.Event {
	r := rand.New(rand.NewPCG(seed, 99))
	type ent struct{ typ, id string }
	actors := []ent{{"user", "u1"}, {"user", "u2"}, {"user", "u3"}, {"service", "s1"},
		{"service", "d1"}, {"doc", "d2"}, {"user", ""}, {"", ""}}
	targets := []ent{{"doc", "d1"}, {"doc", "d2"}, {"doc", "d3"}, {"user", "u1"}, {"user", "u2"},
		{"", ""}, {"doc", ""}, {"service", "s1"}}
	actions := []string{"login", "read", "write", "delete"}
	evs := make([]catalog.Event, n)
	for i := range evs {
		seq := uint64(i + 1)
		a := actors[r.IntN(len(actors))]
		tg := targets[r.IntN(len(targets))]
		if r.IntN(8) == 0 {
			tg = a // the actor acts on itself
		}
		var recv int64
		if r.IntN(10) == 0 {
			recv = int64(r.IntN(4)) * 900_000 // a few events share a receive time
		} else {
			recv = r.Int64N(3_600_000)
		}
		evs[i] = catalog.Event{
			Sequence:    seq,
			ID:          fmt.Sprintf("%s%d", prefix, seq),
			ReceivedAt:  time.UnixMilli(termBase.UnixMilli() + recv).UTC(),
			Action:      actions[r.IntN(len(actions))],
			Status:      [...]string{"success", "failed"}[r.IntN(2)],
			ActorType:   a.typ,
			ActorID:     a.id,
			TargetType:  tg.typ,
			TargetID:    tg.id,
			PayloadHash: catalogtest.H("payload " + prefix + fmt.Sprint(seq)),
			LeafHash:    catalogtest.H("leaf " + prefix + fmt.Sprint(seq)),
		}
	}
	return evs
}

// sealBatches seals evs (sequences following the log's size) into log in batches of
// the given sizes, which must add up to len(evs).
func sealBatches(t testing.TB, db *DB, log catalog.LogID, evs []catalog.Event, sizes ...int) {
	t.Helper()
	for _, n := range sizes {
		batch := evs[:n]
		evs = evs[n:]
		cp, err := db.Seal(context.Background(), log, func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			if cp.Size+1 != batch[0].Sequence {
				return nil, fmt.Errorf("checkpoint of %s has size %d, batch starts at %d", log, cp.Size, batch[0].Sequence)
			}
			last := batch[len(batch)-1].Sequence
			return &catalog.SealBatch{BatchID: fmt.Sprintf("b%d", batch[0].Sequence), Events: batch,
				Root: catalogtest.H(fmt.Sprint("root ", last)), Range: []catalog.Hash{catalogtest.H(fmt.Sprint("range ", last))}}, nil
		})
		if err != nil {
			t.Fatalf("Seal(%s, %d events): %v", log, n, err)
		}
		if cp.Size != batch[len(batch)-1].Sequence {
			t.Fatalf("Seal(%s) returned size %d, want %d", log, cp.Size, batch[len(batch)-1].Sequence)
		}
	}
	if len(evs) != 0 {
		t.Fatalf("sealBatches: %d events left over", len(evs))
	}
}

// matches is the brute-force filter: what QueryEvents should select, cursor aside.
func matches(e catalog.Event, q catalog.Query) bool {
	if q.Action != "" && e.Action != q.Action ||
		q.Status != "" && e.Status != q.Status ||
		q.ActorID != "" && e.ActorID != q.ActorID ||
		q.TargetID != "" && e.TargetID != q.TargetID ||
		!q.From.IsZero() && e.ReceivedAt.Before(q.From) ||
		!q.To.IsZero() && !e.ReceivedAt.Before(q.To) {
		return false
	}
	if q.Entity != nil {
		out := e.ActorID == q.Entity.ID && e.ActorType == q.Entity.Type
		in := e.TargetID == q.Entity.ID && e.TargetType == q.Entity.Type
		switch q.Direction {
		case catalog.DirectionOutgoing:
			return out
		case catalog.DirectionIncoming:
			return in
		default:
			return out || in
		}
	}
	return true
}

// expected returns the events of evs (in sequence order) that q selects over all pages
// from q.Cursor on, in q's order.
func expected(evs []catalog.Event, q catalog.Query) []catalog.Event {
	var out []catalog.Event
	for _, e := range evs {
		if !matches(e, q) {
			continue
		}
		if q.Cursor > 0 && (!q.Descending && e.Sequence <= q.Cursor || q.Descending && e.Sequence >= q.Cursor) {
			continue
		}
		out = append(out, e)
	}
	if q.Descending {
		slices.Reverse(out)
	}
	return out
}

func describe(q catalog.Query) string {
	var parts []string
	add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
	add("log=%s", q.Log)
	if q.Action != "" {
		add("action=%s", q.Action)
	}
	if q.Status != "" {
		add("status=%s", q.Status)
	}
	if q.ActorID != "" {
		add("actor=%s", q.ActorID)
	}
	if q.TargetID != "" {
		add("target=%s", q.TargetID)
	}
	if !q.From.IsZero() {
		add("from=+%v", q.From.Sub(termBase))
	}
	if !q.To.IsZero() {
		add("to=+%v", q.To.Sub(termBase))
	}
	if q.Entity != nil {
		add("entity=%q:%q dir=%q", q.Entity.Type, q.Entity.ID, q.Direction)
	}
	if q.Cursor != 0 {
		add("cursor=%d", q.Cursor)
	}
	if q.Descending {
		add("desc")
	}
	add("limit=%d", q.Limit)
	return strings.Join(parts, " ")
}

func seqsOf(evs []catalog.Event) []uint64 {
	s := make([]uint64, len(evs))
	for i, e := range evs {
		s[i] = e.Sequence
	}
	return s
}

// pageThrough runs q and the pages after it, each from the last sequence of the one
// before, until an empty page, and checks every page against want: exactly
// min(limit, rows left) rows, equal to the next rows of want. It returns false after
// reporting a mismatch.
func pageThrough(t *testing.T, db *DB, q catalog.Query, want []catalog.Event) bool {
	t.Helper()
	ctx := context.Background()
	limit := catalog.ClampLimit(q.Limit)
	var got []catalog.Event
	for pages := 0; ; pages++ {
		if pages > len(want)+1 {
			t.Errorf("%s: paging does not end after %d pages", describe(q), pages)
			return false
		}
		page, err := db.QueryEvents(ctx, q)
		if err != nil {
			t.Errorf("%s: %v", describe(q), err)
			return false
		}
		rest := want[len(got):]
		wantPage := rest[:min(limit, len(rest))]
		if !slices.Equal(page, wantPage) {
			t.Errorf("%s: page %d (after %d rows) = %v\nwant %v\nall pages so far %v\nall rows wanted %v",
				describe(q), pages, len(got), seqsOf(page), seqsOf(wantPage), seqsOf(got), seqsOf(want))
			if slices.Equal(seqsOf(page), seqsOf(wantPage)) {
				for i := range page {
					if page[i] != wantPage[i] {
						t.Errorf("row %d: %+v\nwant %+v", i, page[i], wantPage[i])
					}
				}
			}
			return false
		}
		if len(page) == 0 {
			return true
		}
		got = append(got, page...)
		q.Cursor = page[len(page)-1].Sequence
	}
}

// queryShapes returns the queries TestQueryTermsAgainstScan runs against every log,
// without log, cursor, order or limit.
func queryShapes() []catalog.Query {
	drivers := []catalog.Query{
		{},
		{ActorID: "u1"},
		{ActorID: "d2"}, // an actor id that is also a target id
		{ActorID: "d1"},
		{TargetID: "d1"},
		{TargetID: "u2"},
		{TargetID: "s1"},
		{ActorID: "u3", TargetID: "d1"},
		{ActorID: "u1", TargetID: "u1"},
	}
	for _, e := range []catalog.Entity{{Type: "user", ID: "u1"}, {Type: "doc", ID: "d1"}, {Type: "doc", ID: "d2"},
		{Type: "service", ID: "s1"}} {
		for _, dir := range []catalog.Direction{"", catalog.DirectionAll, catalog.DirectionOutgoing, catalog.DirectionIncoming} {
			drivers = append(drivers, catalog.Query{Entity: &e, Direction: dir})
		}
	}
	// An entity filter combined with an actor filter of the same id: self-actions.
	drivers = append(drivers, catalog.Query{Entity: &catalog.Entity{Type: "user", ID: "u2"}, Direction: catalog.DirectionIncoming, ActorID: "u2"})
	extras := []func(*catalog.Query){
		func(*catalog.Query) {},
		func(q *catalog.Query) { q.Action = "write" },
		func(q *catalog.Query) { q.Status = "failed" },
		func(q *catalog.Query) { q.Action, q.Status = "read", "success" },
		func(q *catalog.Query) { q.From, q.To = termBase.Add(15*time.Minute), termBase.Add(45*time.Minute) },
		func(q *catalog.Query) { q.From = termBase.Add(30 * time.Minute) },
		func(q *catalog.Query) { q.To = termBase.Add(15 * time.Minute) }, // events at exactly +15m excluded
	}
	// Each driver alone and with two of the other filters, taken in turn.
	var out []catalog.Query
	for i, d := range drivers {
		for _, x := range []int{0, 1 + i%(len(extras)-1), 1 + (i+3)%(len(extras)-1)} {
			q := d
			extras[x](&q)
			out = append(out, q)
		}
	}
	return out
}

// orders are the starting points of the pagings: ascending and descending, from the
// start and from a cursor below and above the partial watermark.
var orders = []struct {
	cursor uint64
	desc   bool
}{{0, false}, {250, false}, {420, false}, {0, true}, {400, true}, {300, true}}

// pageSizes are the page sizes checkQueries takes in turn; 0 is the default size.
var pageSizes = []int{1, 2, 3, 5, 7, 11, 13, 0, 64, 1000}

// checkQueries pages through each query shape on log, from perOrder starting points
// of orders (taken in turn, half of them descending), and compares with the brute-force
// filter over evs. Page sizes are taken in turn from pageSizes, raised where needed so
// that no paging takes more than maxPages pages: paging a broad filter one row at a
// time would take most of the test's time (the race detector makes SQLite slow) and
// check nothing new.
func checkQueries(t *testing.T, db *DB, log catalog.LogID, evs []catalog.Event, shapes []catalog.Query, perOrder, maxPages int) {
	t.Helper()
	failures := 0
	for i, s := range shapes {
		for j := range perOrder {
			o := orders[(i+j*len(orders)/perOrder)%len(orders)]
			q := s
			q.Log, q.Cursor, q.Descending = log, o.cursor, o.desc
			want := expected(evs, q)
			q.Limit = pageSizes[(i*perOrder+j)%len(pageSizes)]
			if need := (len(want) + maxPages - 1) / maxPages; catalog.ClampLimit(q.Limit) < need {
				q.Limit = need
			}
			if !pageThrough(t, db, q, want) {
				if failures++; failures >= 10 {
					t.Fatalf("too many failures")
				}
			}
		}
	}
}

// checkFirstPages runs each shape from each cursor, ascending and descending, with
// each limit, and compares the first page with the brute-force filter: pointed
// checks around a watermark, where an off-by-one in either part of a term-driven query
// shows.
func checkFirstPages(t *testing.T, db *DB, log catalog.LogID, evs []catalog.Event, shapes []catalog.Query, cursors []uint64, limits []int) {
	t.Helper()
	for _, s := range shapes {
		for _, c := range cursors {
			for _, desc := range []bool{false, true} {
				for _, limit := range limits {
					q := s
					q.Log, q.Cursor, q.Descending, q.Limit = log, c, desc, limit
					want := expected(evs, q)
					want = want[:min(len(want), limit)]
					got, err := db.QueryEvents(context.Background(), q)
					if err != nil || !slices.Equal(got, want) {
						t.Errorf("%s: %v, %v; want %v", describe(q), seqsOf(got), err, seqsOf(want))
					}
				}
			}
		}
	}
}

// termState returns term_state by log number.
func termState(t testing.TB, db *DB) map[int64]uint64 {
	t.Helper()
	state := map[int64]uint64{}
	err := eachRow(context.Background(), db.terms.w, `SELECT log, indexed_seq FROM term_state`, nil, func(r *sql.Rows) error {
		var n, seq int64
		err := r.Scan(&n, &seq)
		state[n] = uint64(seq)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

func mustLogNum(t testing.TB, db *DB, log catalog.LogID) int64 {
	t.Helper()
	n, ok, err := db.logNum(context.Background(), log)
	if err != nil || !ok {
		t.Fatalf("logNum(%s) = %d, %v, %v", log, n, ok, err)
	}
	return n
}

// checkTermsConsistent checks that the term file belongs to db's catalog, that each
// watermark is within the log's events, that the postings hold exactly the entries of
// the events up to the watermarks, nothing else, and that each posting's last is its
// highest sequence and no two postings of one id overlap (queries rely on both). It
// returns the watermarks by log.
func checkTermsConsistent(t *testing.T, db *DB, logs map[catalog.LogID][]catalog.Event) map[catalog.LogID]uint64 {
	t.Helper()
	ctx := context.Background()
	var sameID bool
	var format string
	if err := db.terms.w.QueryRowContext(ctx, `SELECT
		coalesce((SELECT value FROM term_meta WHERE name = 'catalog_id'), '') = (SELECT value FROM cat.meta WHERE name = 'catalog_id'),
		coalesce((SELECT value FROM term_meta WHERE name = 'format'), '')`).Scan(&sameID, &format); err != nil {
		t.Fatal(err)
	}
	if !sameID || format != termsFormat {
		t.Errorf("term_meta: same catalog id %v, format %q; want true, %q", sameID, format, termsFormat)
	}
	state := termState(t, db)
	type entry struct {
		log   int64
		kind  int
		value string
		k     int64
	}
	var want []entry
	marks := map[catalog.LogID]uint64{}
	known := map[int64]bool{}
	for log, evs := range logs {
		n := mustLogNum(t, db, log)
		known[n] = true
		w := state[n]
		marks[log] = w
		if w > uint64(len(evs)) {
			t.Errorf("term_state of %s (log %d) = %d, beyond its %d events", log, n, w, len(evs))
			w = uint64(len(evs))
		}
		for _, e := range evs[:w] {
			for k, value := range eventTerms(&e) {
				if value != "" {
					want = append(want, entry{n, termKinds[k], value, key(n, e.Sequence)})
				}
			}
		}
	}
	for n, w := range state {
		if !known[n] {
			t.Errorf("term_state has log %d (indexed to %d), which the test did not seal", n, w)
		}
	}
	slices.SortFunc(want, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.log, b.log), cmp.Compare(a.kind, b.kind), cmp.Compare(a.value, b.value), cmp.Compare(a.k, b.k))
	})
	want = slices.Compact(want)
	var got []entry
	type termKey struct {
		log   int64
		kind  int
		value string
	}
	prevLast := map[termKey]int64{}
	if err := eachRow(ctx, db.terms.w, `SELECT log, kind, value, last, seqs FROM term_postings ORDER BY log, kind, value, last`, nil, func(r *sql.Rows) error {
		var (
			tk   termKey
			last int64
			list string
		)
		if err := r.Scan(&tk.log, &tk.kind, &tk.value, &last, &list); err != nil {
			return err
		}
		seqs, err := parseSeqs(list)
		if err != nil {
			return err
		}
		if first := int64(seqs[0]); int64(seqs[len(seqs)-1]) != last {
			t.Errorf("posting %+v says it ends at %d, holds %d-%d", tk, last, first, seqs[len(seqs)-1])
		} else if p, ok := prevLast[tk]; ok && first <= p {
			t.Errorf("postings of %+v overlap: one ends at %d, the next begins at %d", tk, p, first)
		}
		prevLast[tk] = last
		for _, seq := range seqs {
			got = append(got, entry{tk.log, tk.kind, tk.value, key(tk.log, seq)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkSegments(t, db, state)
	if !slices.Equal(got, want) {
		t.Errorf("the postings hold %d entries, want %d (watermarks %v)", len(got), len(want), state)
		for i := 0; i < max(len(got), len(want)); i++ {
			var g, w entry
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("first difference at entry %d: %+v, want %+v", i, g, w)
				break
			}
		}
	}
	return marks
}

// checkSegments checks the term index's segments (terms_segments.go) against the
// watermarks state: each log's segments are contiguous from 0 to its watermark, and
// every posting lies in a segment of its log, its sequences within it.
func checkSegments(t *testing.T, db *DB, state map[int64]uint64) {
	t.Helper()
	ctx := context.Background()
	segs := map[int64][]termSeg{}
	if err := eachRow(ctx, db.terms.w, `SELECT log, lo, hi FROM term_segments ORDER BY log, lo`, nil, func(r *sql.Rows) error {
		var n, lo, hi int64
		err := r.Scan(&n, &lo, &hi)
		segs[n] = append(segs[n], termSeg{lo: uint64(lo), hi: uint64(hi)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for n, w := range state {
		end := uint64(0)
		for _, s := range segs[n] {
			if s.lo != end || s.hi <= s.lo {
				t.Errorf("log %d: segment (%d, %d] after one ending at %d", n, s.lo, s.hi, end)
			}
			end = s.hi
		}
		if end != w {
			t.Errorf("log %d: segments end at %d, watermark %d", n, end, w)
		}
	}
	for n := range segs {
		if _, ok := state[n]; !ok {
			t.Errorf("segments of log %d, which has no watermark", n)
		}
	}
	if err := eachRow(ctx, db.terms.w, `SELECT p.log, p.seg, p.kind, p.value, p.seqs, s.hi FROM term_postings p
		LEFT JOIN term_segments s ON s.log = p.log AND s.lo = p.seg`, nil, func(r *sql.Rows) error {
		var n, seg, kind int64
		var value, list string
		var hi sql.NullInt64
		if err := r.Scan(&n, &seg, &kind, &value, &list, &hi); err != nil {
			return err
		}
		seqs, err := parseSeqs(list)
		if err != nil {
			return err
		}
		if !hi.Valid {
			t.Errorf("posting %d %q of log %d in segment %d, which does not exist", kind, value, n, seg)
		} else if seqs[0] <= uint64(seg) || seqs[len(seqs)-1] > uint64(hi.Int64) {
			t.Errorf("posting %d %q of log %d holds %d..%d, outside its segment (%d, %d]", kind, value, n, seqs[0], seqs[len(seqs)-1], seg, hi.Int64)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

var (
	termLogA     = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	termLogB     = catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamEvents}
	termLogC     = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamProjectAudit}
	termLogNever = catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamProjectAudit}
)

// TestQueryTermsAgainstScan compares QueryEvents with a brute-force filter over the
// sealed events, for many query shapes paged to the end, with the term index empty,
// partly built and complete.
func TestQueryTermsAgainstScan(t *testing.T) {
	ctx := context.Background()
	// The merger merges only when told, and small batches of one stream go to
	// events_recent (recent.go).
	db, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), Options{mergeRows: 1 << 30, directStreams: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.stopMerger()
	db.terms.hold(true)
	// Small reads, so that a page spans several reads of postings and of events.
	defer func(rows, lookup, segs int) { postingRows, termLookup, segmentRows = rows, lookup, segs }(postingRows, termLookup, segmentRows)
	postingRows, termLookup, segmentRows = 3, 4, 2

	// Log B gets number 1, A 2, C 3: A's key range has neighbours on both sides, and
	// all three share the ids. A's receive times rise with the sequence, as the
	// sequencer's do, so its time filters run on sequence bounds; B's and C's do not,
	// so theirs check every row (times.go).
	evsA := orderTimes(genEvents(1, "a", 600))
	evsB := genEvents(2, "b", 10)
	evsB[3].ActorType, evsB[3].ActorID = "user", "only-b"
	evsC := genEvents(3, "c", 15)
	// Rows in both tables (recent.go): A's first 37 events and B's first 6 merged into
	// events, A's next 150 written there directly, the rest in events_recent.
	sealBatches(t, db, termLogB, evsB[:6], 6)
	sealBatches(t, db, termLogA, evsA[:37], 1, 36)
	if err := db.mergeRecent(ctx); err != nil {
		t.Fatal(err)
	}
	sealBatches(t, db, termLogA, evsA[37:], 150, 3, 210, 200)
	sealBatches(t, db, termLogC, evsC, 15)
	sealBatches(t, db, termLogB, evsB[6:], 4)
	if n := recentRowCount(t, db); n != 3+210+200+15+4 {
		t.Fatalf("%d rows in events_recent, want %d", n, 3+210+200+15+4)
	}
	logs := map[catalog.LogID][]catalog.Event{termLogA: evsA, termLogB: evsB, termLogC: evsC}
	if nA, nB := mustLogNum(t, db, termLogA), mustLogNum(t, db, termLogB); nA != 2 || nB != 1 {
		t.Fatalf("log numbers: A %d, B %d; want 2, 1", nA, nB)
	}
	if !timesOrdered(t, db, termLogA) || timesOrdered(t, db, termLogB) || timesOrdered(t, db, termLogC) {
		t.Fatal("times_ordered should be set for log A only")
	}

	shapes := queryShapes()
	var drivers []catalog.Query // the shapes without extra filters
	for i := 0; i < len(shapes); i += 3 {
		drivers = append(drivers, shapes[i])
	}
	misses := []catalog.Query{
		{ActorID: "nobody"},
		{TargetID: "nothing"},
		{ActorID: "only-b"}, // only in log B
		{Entity: &catalog.Entity{Type: "user", ID: "only-b"}},
		{Entity: &catalog.Entity{Type: "user", ID: "nobody"}, Direction: catalog.DirectionIncoming},
		{Entity: &catalog.Entity{Type: "ghost", ID: "u1"}},
		{Action: "nope"},
		{ActorID: "u1", From: termBase.Add(10 * time.Minute), To: termBase.Add(10 * time.Minute)},
	}
	check := func(t *testing.T, wantMarks map[catalog.LogID]uint64) {
		marks := checkTermsConsistent(t, db, logs)
		for log, w := range wantMarks {
			if marks[log] != w {
				t.Fatalf("watermark of %s = %d, want %d", log, marks[log], w)
			}
		}
		// The logs, and two halves of log A's shapes, are checked in parallel: the
		// race detector makes each query slow.
		for log, evs := range logs {
			parts := [][]catalog.Query{shapes}
			perOrder := 1 // B and C have few events, so few matches either way
			if log == termLogA {
				parts = [][]catalog.Query{shapes[:len(shapes)/2], shapes[len(shapes)/2:]}
				perOrder = 2
			}
			for i, part := range parts {
				t.Run(fmt.Sprintf("%s/%d", log, i), func(t *testing.T) {
					t.Parallel()
					checkQueries(t, db, log, evs, part, perOrder, 8)
					if i > 0 {
						return
					}
					// Around the watermark (or the end of the log), each driver alone.
					var cursors []uint64
					for _, c := range []uint64{marks[log] - 1, marks[log], marks[log] + 1, marks[log] + 2} {
						if marks[log] > 0 {
							cursors = append(cursors, c)
						}
					}
					checkFirstPages(t, db, log, evs, drivers, cursors, []int{2})
				})
			}
		}
		for _, q := range misses {
			q.Log, q.Limit = termLogA, 10
			if got, err := db.QueryEvents(ctx, q); err != nil || len(got) != 0 {
				t.Errorf("%s: %v, %v; want nothing", describe(q), seqsOf(got), err)
			}
		}
		// only-b is found in log B, and only there.
		q := catalog.Query{Log: termLogB, ActorID: "only-b"}
		if got, err := db.QueryEvents(ctx, q); err != nil || !slices.Equal(seqsOf(got), []uint64{4}) {
			t.Errorf("%s: %v, %v; want [4]", describe(q), seqsOf(got), err)
		}
		for _, q := range []catalog.Query{{}, {ActorID: "u1"}, {Entity: &catalog.Entity{Type: "user", ID: "u1"}}} {
			q.Log = termLogNever
			if got, err := db.QueryEvents(ctx, q); err != nil || len(got) != 0 {
				t.Errorf("%s: %v, %v; want an empty page", describe(q), got, err)
			}
			q.Log = catalog.LogID{ProjectID: "prj_none", Stream: catalog.StreamEvents}
			if got, err := db.QueryEvents(ctx, q); err != nil || len(got) != 0 {
				t.Errorf("%s: %v, %v; want an empty page", describe(q), got, err)
			}
		}
	}

	t.Run("held", func(t *testing.T) {
		check(t, map[catalog.LogID]uint64{termLogA: 0, termLogB: 0, termLogC: 0})
	})
	t.Run("partial", func(t *testing.T) {
		// Log A in chunks of 1 to 9 events, so that each id has many postings.
		r := rand.New(rand.NewPCG(5, 5))
		for to := uint64(0); to < 337; {
			to = min(337, to+1+r.Uint64N(9))
			if err := db.terms.index(ctx, mustLogNum(t, db, termLogA), to); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.terms.index(ctx, mustLogNum(t, db, termLogB), 4); err != nil {
			t.Fatal(err)
		}
		check(t, map[catalog.LogID]uint64{termLogA: 337, termLogB: 4, termLogC: 0})
	})
	t.Run("merged", func(t *testing.T) {
		mergeAll(t, db)
		check(t, map[catalog.LogID]uint64{termLogA: 337, termLogB: 4, termLogC: 0})
	})
	t.Run("full", func(t *testing.T) {
		db.terms.hold(false)
		if err := db.terms.catchUp(); err != nil {
			t.Fatal(err)
		}
		check(t, map[catalog.LogID]uint64{termLogA: 600, termLogB: 10, termLogC: 15})
	})
}

// TestQueryEmptyEntityID checks an entity filter with an empty id, which the term index
// never holds (it skips empty ids): the result must not depend on how far the index got.
func TestQueryEmptyEntityID(t *testing.T) {
	db := openHeld(t)
	evs := genEvents(4, "e", 200)
	sealBatches(t, db, termLogA, evs, 200)
	shapes := []catalog.Query{
		{Entity: &catalog.Entity{Type: "", ID: ""}, Direction: catalog.DirectionIncoming},
		{Entity: &catalog.Entity{Type: "doc", ID: ""}, Direction: catalog.DirectionIncoming},
		{Entity: &catalog.Entity{Type: "user", ID: ""}},
	}
	for _, q := range shapes {
		q.Log = termLogA
		if len(expected(evs, q)) == 0 {
			t.Fatalf("%s: the test data has no match", describe(q))
		}
	}
	t.Run("not indexed", func(t *testing.T) { checkQueries(t, db, termLogA, evs, shapes, len(orders), 4) })
	db.terms.hold(false)
	if err := db.terms.catchUp(); err != nil {
		t.Fatal(err)
	}
	t.Run("indexed", func(t *testing.T) { checkQueries(t, db, termLogA, evs, shapes, len(orders), 4) })
}

// copyFile copies src over dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// removeSidecars removes the WAL and shared-memory files of the SQLite file path.
func removeSidecars(t *testing.T, path string) {
	t.Helper()
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// editTerms runs stmts on the term file at path, opened alone (no catalog attached).
// termsCount runs query, which counts something, on the term file at path.
func termsCount(t *testing.T, path, query string) int {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	if err := c.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func editTerms(t *testing.T, path string, stmts ...string) {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range stmts {
		if _, err := c.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestTermIndexRebuilt replaces or corrupts the term file while the catalog is closed
// and checks that the next Open empties it, the indexer rebuilds it, and queries stay
// exact throughout.
func TestTermIndexRebuilt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	termsPath := path + "-terms"
	evsA, evsB := genEvents(11, "a", 300), genEvents(12, "b", 40)
	logs := map[catalog.LogID][]catalog.Event{termLogA: evsA, termLogB: evsB}
	shapes := []catalog.Query{
		{ActorID: "u1"}, {ActorID: "d2"}, {TargetID: "d1"}, {TargetID: "u2", Status: "failed"},
		{Entity: &catalog.Entity{Type: "user", ID: "u1"}},
		{Entity: &catalog.Entity{Type: "doc", ID: "d2"}, Direction: catalog.DirectionOutgoing},
		{Entity: &catalog.Entity{Type: "doc", ID: "d1"}, Direction: catalog.DirectionIncoming, Action: "read"},
	}
	open := func(t *testing.T) *DB {
		t.Helper()
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	// reopen opens the catalog, checks the term file (as built so far) and the queries,
	// lets the indexer finish and checks again, and closes it.
	reopen := func(t *testing.T) {
		t.Helper()
		db := open(t)
		defer db.Close()
		// Whatever the indexer did since Open, the file must be consistent.
		db.terms.hold(true)
		checkTermsConsistent(t, db, logs)
		for log, evs := range logs {
			checkQueries(t, db, log, evs, shapes, 1, 5)
		}
		db.terms.hold(false)
		if err := db.terms.catchUp(); err != nil {
			t.Fatal(err)
		}
		marks := checkTermsConsistent(t, db, logs)
		for log, evs := range logs {
			cp, err := db.Checkpoint(ctx, log)
			if err != nil {
				t.Fatal(err)
			}
			if marks[log] != cp.Size || cp.Size != uint64(len(evs)) {
				t.Errorf("after catchUp: watermark of %s %d, checkpoint size %d, %d events", log, marks[log], cp.Size, len(evs))
			}
			checkQueries(t, db, log, evs, shapes, 1, 5)
		}
	}

	db := open(t)
	sealBatches(t, db, termLogA, evsA, 100, 200)
	sealBatches(t, db, termLogB, evsB, 40)
	if err := db.terms.catchUp(); err != nil {
		t.Fatal(err)
	}
	if marks := checkTermsConsistent(t, db, logs); marks[termLogA] != 300 || marks[termLogB] != 40 {
		t.Fatalf("watermarks %v after catchUp", marks)
	}
	db.Close()

	t.Run("another catalog's file", func(t *testing.T) {
		// The other catalog numbers its logs as this one does and indexes fewer events,
		// so only its catalog id tells its file apart; its entries are for other
		// events, with other ids.
		odir := t.TempDir()
		opath := filepath.Join(odir, "other.db")
		other, err := Open(ctx, opath, Options{})
		if err != nil {
			t.Fatal(err)
		}
		oevs := genEvents(13, "o", 100)
		for i := range oevs {
			oevs[i].ActorID += "x"
		}
		sealBatches(t, other, termLogA, oevs, 100)
		sealBatches(t, other, termLogB, genEvents(14, "o", 20), 20)
		if err := other.terms.catchUp(); err != nil {
			t.Fatal(err)
		}
		if st := termState(t, other); st[1] != 100 || st[2] != 20 {
			t.Fatalf("other catalog's term_state %v", st)
		}
		other.Close()
		removeSidecars(t, termsPath)
		copyFile(t, opath+"-terms", termsPath)
		// The copy must carry the other catalog's index, or this case tests nothing.
		if n := termsCount(t, termsPath, `SELECT count(*) FROM term_state`); n != 2 {
			t.Fatalf("copied term file: %d term_state rows", n)
		}
		reopen(t)
	})

	t.Run("ahead of the catalog", func(t *testing.T) {
		// As if restored from a newer backup than the catalog: a watermark beyond the
		// log's size, and entries missing below it.
		editTerms(t, termsPath,
			`UPDATE term_state SET indexed_seq = indexed_seq + 1000 WHERE log = 1`,
			`DELETE FROM term_postings WHERE log = 1 AND value IN ('u1', 'd1')`)
		reopen(t)
	})

	t.Run("unknown log", func(t *testing.T) {
		editTerms(t, termsPath,
			`INSERT INTO term_state(log, indexed_seq) VALUES (77, 5)`,
			`INSERT INTO term_postings(log, seg, kind, value, last, seqs) VALUES (77, 0, 1, 'u1', 3, '3')`)
		reopen(t)
	})

	t.Run("other format", func(t *testing.T) {
		editTerms(t, termsPath,
			`UPDATE term_meta SET value = 'old' WHERE name = 'format'`,
			`DELETE FROM term_postings WHERE log = 2 AND kind = 2`)
		reopen(t)
	})

	t.Run("format 3", func(t *testing.T) {
		// Format 3, before segments: postings keyed (log, kind, value, last), no
		// term_segments. The rebuild drops both tables and makes them anew.
		editTerms(t, termsPath,
			`UPDATE term_meta SET value = '3' WHERE name = 'format'`,
			`DROP TABLE term_postings`, `DROP TABLE term_segments`,
			`CREATE TABLE term_postings (log INTEGER NOT NULL, kind INTEGER NOT NULL, value TEXT NOT NULL,
				last INTEGER NOT NULL, seqs TEXT NOT NULL, PRIMARY KEY (log, kind, value, last)) WITHOUT ROWID`,
			`INSERT INTO term_postings VALUES (1, 1, 'u1', 3, '1,3')`)
		reopen(t)
		if n := termsCount(t, termsPath, `SELECT count(*) FROM pragma_table_info('term_postings') WHERE name = 'seg'`); n != 1 {
			t.Errorf("term_postings without its seg column after the rebuild: %d", n)
		}
	})

	t.Run("format 1", func(t *testing.T) {
		// Format 1 kept one event_terms row per event and id; the rebuild drops it.
		editTerms(t, termsPath,
			`UPDATE term_meta SET value = '1' WHERE name = 'format'`,
			`DELETE FROM term_postings`,
			`CREATE TABLE event_terms (log INTEGER NOT NULL, kind INTEGER NOT NULL, value TEXT NOT NULL,
				k INTEGER NOT NULL, PRIMARY KEY (log, kind, value, k)) WITHOUT ROWID`,
			`INSERT INTO event_terms VALUES (1, 1, 'u1', (1 << 40) | 1)`)
		reopen(t)
		if n := termsCount(t, termsPath, `SELECT count(*) FROM sqlite_schema WHERE name = 'event_terms'`); n != 0 {
			t.Errorf("event_terms left in the term file: %d", n)
		}
	})
}
