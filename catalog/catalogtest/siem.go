package catalogtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// SIEMDB is a driver with the SIEM destination methods.
type SIEMDB interface {
	catalog.Catalog
	catalog.SIEMCatalog
}

// RunSIEM is the conformance suite of catalog.SIEMCatalog: destinations, the operator's
// states, the delivery lease and the compare-and-set cursor.
func RunSIEM(t *testing.T, open func(t *testing.T) SIEMDB) {
	ctx := context.Background()
	db := open(t)
	now := catalog.MS(time.Now())
	for _, id := range []string{"prj_siem_a", "prj_siem_b"} {
		if _, err := db.CreateProject(ctx, catalog.Project{ID: id, Name: id, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	d := catalog.Destination{ID: "dst_1", ProjectID: "prj_siem_a", Stream: catalog.StreamEvents, Name: "soc",
		Kind: "webhook", Format: "ocsf", Config: []byte(`{"url":"https://x"}`), State: catalog.DestActive, CreatedAt: now}
	got, err := db.CreateDestination(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cursor != 0 || got.State != catalog.DestActive || !got.CreatedAt.Equal(now) {
		t.Fatalf("created %+v", got)
	}
	if _, err := db.CreateDestination(ctx, d); !errors.Is(err, catalog.ErrExists) {
		t.Fatalf("duplicate: %v, want ErrExists", err)
	}
	bad := d
	bad.ID, bad.ProjectID = "dst_2", "prj_missing"
	if _, err := db.CreateDestination(ctx, bad); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("unknown project: %v, want ErrNotFound", err)
	}
	bad.ProjectID, bad.State = "prj_siem_a", "sleeping"
	if _, err := db.CreateDestination(ctx, bad); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("bad state: %v, want ErrInvalid", err)
	}
	d2 := d
	d2.ID, d2.ProjectID, d2.Stream = "dst_2", "prj_siem_b", catalog.StreamProjectAudit
	if _, err := db.CreateDestination(ctx, d2); err != nil {
		t.Fatal(err)
	}
	// Isolation: a project sees only its own destinations.
	if _, err := db.Destination(ctx, "prj_siem_b", "dst_1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("other project's destination: %v, want ErrNotFound", err)
	}
	if l, err := db.ListDestinations(ctx, "prj_siem_a"); err != nil || len(l) != 1 || l[0].ID != "dst_1" {
		t.Fatalf("list a = %+v, %v", l, err)
	}
	if l, err := db.ListDestinations(ctx, ""); err != nil || len(l) != 2 {
		t.Fatalf("list all = %+v, %v", l, err)
	}

	// The lease: one owner at a time until it expires.
	if _, err := db.LeaseDestination(ctx, "dst_1", "r1", now, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LeaseDestination(ctx, "dst_1", "r2", now.Add(time.Second), 10*time.Second); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("second owner: %v, want ErrConflict", err)
	}
	if _, err := db.LeaseDestination(ctx, "dst_missing", "r1", now, time.Second); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("unknown destination lease: %v, want ErrConflict", err)
	}
	// The cursor moves only forward, from where it is, under the lease.
	if err := db.AdvanceDestination(ctx, "dst_1", "r1", 0, 5, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.AdvanceDestination(ctx, "dst_1", "r1", 0, 7, now.Add(time.Second)); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("stale cursor: %v, want ErrConflict", err)
	}
	if err := db.AdvanceDestination(ctx, "dst_1", "r2", 5, 7, now.Add(time.Second)); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("advance without the lease: %v, want ErrConflict", err)
	}
	if err := db.AdvanceDestination(ctx, "dst_1", "r1", 5, 5, now.Add(time.Second)); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("no-op advance: %v, want ErrInvalid", err)
	}
	if err := db.FailDestination(ctx, "dst_1", "r1", 3, "connection refused", false, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err = db.Destination(ctx, "prj_siem_a", "dst_1")
	if err != nil || got.Cursor != 5 || got.Attempts != 3 || got.LastError != "connection refused" ||
		got.State != catalog.DestActive || got.LeaseOwner != "r1" {
		t.Fatalf("after failure: %+v, %v", got, err)
	}
	if err := db.FailDestination(ctx, "dst_1", "r1", 4, "refused again", true, now.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ = db.Destination(ctx, "prj_siem_a", "dst_1"); got.State != catalog.DestDeadLetter || got.Cursor != 5 {
		t.Fatalf("dead letter: %+v", got)
	}
	// After expiry another owner takes over, and the old owner can no longer write.
	later := now.Add(20 * time.Second)
	if _, err := db.LeaseDestination(ctx, "dst_1", "r2", later, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := db.AdvanceDestination(ctx, "dst_1", "r1", 5, 6, later); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("expired owner advanced: %v", err)
	}
	if err := db.FailDestination(ctx, "dst_1", "r1", 1, "x", false, later); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("expired owner failed: %v", err)
	}
	// Resume clears the failures and keeps the cursor.
	got, err = db.SetDestinationState(ctx, "prj_siem_a", "dst_1", catalog.DestActive, later)
	if err != nil || got.State != catalog.DestActive || got.Attempts != 0 || got.LastError != "" || got.Cursor != 5 {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	if _, err := db.SetDestinationState(ctx, "prj_siem_b", "dst_1", catalog.DestPaused, later); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("pause other project's: %v, want ErrNotFound", err)
	}
	if _, err := db.SetDestinationState(ctx, "prj_siem_a", "dst_1", "bogus", later); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("bogus state: %v, want ErrInvalid", err)
	}
	// The config is replaced only from what it still is (the KEK rotation's rewrap);
	// the cursor, state and lease stay.
	before, _ := db.Destination(ctx, "prj_siem_a", "dst_1")
	newConfig := []byte(`{"url":"https://x","sealed":"AAAA","kekId":"kek_b"}`)
	if ok, err := db.ReplaceDestinationConfig(ctx, "dst_1", []byte(`{"url":"https://y"}`), newConfig); err != nil || ok {
		t.Fatalf("replace from a stale config: %v, %v, want false", ok, err)
	}
	if ok, err := db.ReplaceDestinationConfig(ctx, "dst_missing", d.Config, newConfig); err != nil || ok {
		t.Fatalf("replace an unknown destination's config: %v, %v, want false", ok, err)
	}
	if got, _ = db.Destination(ctx, "prj_siem_a", "dst_1"); string(got.Config) != string(d.Config) {
		t.Fatalf("config after refused replaces: %s", got.Config)
	}
	if ok, err := db.ReplaceDestinationConfig(ctx, "dst_1", d.Config, newConfig); err != nil || !ok {
		t.Fatalf("replace: %v, %v", ok, err)
	}
	got, err = db.Destination(ctx, "prj_siem_a", "dst_1")
	if err != nil || string(got.Config) != string(newConfig) || got.Cursor != before.Cursor || got.State != before.State ||
		got.LeaseOwner != before.LeaseOwner || !got.LeaseUntil.Equal(before.LeaseUntil) || !got.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("after replace: %+v, %v (before %+v)", got, err, before)
	}
	if got, _ = db.Destination(ctx, "prj_siem_b", "dst_2"); string(got.Config) != string(d2.Config) {
		t.Fatalf("another destination's config changed: %s", got.Config)
	}
	if err := db.DeleteDestination(ctx, "prj_siem_b", "dst_1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("delete other project's: %v, want ErrNotFound", err)
	}
	if err := db.DeleteDestination(ctx, "prj_siem_a", "dst_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Destination(ctx, "prj_siem_a", "dst_1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
}
