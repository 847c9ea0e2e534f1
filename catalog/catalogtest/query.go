package catalogtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

func testEventsByID(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 700)
	Seal(t, db, logB, "e", 10)
	ids := []string{"missing"}
	for s := 1; s <= 1400; s += 2 {
		ids = append(ids, fmt.Sprintf("e%d", s))
	}
	got, err := db.EventsByID(ctx, logA, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 350 {
		t.Fatalf("EventsByID found %d of 350 existing ids", len(got))
	}
	want := MakeEvents("e", 1, 700)
	for s := 1; s <= 700; s += 2 {
		if g := got[fmt.Sprintf("e%d", s)]; g != want[s-1] {
			t.Fatalf("EventsByID[e%d] = %+v, want %+v", s, g, want[s-1])
		}
	}
	got, err = db.EventsByID(ctx, logB, []string{"e3", "e11", "e700"})
	if err != nil || len(got) != 1 || got["e3"].Sequence != 3 {
		t.Fatalf("EventsByID in project b = %v, %v", got, err)
	}
	got, err = db.EventsByID(ctx, logB, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("EventsByID(nil) = %v, %v", got, err)
	}
}

// AllLeaves pages through log's EventLeaves by limit to the end.
func AllLeaves(t testing.TB, db catalog.Catalog, log catalog.LogID, limit int) []catalog.EventLeaf {
	t.Helper()
	var all []catalog.EventLeaf
	for after := uint64(0); ; {
		page, err := db.EventLeaves(context.Background(), log, after, limit)
		if err != nil {
			t.Fatalf("EventLeaves(%s, %d, %d): %v", log, after, limit, err)
		}
		if len(page) > catalog.ClampLimit(limit) {
			t.Fatalf("EventLeaves(%s, %d, %d): %d rows", log, after, limit, len(page))
		}
		if len(page) == 0 {
			return all
		}
		all, after = append(all, page...), page[len(page)-1].Sequence
	}
}

func testEventLeaves(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 300)
	Seal(t, db, logB, "e", 10)
	Seal(t, db, logA, "f", 95)
	want, err := db.QueryEvents(ctx, catalog.Query{Log: logA, Limit: catalog.MaxLimit})
	if err != nil || len(want) != 395 {
		t.Fatalf("QueryEvents: %d rows, %v", len(want), err)
	}
	for _, limit := range []int{1, 64, catalog.MaxLimit + 1} {
		got := AllLeaves(t, db, logA, limit)
		if len(got) != len(want) {
			t.Fatalf("EventLeaves by %d: %d rows, want %d", limit, len(got), len(want))
		}
		for i, e := range want {
			if got[i] != (catalog.EventLeaf{Sequence: e.Sequence, LeafHash: e.LeafHash}) {
				t.Fatalf("EventLeaves by %d: row %d = %+v, want %d %x", limit, i, got[i], e.Sequence, e.LeafHash)
			}
		}
	}
	page, err := db.EventLeaves(ctx, logA, 390, 0)
	if err != nil || len(page) != 5 || page[0].Sequence != 391 {
		t.Fatalf("EventLeaves after 390: %+v, %v", page, err)
	}
	page, err = db.EventLeaves(ctx, logB, 0, 0)
	if err != nil || len(page) != 10 {
		t.Fatalf("EventLeaves of the other project: %d rows, %v", len(page), err)
	}
	for _, log := range []catalog.LogID{logC, {ProjectID: "prj_none", Stream: catalog.StreamEvents}} {
		if page, err := db.EventLeaves(ctx, log, 0, 0); err != nil || len(page) != 0 {
			t.Fatalf("EventLeaves of %s, which has no events: %+v, %v", log, page, err)
		}
	}
	if page, err := db.EventLeaves(ctx, logA, 1<<63, 10); err != nil || len(page) != 0 {
		t.Fatalf("EventLeaves after 2^63: %+v, %v", page, err)
	}
}

// expect filters the events MakeEvents("e", 1, n) made, as the catalog should.
func expect(n int, keep func(e catalog.Event) bool) []uint64 {
	var seqs []uint64
	for _, e := range MakeEvents("e", 1, n) {
		if keep(e) {
			seqs = append(seqs, e.Sequence)
		}
	}
	return seqs
}

func query(t *testing.T, db catalog.Catalog, q catalog.Query) []uint64 {
	t.Helper()
	evs, err := db.QueryEvents(ctxT(t), q)
	if err != nil {
		t.Fatalf("QueryEvents(%+v): %v", q, err)
	}
	seqs := make([]uint64, len(evs))
	for i, e := range evs {
		seqs[i] = e.Sequence
	}
	return seqs
}

