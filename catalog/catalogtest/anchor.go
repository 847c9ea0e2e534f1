package catalogtest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// testAnchor checks the tree_heads log of catalog.AnchorCatalog: the lease, grown
// streams, the compare-and-swap append, one head per stream and size, publication and
// anchors.
func testAnchor(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	if ok, err := db.AnchorLease(ctx, "r1", t0, time.Minute); err != nil || !ok {
		t.Fatalf("first lease = %v, %v", ok, err)
	}
	if ok, err := db.AnchorLease(ctx, "r2", t0.Add(30*time.Second), time.Minute); err != nil || ok {
		t.Fatalf("lease of r2 while r1's runs = %v, %v", ok, err)
	}
	if ok, err := db.AnchorLease(ctx, "r1", t0.Add(30*time.Second), time.Minute); err != nil || !ok {
		t.Fatalf("renewal by r1 = %v, %v", ok, err)
	}
	if ok, err := db.AnchorLease(ctx, "r2", t0.Add(2*time.Minute), time.Minute); err != nil || !ok {
		t.Fatalf("lease of r2 after r1's expired = %v, %v", ok, err)
	}

	st, err := db.TreeHeadsLog(ctx)
	if err != nil || st.Size != 0 || st.PublishedSize != 0 || len(st.Range) != 0 || st.Root != (catalog.Hash{}) {
		t.Fatalf("empty TreeHeadsLog = %+v, %v", st, err)
	}
	createProjects(t, db, "prj_a", "prj_b")
	cpA := Seal(t, db, logA, "a", 3)
	cpB := Seal(t, db, logB, "b", 2)
	Seal(t, db, logC, "c", 1)
	grown, err := db.GrownLogs(ctx, catalog.LogID{}, 0)
	if err != nil || len(grown) != 3 || grown[0].Log != logA || grown[0].Size != 3 || grown[0].Root != cpA.Root ||
		grown[1].Log != logC || grown[2].Log != logB || grown[2].Root != cpB.Root {
		t.Fatalf("GrownLogs = %+v, %v", grown, err)
	}
	page, err := db.GrownLogs(ctx, logA, 1)
	if err != nil || len(page) != 1 || page[0].Log != logC {
		t.Fatalf("GrownLogs after %s = %+v, %v", logA, page, err)
	}

	head := func(log catalog.LogID, size, index uint64) catalog.TreeHead {
		return catalog.TreeHead{Log: log, TreeSize: size, RootHash: H(fmt.Sprint(log, size)), Timestamp: t0,
			Signature: []byte("sig"), Index: index, InLog: true}
	}
	next := catalog.TreeHeadsLog{Size: 2, Root: H("root2"), Range: []catalog.Hash{H("r2")}}
	if err := db.AppendTreeHeads(ctx, 1, []catalog.TreeHead{head(logA, 3, 1), head(logB, 2, 2)}, catalog.TreeHeadsLog{Size: 3}); err == nil {
		t.Fatal("append on a stale size succeeded")
	} else {
		wantErr(t, "append on a stale size", err, catalog.ErrConflict)
	}
	err = db.AppendTreeHeads(ctx, 0, []catalog.TreeHead{head(logA, 3, 1)}, catalog.TreeHeadsLog{Size: 1})
	wantErr(t, "a head with the wrong index", err, catalog.ErrInvalid)
	if err := db.AppendTreeHeads(ctx, 0, []catalog.TreeHead{head(logA, 3, 0), head(logB, 2, 1)}, next); err != nil {
		t.Fatal(err)
	}
	// A replica that read size 0 too loses the race and commits nothing.
	err = db.AppendTreeHeads(ctx, 0, []catalog.TreeHead{head(logC, 1, 0)}, catalog.TreeHeadsLog{Size: 1})
	wantErr(t, "a second append on size 0", err, catalog.ErrConflict)
	// Never two heads of one stream and size, whatever the root.
	fork := head(logA, 3, 2)
	fork.RootHash = H("fork")
	err = db.AppendTreeHeads(ctx, 2, []catalog.TreeHead{fork}, catalog.TreeHeadsLog{Size: 3})
	wantErr(t, "a second head of one stream and size", err, catalog.ErrConflict)
	if st, err := db.TreeHeadsLog(ctx); err != nil || st.Size != 2 || st.Root != next.Root || len(st.Range) != 1 || st.Range[0] != next.Range[0] {
		t.Fatalf("TreeHeadsLog after the append = %+v, %v", st, err)
	}
	grown, err = db.GrownLogs(ctx, catalog.LogID{}, 0)
	if err != nil || len(grown) != 1 || grown[0].Log != logC {
		t.Fatalf("GrownLogs after the append = %+v, %v", grown, err)
	}
	hs, err := db.TreeHeadsFrom(ctx, 1, 10)
	if err != nil || len(hs) != 1 || hs[0].Log != logB || !hs[0].InLog || hs[0].Index != 1 || hs[0].RootHash != H(fmt.Sprint(logB, 2)) {
		t.Fatalf("TreeHeadsFrom(1) = %+v, %v", hs, err)
	}

	wantErr(t, "publishing beyond the log", db.AdvanceTreeHeadsPublished(ctx, 3), catalog.ErrConflict)
	if err := db.AdvanceTreeHeadsPublished(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := db.AdvanceTreeHeadsPublished(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if st, err := db.TreeHeadsLog(ctx); err != nil || st.PublishedSize != 2 {
		t.Fatalf("published size = %+v, %v; want 2, never lowered", st, err)
	}

	un, err := db.UnanchoredTreeHeads(ctx, 0, 2, 10)
	if err != nil || len(un) != 2 || un[0].Index != 0 || un[1].Index != 1 {
		t.Fatalf("UnanchoredTreeHeads = %+v, %v", un, err)
	}
	un[0].Anchor = &catalog.Anchor{Type: "witness", Ref: "tree_heads/2", Proof: []byte(`{"a":1}`), AnchoredAt: t0}
	wantErr(t, "an anchor without a ref", db.SetAnchors(ctx, []catalog.TreeHead{un[0], un[1]}), catalog.ErrInvalid)
	if err := db.SetAnchors(ctx, un[:1]); err != nil {
		t.Fatal(err)
	}
	again := un[0]
	again.Anchor = &catalog.Anchor{Type: "witness", Ref: "other", Proof: []byte(`{}`)}
	if err := db.SetAnchors(ctx, []catalog.TreeHead{again}); err != nil {
		t.Fatal(err)
	}
	got, err := db.LatestTreeHead(ctx, logA)
	if err != nil || got.Anchor == nil || got.Anchor.Ref != "tree_heads/2" || !bytes.Equal(got.Anchor.Proof, []byte(`{"a":1}`)) ||
		!got.Anchor.AnchoredAt.Equal(catalog.MS(t0)) || !got.InLog || got.Index != 0 {
		t.Fatalf("anchored head = %+v, %v; want the first anchor kept", got, err)
	}
	un, err = db.UnanchoredTreeHeads(ctx, 0, 2, 10)
	if err != nil || len(un) != 1 || un[0].Log != logB {
		t.Fatalf("UnanchoredTreeHeads after anchoring = %+v, %v", un, err)
	}
	if un, err := db.UnanchoredTreeHeads(ctx, 0, 1, 10); err != nil || len(un) != 0 {
		t.Fatalf("UnanchoredTreeHeads below 1 = %+v, %v", un, err)
	}
}

// testPublicRead: off by default, on and off again, per project; an unknown project
// cannot be turned on.
func testPublicRead(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b")
	if on, err := db.PublicRead(ctx, "prj_a"); err != nil || on {
		t.Fatalf("default public read = %v, %v", on, err)
	}
	for range 2 { // turning it on twice is a no-op
		if err := db.SetPublicRead(ctx, "prj_a", true); err != nil {
			t.Fatal(err)
		}
	}
	if on, err := db.PublicRead(ctx, "prj_a"); err != nil || !on {
		t.Fatalf("public read after turning it on = %v, %v", on, err)
	}
	if on, err := db.PublicRead(ctx, "prj_b"); err != nil || on {
		t.Fatalf("project b's public read = %v, %v", on, err)
	}
	if err := db.SetPublicRead(ctx, "prj_a", false); err != nil {
		t.Fatal(err)
	}
	if on, err := db.PublicRead(ctx, "prj_a"); err != nil || on {
		t.Fatalf("public read after turning it off = %v, %v", on, err)
	}
	wantErr(t, "public read of an unknown project", db.SetPublicRead(ctx, "prj_none", true), catalog.ErrNotFound)
}
