package catalogtest

import (
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// testDestroyUnheld checks DestroyUnheldDataKey: refused (ErrConflict, key intact) while
// an active hold names an event of the range without a held payload; released holds,
// events outside the range and other projects' holds do not count.
func testDestroyUnheld(t *testing.T, db catalog.RetentionCatalog) {
	ctx := ctxT(t)
	mustProject(t, db, "prj_a")
	Seal(t, db, logA, "e", 10) // ids e1..e10, seq = n
	Seal(t, db, logB, "e", 10) // the same ids in another project
	for _, k := range []catalog.DataKey{
		{Log: logA, Epoch: "2026-01", KeyID: "ka1", KEKID: "kek1", Wrapped: []byte("a1")},
		{Log: logA, Epoch: "2026-02", KeyID: "ka2", KEKID: "kek1", Wrapped: []byte("a2")},
		{Log: logB, Epoch: "2026-01", KeyID: "kb1", KEKID: "kek1", Wrapped: []byte("b1")},
	} {
		if _, err := db.InsertDataKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []catalog.LegalHold{
		{ID: "hold_1", ProjectID: "prj_a", MembershipRoot: H("1"), EventIDs: []string{"e3", "e8"}, CreatedAt: Base},
		{ID: "hold_2", ProjectID: "prj_a", MembershipRoot: H("2"), EventIDs: []string{"e5"}, CreatedAt: Base},
	} {
		if _, err := db.CreateLegalHold(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ReleaseLegalHold(ctx, "prj_a", "hold_2", Base); err != nil {
		t.Fatal(err)
	}

	_, err := db.DestroyUnheldDataKey(ctx, logA, "2026-01", 1, 5, Base)
	wantErr(t, "destroy with held event 3 not copied", err, catalog.ErrConflict)
	if k, err := db.DataKey(ctx, logA, "2026-01"); err != nil || k.Destroyed() || string(k.Wrapped) != "a1" {
		t.Fatalf("key after a refused destroy = %+v, %v", k, err)
	}
	// 4..7 holds only e5, whose hold is released.
	if k, err := db.DestroyUnheldDataKey(ctx, logA, "2026-02", 4, 7, Base); err != nil || !k.Destroyed() || k.Wrapped != nil {
		t.Fatalf("destroy of a range without active holds = %+v, %v", k, err)
	}
	// prj_a's hold names e3, not prj_b's e3.
	if k, err := db.DestroyUnheldDataKey(ctx, logB, "2026-01", 1, 5, Base); err != nil || !k.Destroyed() {
		t.Fatalf("destroy in another project = %+v, %v", k, err)
	}
	if err := db.AddHeldPayloads(ctx, logA, []uint64{3}); err != nil {
		t.Fatal(err)
	}
	if k, err := db.DestroyUnheldDataKey(ctx, logA, "2026-01", 1, 5, Base); err != nil || !k.Destroyed() || k.Wrapped != nil {
		t.Fatalf("destroy once the held event is copied = %+v, %v", k, err)
	}
}
