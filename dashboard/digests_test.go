package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestDigestSettings: on the digests page every member (of any role) opts only
// themselves in and out, only owners, admins and operators set the schedule, an
// operator (not a member) cannot opt in, each change is sealed in project_audit with
// the member as the actor, and bad input is a 400 that changes nothing.
func TestDigestSettings(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, s *site) {
		ctx := context.Background()
		base := "/dashboard/p/" + s.projectA
		settings := func() (string, []string) {
			t.Helper()
			d, err := s.ctl.DigestSettings(ctx, s.projectA)
			if err != nil {
				t.Fatal(err)
			}
			return d.Schedule, d.Recipients
		}
		member, auditor, owner, op := s.client(), s.client(), s.client(), s.client()
		member.signIn("bob@example.com")
		auditor.signIn("carol@example.com")
		owner.signIn("alice@example.com")
		if code, body := op.post("/dashboard/signin/operator", url.Values{"token": {operatorToken}}); code != http.StatusSeeOther {
			t.Fatalf("operator sign-in: %d %s", code, body)
		}

		// The page: the opt-in button for members, the schedule form for managers.
		code, body := member.get(base + "/digests")
		if code != http.StatusOK || !strings.Contains(body, `id="digest-opt-in"`) || strings.Contains(body, `id="set-digest-schedule"`) ||
			!strings.Contains(body, `id="digest-schedule">daily<`) {
			t.Fatalf("member's digests page: %d %s", code, body)
		}
		if code, body := owner.get(base + "/digests"); code != http.StatusOK || !strings.Contains(body, `id="set-digest-schedule"`) {
			t.Fatalf("owner's digests page: %d %s", code, body)
		}

		// Members opt themselves in; the email is the session's, whatever the form says.
		for _, c := range []*client{member, auditor} {
			if code, body := c.post(base+"/digests/me", url.Values{"optIn": {"true"}, "email": {"dave@example.com"}}); code != http.StatusSeeOther {
				t.Fatalf("%s opts in: %d %s", c.who(), code, body)
			}
		}
		if _, to := settings(); !slices.Equal(to, []string{"bob@example.com", "carol@example.com"}) {
			t.Fatalf("recipients after two opt-ins = %v", to)
		}
		if code, body := member.get(base + "/digests"); code != http.StatusOK || !strings.Contains(body, `id="digest-opt-out"`) {
			t.Fatalf("member's page after opting in: %d %s", code, body)
		}
		if code, body := owner.get(base + "/digests"); !strings.Contains(body, "<li>carol@example.com</li>") || code != http.StatusOK {
			t.Fatalf("owner sees the recipients: %d %s", code, body)
		}
		if code, body := member.post(base+"/digests/me", url.Values{"optIn": {"false"}}); code != http.StatusSeeOther {
			t.Fatalf("member opts out: %d %s", code, body)
		}
		audit := catalog.LogID{ProjectID: s.projectA, Stream: catalog.StreamProjectAudit}
		rows, err := s.cat.QueryEvents(ctx, catalog.Query{Log: audit, ActorID: "bob@example.com", Limit: 10})
		if err != nil || len(rows) != 2 || rows[0].Action == rows[1].Action {
			t.Fatalf("project_audit records by bob = %+v, %v", rows, err)
		}

		// The schedule: managers only; bad values and refused roles change nothing.
		for _, c := range []*client{member, auditor} {
			if code, _ := c.post(base+"/digests/schedule", url.Values{"schedule": {"off"}}); code != http.StatusForbidden {
				t.Errorf("%s sets the schedule: %d, want 403", c.who(), code)
			}
		}
		if code, body := owner.post(base+"/digests/schedule", url.Values{"schedule": {"weekly"}}); code != http.StatusSeeOther {
			t.Fatalf("owner sets weekly: %d %s", code, body)
		}
		if code, body := op.post(base+"/digests/schedule", url.Values{"schedule": {"off"}}); code != http.StatusSeeOther {
			t.Fatalf("operator sets off: %d %s", code, body)
		}
		if sched, _ := settings(); sched != catalog.DigestOff {
			t.Fatalf("schedule = %q, want off", sched)
		}
		all, err := s.cat.QueryEvents(ctx, catalog.Query{Log: audit, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []struct {
			c    *client
			path string
			form url.Values
		}{
			{owner, "/digests/schedule", url.Values{"schedule": {"hourly"}}},
			{owner, "/digests/schedule", url.Values{}},
			{member, "/digests/me", url.Values{"optIn": {"yes"}}},
			{member, "/digests/me", url.Values{}},
			{op, "/digests/me", url.Values{"optIn": {"true"}}},
		} {
			if code, body := bad.c.post(base+bad.path, bad.form); code != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
				t.Errorf("%s %s %v: %d %s, want 400 with a JSON error", bad.c.who(), bad.path, bad.form, code, body)
			}
		}
		after, err := s.cat.QueryEvents(ctx, catalog.Query{Log: audit, Limit: 500})
		if sched, to := settings(); err != nil || len(after) != len(all) || sched != catalog.DigestOff ||
			!slices.Equal(to, []string{"carol@example.com"}) {
			t.Fatalf("bad input changed something: %d records (had %d), %q, %v, %v", len(after), len(all), sched, to, err)
		}
		// Another project's members reach nothing here.
		dave := s.client()
		dave.signIn("dave@example.com")
		if code, _ := dave.post(base+"/digests/me", url.Values{"optIn": {"true"}}); code != http.StatusForbidden {
			t.Fatalf("a member of project B opts in to A: %d, want 403", code)
		}
		if _, to := settings(); !slices.Equal(to, []string{"carol@example.com"}) {
			t.Fatalf("recipients after a refused opt-in = %v", to)
		}
	})
}