func testQueryFilters(t *testing.T, db catalog.Catalog) {
	const n = 120
	Seal(t, db, logA, "e", 50)
	Seal(t, db, logA, "e", n-50)
	Seal(t, db, logB, "e", n)
	all := func(catalog.Event) bool { return true }
	at := func(seq int) time.Time { return Base.Add(time.Duration(seq) * time.Second) }
	for _, tc := range []struct {
		name string
		q    catalog.Query
		want []uint64
	}{
		{"all", catalog.Query{}, expect(n, all)},
		{"action", catalog.Query{Action: "act.1"}, expect(n, func(e catalog.Event) bool { return e.Action == "act.1" })},
		{"status", catalog.Query{Status: "failed"}, expect(n, func(e catalog.Event) bool { return e.Status == "failed" })},
		{"actor", catalog.Query{ActorID: "u3"}, expect(n, func(e catalog.Event) bool { return e.ActorID == "u3" })},
		{"target", catalog.Query{TargetID: "d2"}, expect(n, func(e catalog.Event) bool { return e.TargetID == "d2" })},
		{"combined", catalog.Query{Action: "act.0", Status: "success", ActorID: "u2"}, expect(n, func(e catalog.Event) bool {
			return e.Action == "act.0" && e.Status == "success" && e.ActorID == "u2"
		})},
		{"from inclusive to exclusive", catalog.Query{From: at(10), To: at(20)}, expect(n, func(e catalog.Event) bool {
			return e.Sequence >= 10 && e.Sequence < 20
		})},
		{"from only", catalog.Query{From: at(100).Add(-time.Millisecond)}, expect(n, func(e catalog.Event) bool { return e.Sequence >= 100 })},
		{"to only", catalog.Query{To: at(5).Add(time.Millisecond)}, expect(n, func(e catalog.Event) bool { return e.Sequence <= 5 })},
		{"time and action", catalog.Query{From: at(30), To: at(60), Action: "act.2"}, expect(n, func(e catalog.Event) bool {
			return e.Sequence >= 30 && e.Sequence < 60 && e.Action == "act.2"
		})},
		{"no match", catalog.Query{Action: "nope"}, nil},
		{"empty window", catalog.Query{From: at(10), To: at(10)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.Log, q.Limit = logA, catalog.MaxLimit
			if got := query(t, db, q); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
	evs, err := db.QueryEvents(ctxT(t), catalog.Query{Log: logA, ActorID: "u1", Limit: 1})
	if err != nil || len(evs) != 1 || evs[0] != MakeEvents("e", 1, 1)[0] {
		t.Fatalf("QueryEvents returned %+v, %v; want the full first row", evs, err)
	}
	if got := query(t, db, catalog.Query{Log: logA}); len(got) != catalog.DefaultLimit {
		t.Fatalf("default page has %d rows, want %d", len(got), catalog.DefaultLimit)
	}
	_, err = db.QueryEvents(ctxT(t), catalog.Query{Log: logA, Direction: "sideways"})
	wantErr(t, "bad direction", err, catalog.ErrInvalid)
	_, err = db.QueryEvents(ctxT(t), catalog.Query{Log: catalog.LogID{ProjectID: "prj_a", Stream: "other"}})
	wantErr(t, "bad stream", err, catalog.ErrInvalid)
}

func testQueryEntity(t *testing.T, db catalog.Catalog) {
	const n = 60
	Seal(t, db, logA, "e", n)
	// An event whose actor and target are the same entity counts once in "all", and an
	// entity id shared by two types must not mix them up.
	_, err := db.Seal(ctxT(t), logA, func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		evs := MakeEvents("x", cp.Size+1, 2)
		evs[0].ActorType, evs[0].ActorID, evs[0].TargetType, evs[0].TargetID = "doc", "d1", "doc", "d1"
		evs[1].ActorType, evs[1].ActorID, evs[1].TargetType, evs[1].TargetID = "svc", "d1", "svc", "u1"
		return &catalog.SealBatch{BatchID: "x", Events: evs}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	u1 := &catalog.Entity{Type: "user", ID: "u1"}
	d1 := &catalog.Entity{Type: "doc", ID: "d1"}
	for _, tc := range []struct {
		name string
		e    *catalog.Entity
		dir  catalog.Direction
		want []uint64
	}{
		{"actor outgoing", u1, catalog.DirectionOutgoing, expect(n, func(e catalog.Event) bool { return e.ActorID == "u1" })},
		{"actor incoming", u1, catalog.DirectionIncoming, nil},
		{"actor all", u1, "", expect(n, func(e catalog.Event) bool { return e.ActorID == "u1" })},
		{"target incoming", d1, catalog.DirectionIncoming, append(expect(n, func(e catalog.Event) bool { return e.TargetID == "d1" }), n+1)},
		{"target outgoing", d1, catalog.DirectionOutgoing, []uint64{n + 1}},
		{"target all", d1, catalog.DirectionAll, append(expect(n, func(e catalog.Event) bool { return e.TargetID == "d1" }), n+1)},
		{"type matters", &catalog.Entity{Type: "svc", ID: "u1"}, catalog.DirectionAll, []uint64{n + 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := query(t, db, catalog.Query{Log: logA, Entity: tc.e, Direction: tc.dir, Limit: catalog.MaxLimit})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func testQueryPagination(t *testing.T, db catalog.Catalog) {
	const n = 95
	Seal(t, db, logA, "e", n)
	want := expect(n, func(e catalog.Event) bool { return e.Status == "success" })
	for _, desc := range []bool{false, true} {
		var got []uint64
		cursor := uint64(0)
		pages := 0
		for {
			page := query(t, db, catalog.Query{Log: logA, Status: "success", Cursor: cursor, Descending: desc, Limit: 10})
			pages++
			got = append(got, page...)
			if len(page) < 10 {
				break
			}
			cursor = page[len(page)-1]
			if pages > 100 {
				t.Fatal("pagination does not end")
			}
		}
		w := slices.Clone(want)
		if desc {
			slices.Reverse(w)
		}
		if !slices.Equal(got, w) {
			t.Fatalf("descending=%v: pages gave %v\nwant %v", desc, got, w)
		}
		if pages != len(want)/10+1 {
			t.Fatalf("descending=%v: %d pages for %d rows", desc, pages, len(want))
		}
	}
	if got := query(t, db, catalog.Query{Log: logA, Cursor: n}); len(got) != 0 {
		t.Fatalf("page after the last sequence: %v", got)
	}
	if got := query(t, db, catalog.Query{Log: logA, Cursor: 3, Descending: true}); !slices.Equal(got, []uint64{2, 1}) {
		t.Fatalf("descending page before 3: %v", got)
	}
}
