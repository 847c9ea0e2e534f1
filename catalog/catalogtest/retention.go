package catalogtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// OpenRetention returns a fresh, empty catalog with the retention methods.
type OpenRetention func(t *testing.T) catalog.RetentionCatalog

// RunRetention runs the conformance suite of catalog.RetentionCatalog.
func RunRetention(t *testing.T, open OpenRetention) {
	tests := []struct {
		name string
		fn   func(*testing.T, catalog.RetentionCatalog)
	}{
		{"KeepForever", testKeepForever},
		{"MinRetention", testMinRetention},
		{"Suspension", testSuspension},
		{"Lease", testLease},
		{"SpanAndScrub", testSpanAndScrub},
		{"HeldPayloads", testHeldPayloads},
		{"DestroyUnheld", testDestroyUnheld},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func mustProject(t *testing.T, db catalog.Catalog, id string) {
	t.Helper()
	if _, err := db.CreateProject(ctxT(t), catalog.Project{ID: id, Name: id}); err != nil {
		t.Fatal(err)
	}
}

func testKeepForever(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	mustProject(t, db, "prj_a")
	wantErr(t, "delete a missing policy", db.DeleteRetention(ctx, logA), catalog.ErrNotFound)
	if _, err := db.SetRetention(ctx, catalog.Retention{Log: logA, Days: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetRetention(ctx, catalog.Retention{Log: logC, Days: 60}); err != nil {
		t.Fatal(err)
	}
	all, err := db.ListAllRetention(ctx)
	if err != nil || len(all) != 2 || all[0].Days != 30 || all[1].Days != 60 {
		t.Fatalf("ListAllRetention = %+v, %v", all, err)
	}
	if err := db.DeleteRetention(ctx, logA); err != nil {
		t.Fatal(err)
	}
	_, err = db.Retention(ctx, logA)
	wantErr(t, "retention after delete", err, catalog.ErrNotFound)
	if all, err = db.ListAllRetention(ctx); err != nil || len(all) != 1 || all[0].Log != logC {
		t.Fatalf("ListAllRetention after delete = %+v, %v", all, err)
	}
}

func testMinRetention(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	mustProject(t, db, "prj_a")
	if d, err := db.MinRetention(ctx, "prj_a"); err != nil || d != 0 {
		t.Fatalf("MinRetention unset = %d, %v", d, err)
	}
	for _, days := range []int{90, 7} {
		if err := db.SetMinRetention(ctx, "prj_a", days); err != nil {
			t.Fatal(err)
		}
		if d, err := db.MinRetention(ctx, "prj_a"); err != nil || d != days {
			t.Fatalf("MinRetention = %d, %v; want %d", d, err, days)
		}
	}
	if err := db.SetMinRetention(ctx, "prj_a", 0); err != nil {
		t.Fatal(err)
	}
	if d, err := db.MinRetention(ctx, "prj_a"); err != nil || d != 0 {
		t.Fatalf("MinRetention cleared = %d, %v", d, err)
	}
}

func testSuspension(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	mustProject(t, db, "prj_a")
	_, err := db.Suspension(ctx, "prj_a")
	wantErr(t, "suspension of an active project", err, catalog.ErrNotFound)
	_, err = db.Suspend(ctx, catalog.Suspension{ProjectID: "prj_a"})
	wantErr(t, "suspend without reason", err, catalog.ErrInvalid)
	since := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	if _, err := db.Suspend(ctx, catalog.Suspension{ProjectID: "prj_a", Reason: "payment_overdue", Since: since}); err != nil {
		t.Fatal(err)
	}
	s, err := db.Suspension(ctx, "prj_a")
	if err != nil || s.Reason != "payment_overdue" || !s.Since.Equal(since) {
		t.Fatalf("Suspension = %+v, %v", s, err)
	}
	if err := db.Unsuspend(ctx, "prj_a"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "unsuspend twice", db.Unsuspend(ctx, "prj_a"), catalog.ErrNotFound)
}

func testLease(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	now := Base
	try := func(holder string, at time.Time, want bool) {
		t.Helper()
		got, err := db.TryLease(ctx, "retention", holder, at, time.Minute)
		if err != nil || got != want {
			t.Fatalf("TryLease(%s at %s) = %v, %v; want %v", holder, at, got, err, want)
		}
	}
	try("a", now, true)
	try("b", now.Add(30*time.Second), false)
	try("a", now.Add(50*time.Second), true) // renewal: until now+110s
	try("b", now.Add(100*time.Second), false)
	try("b", now.Add(111*time.Second), true) // expired
	if err := db.ReleaseLease(ctx, "retention", "a"); err != nil {
		t.Fatal(err)
	}
	try("a", now.Add(112*time.Second), false) // releasing another's lease did nothing
	if err := db.ReleaseLease(ctx, "retention", "b"); err != nil {
		t.Fatal(err)
	}
	try("a", now.Add(113*time.Second), true)
	_, err := db.TryLease(ctx, "", "a", now, time.Minute)
	wantErr(t, "unnamed lease", err, catalog.ErrInvalid)
}

func testSpanAndScrub(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	Seal(t, db, logA, "e", 30) // event seq received at Base + seq seconds
	Seal(t, db, logB, "e", 30)
	sp, err := db.EventSpan(ctx, logA, Base.Add(10*time.Second), Base.Add(20*time.Second))
	if err != nil || sp != (catalog.Span{First: 10, Last: 19, Count: 10}) {
		t.Fatalf("EventSpan = %+v, %v", sp, err)
	}
	if sp, err := db.EventSpan(ctx, logA, Base.Add(time.Hour), Base.Add(2*time.Hour)); err != nil || sp.Count != 0 {
		t.Fatalf("empty EventSpan = %+v, %v", sp, err)
	}
	n, err := db.ScrubEvents(ctx, logA, 10, 19, []uint64{12, 40})
	if err != nil || n != 9 {
		t.Fatalf("ScrubEvents = %d, %v; want 9 rows", n, err)
	}
	if n, err := db.ScrubEvents(ctx, logA, 10, 19, []uint64{12}); err != nil || n != 0 {
		t.Fatalf("ScrubEvents again = %d, %v; want 0 rows", n, err)
	}
	// A list: a run (3-4), a lone sequence (25) and one already blank (11).
	_, err = db.ScrubEventSeqs(ctx, logA, []uint64{5, 3})
	wantErr(t, "ScrubEventSeqs out of order", err, catalog.ErrInvalid)
	if n, err := db.ScrubEventSeqs(ctx, logA, []uint64{3, 4, 11, 25}); err != nil || n != 3 {
		t.Fatalf("ScrubEventSeqs = %d, %v; want 3 rows", n, err)
	}
	if n, err := db.ScrubEventSeqs(ctx, logA, nil); err != nil || n != 0 {
		t.Fatalf("ScrubEventSeqs of none = %d, %v", n, err)
	}
	isScrubbed := func(seq uint64) bool {
		return seq >= 10 && seq <= 19 && seq != 12 || seq == 3 || seq == 4 || seq == 25
	}
	evs, err := db.QueryEvents(ctx, catalog.Query{Log: logA, Limit: 100})
	if err != nil || len(evs) != 30 {
		t.Fatalf("QueryEvents = %d rows, %v", len(evs), err)
	}
	for _, e := range evs {
		scrubbed := isScrubbed(e.Sequence)
		blank := e.Action == "" && e.ActorType == "" && e.ActorID == "" && e.TargetType == "" && e.TargetID == ""
		if scrubbed != blank || e.ID == "" || e.Status == "" {
			t.Fatalf("event %d after scrub: %+v", e.Sequence, e)
		}
	}
	// No filter finds a scrubbed event any more; the kept one and other streams stay.
	for _, q := range []catalog.Query{
		{Log: logA, ActorID: "u1"}, {Log: logA, TargetID: "d3"}, {Log: logA, Action: "act.0"},
		{Log: logA, Entity: &catalog.Entity{Type: "user", ID: "u2"}},
	} {
		q.Limit = 100
		got, err := db.QueryEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if isScrubbed(e.Sequence) {
				t.Fatalf("query %+v finds scrubbed event %d", q, e.Sequence)
			}
		}
	}
	got, err := db.QueryEvents(ctx, catalog.Query{Log: logA, ActorID: "u2", Limit: 100})
	if err != nil || !slices.ContainsFunc(got, func(e catalog.Event) bool { return e.Sequence == 12 }) {
		t.Fatalf("kept event 12 not found by its actor: %+v, %v", got, err)
	}
	// A scrubbed event keeps its status, and a status filter still finds it: the odd
	// sequences of 1..30, scrubbed or not.
	failed, err := db.QueryEvents(ctx, catalog.Query{Log: logA, Status: "failed", Limit: 100})
	if err != nil || len(failed) != 15 || !slices.ContainsFunc(failed, func(e catalog.Event) bool { return e.Sequence == 11 }) {
		t.Fatalf("status failed after scrub: %d rows, %v; want 15 with scrubbed 11", len(failed), err)
	}
	other, err := db.QueryEvents(ctx, catalog.Query{Log: logB, ActorID: "u1", Limit: 100})
	if err != nil || len(other) != 6 {
		t.Fatalf("other project-stream's actor u1: %d rows, %v", len(other), err)
	}
}

func testHeldPayloads(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	for _, seqs := range [][]uint64{{3, 7}, {7, 11}} {
		if err := db.AddHeldPayloads(ctx, logA, seqs); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddHeldPayloads(ctx, logB, []uint64{5}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]uint64{{9, 8}, {4, 4}, {0, 1}} {
		wantErr(t, fmt.Sprintf("AddHeldPayloads(%v)", bad), db.AddHeldPayloads(ctx, logA, bad), catalog.ErrInvalid)
		wantErr(t, fmt.Sprintf("RemoveHeldPayloads(%v)", bad), db.RemoveHeldPayloads(ctx, logA, bad), catalog.ErrInvalid)
	}
	got, err := db.HeldPayloads(ctx, logA, 1, 10)
	if err != nil || !slices.Equal(got, []uint64{3, 7}) {
		t.Fatalf("HeldPayloads = %v, %v", got, err)
	}
	if err := db.RemoveHeldPayloads(ctx, logA, []uint64{2, 3, 11}); err != nil {
		t.Fatal(err)
	}
	if got, err = db.HeldPayloads(ctx, logA, 1, 1<<40); err != nil || !slices.Equal(got, []uint64{7}) {
		t.Fatalf("HeldPayloads after remove = %v, %v", got, err)
	}
	if got, err = db.HeldPayloads(ctx, logB, 1, 1<<40); err != nil || !slices.Equal(got, []uint64{5}) {
		t.Fatalf("other stream's HeldPayloads = %v, %v", got, err)
	}
}
