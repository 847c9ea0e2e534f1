package dashboard

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

// The digest settings page (docs/dashboard.md): owners, admins and operators set the
// project's schedule; every member opts themselves in or out. The email is always
// the session's, never a form field, so a member changes only their own opt-in.

// digestSchedules are the schedules the page offers, in its order.
var digestSchedules = []string{catalog.DigestDaily, catalog.DigestWeekly, catalog.DigestOff}

// digestsPage shows the schedule, the last digest and the viewer's own opt-in; the
// recipients' emails only to those who manage members.
func (s *Server) digestsPage(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	d, err := s.cfg.Control.DigestSettings(r.Context(), pc.Project.ID)
	if err != nil {
		s.controlError(w, r, "digest settings", err)
		return
	}
	data := map[string]any{"Title": "Digests", "Digest": d, "Schedules": digestSchedules,
		"Count": len(d.Recipients), "Member": pc.actor.Type == "member", "Mail": s.cfg.Mailer != nil,
		"OptedIn": slices.ContainsFunc(d.Recipients, func(e string) bool { return strings.EqualFold(e, pc.Who) })}
	if pc.CanManage() {
		data["Recipients"] = d.Recipients
	}
	s.render(w, r, "digests", pc, data)
}

// setDigestSchedule sets the project's schedule (owners, admins, operators).
func (s *Server) setDigestSchedule(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	s.change(w, r, pc, "set digest schedule", "/digests", "digest-schedule-set", func() error {
		_, err := s.cfg.Control.SetDigestSchedule(r.Context(), pc.actor, pc.Project.ID, r.PostForm.Get("schedule"))
		return err
	})
}

// setDigestOptIn opts the signed-in member in (optIn=true) or out (optIn=false).
func (s *Server) setDigestOptIn(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	if pc.actor.Type != "member" {
		s.fail(w, r, http.StatusBadRequest, "Only a project member can opt in to digests; an operator is not one (use bin/sealtraild admin digest opt-in for a member).")
		return
	}
	var in bool
	switch r.PostForm.Get("optIn") {
	case "true":
		in = true
	case "false":
	default:
		s.fail(w, r, http.StatusBadRequest, "optIn must be true or false.")
		return
	}
	notice := "digest-opted-out"
	if in {
		notice = "digest-opted-in"
	}
	s.change(w, r, pc, "set digest opt-in", "/digests", notice, func() error {
		_, err := s.cfg.Control.SetDigestOptIn(r.Context(), pc.actor, pc.Project.ID, pc.actor.ID, in)
		return err
	})
}
