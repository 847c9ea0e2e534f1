package control

import (
	"errors"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestDigestSettings: the schedule and the opt-ins change through the control plane,
// each sealed in project_audit first, and bad input changes nothing.
func TestDigestSettings(t *testing.T) {
	e := newEnv(t)
	p := e.project("digests")
	if _, err := e.svc.AddMember(e.ctx, operator, p.ID, "Ann@example.com", "member"); err != nil {
		t.Fatal(err)
	}
	ds, err := e.svc.DigestSettings(e.ctx, p.ID)
	if err != nil || ds.Schedule != catalog.DigestDaily || len(ds.Recipients) != 0 {
		t.Fatalf("default settings = %+v, %v", ds, err)
	}
	before, size := e.state(p.ID), e.auditSize(p.ID)
	bad := []struct {
		name string
		err  error
		want error
	}{
		{"unknown schedule", func() error { _, err := e.svc.SetDigestSchedule(e.ctx, operator, p.ID, "hourly"); return err }(), ErrInvalid},
		{"unknown project", func() error { _, err := e.svc.SetDigestSchedule(e.ctx, operator, "prj_nope", "weekly"); return err }(), ErrNotFound},
		{"not a member", func() error {
			_, err := e.svc.SetDigestOptIn(e.ctx, operator, p.ID, "stranger@example.com", true)
			return err
		}(), ErrNotFound},
		{"no actor", func() error { _, err := e.svc.SetDigestSchedule(e.ctx, Actor{}, p.ID, "weekly"); return err }(), ErrInvalid},
	}
	for _, b := range bad {
		if !errors.Is(b.err, b.want) {
			t.Errorf("%s: err = %v, want %v", b.name, b.err, b.want)
		}
	}
	if e.state(p.ID) != before || e.auditSize(p.ID) != size {
		t.Fatal("bad input changed the project or its audit stream")
	}

	if ds, err = e.svc.SetDigestSchedule(e.ctx, operator, p.ID, catalog.DigestWeekly); err != nil || ds.Schedule != catalog.DigestWeekly {
		t.Fatalf("set weekly = %+v, %v", ds, err)
	}
	member := Actor{Type: "member", ID: "ann@example.com"}
	if ds, err = e.svc.SetDigestOptIn(e.ctx, member, p.ID, "ann@EXAMPLE.com", true); err != nil || !slices.Equal(ds.Recipients, []string{"Ann@example.com"}) {
		t.Fatalf("opt in = %+v, %v", ds, err)
	}
	if ds, err = e.svc.SetDigestOptIn(e.ctx, member, p.ID, "Ann@example.com", false); err != nil || len(ds.Recipients) != 0 {
		t.Fatalf("opt out = %+v, %v", ds, err)
	}
	recs := e.audit(p.ID)
	var got []string
	for _, r := range recs[len(recs)-3:] {
		got = append(got, r.Action+" "+r.Actor.ID+" "+r.Target.ID)
	}
	want := []string{"digest.schedule.set alice " + p.ID, "digest.opted_in ann@example.com Ann@example.com", "digest.opted_out ann@example.com Ann@example.com"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit records = %q, want %q", got, want)
	}
	if recs[len(recs)-3].Metadata["schedule"] != "weekly" || recs[len(recs)-3].Metadata["previous"] != "daily" {
		t.Fatalf("schedule record metadata = %v", recs[len(recs)-3].Metadata)
	}
}
