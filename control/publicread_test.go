package control

import (
	"errors"
	"fmt"
	"testing"
)

// TestPublicRead: the mode is off by default, set per project, recorded in the
// project's project_audit stream with the previous value, and refused for an unknown
// project.
func TestPublicRead(t *testing.T) {
	e := newEnv(t)
	p, q := e.project("acme"), e.project("other")
	if on, err := e.svc.PublicRead(e.ctx, p.ID); err != nil || on {
		t.Fatalf("PublicRead of a new project = %v, %v", on, err)
	}
	if err := e.svc.SetPublicRead(e.ctx, operator, p.ID, true); err != nil {
		t.Fatal(err)
	}
	if on, err := e.svc.PublicRead(e.ctx, p.ID); err != nil || !on {
		t.Fatalf("PublicRead after turning it on = %v, %v", on, err)
	}
	if on, err := e.svc.PublicRead(e.ctx, q.ID); err != nil || on {
		t.Fatalf("another project's PublicRead = %v, %v", on, err)
	}
	recs := e.audit(p.ID)
	last := recs[len(recs)-1]
	if last.Action != "project.public_read.set" || last.Target.ID != p.ID || fmt.Sprint(last.Metadata["publicRead"]) != "true" ||
		fmt.Sprint(last.Metadata["previous"]) != "false" {
		t.Fatalf("audit record %+v", last)
	}
	if err := e.svc.SetPublicRead(e.ctx, operator, "prj_00000000000000000000000000", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetPublicRead of an unknown project: %v, want ErrNotFound", err)
	}
}
