package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/tlog"
)

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"hex":  func(h catalog.Hash) string { return tlog.Hex(h) },
		"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"join": strings.Join,
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes page with data (plus the project context, if any).
func (s *Server) render(w http.ResponseWriter, r *http.Request, page string, pc *projectCtx, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["P"] = pc
	if pc != nil {
		data["Base"] = Prefix + "p/" + pc.Project.ID
	}
	if _, ok := data["Title"]; !ok && pc != nil {
		data["Title"] = pc.Project.Name
	}
	if n := notices[r.URL.Query().Get("ok")]; n != "" {
		data["Notice"] = n
	}
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.internal(w, r, "render "+page, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

// notices are the messages a redirect after a change may show (?ok=<code>).
var notices = map[string]string{
	"key-revoked":         "API key revoked. The API refuses it from now on (within a second on every replica).",
	"member-added":        "Member added.",
	"member-removed":      "Member removed. Their sessions no longer reach this project.",
	"signing-key-added":   "Signing key registered. Unsigned events are now rejected.",
	"signing-key-revoked": "Signing key revoked.",
	"retention-set":       "Retention set.",
	"hold-created":        "Legal hold created; its membership root is sealed in project_audit.",
	"hold-released":       "Legal hold released.",
	"digest-schedule-set": "Digest schedule set.",
	"digest-opted-in":     "You will receive this project's digest.",
	"digest-opted-out":    "You will no longer receive this project's digest.",
}

// redirect answers a change with 303 to the project page path with a notice.
func redirect(w http.ResponseWriter, r *http.Request, pc *projectCtx, path, notice string) {
	http.Redirect(w, r, Prefix+"p/"+pc.Project.ID+path+"?ok="+notice, http.StatusSeeOther)
}

// listPage renders page with the project's list under key.
func listPage[T any](s *Server, page, key string, list func(context.Context, string) ([]T, error), extra map[string]any) pageHandler {
	return func(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
		items, err := list(r.Context(), pc.Project.ID)
		if err != nil {
			s.controlError(w, r, page, err)
			return
		}
		data := map[string]any{key: items}
		for k, v := range extra {
			data[k] = v
		}
		s.render(w, r, page, pc, data)
	}
}

// change runs a control-plane change and answers it with a redirect to path showing
// notice, or with the change's error.
func (s *Server) change(w http.ResponseWriter, r *http.Request, pc *projectCtx, what, path, notice string, apply func() error) {
	if err := apply(); err != nil {
		s.controlError(w, r, what, err)
		return
	}
	redirect(w, r, pc, path, notice)
}

// home is the sign-in page, or the list of the signed-in principal's projects.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Prefix {
		s.fail(w, r, http.StatusNotFound, "Not found")
		return
	}
	sess, ok, err := s.session(r)
	if err != nil {
		s.internal(w, r, "session", err)
		return
	}
	if !ok {
		s.render(w, r, "signin", nil, map[string]any{"Title": "Sign in", "Mail": s.cfg.Mailer != nil,
			"Operator": s.cfg.OperatorToken != ""})
		return
	}
	type row struct{ ID, Name, Role string }
	var rows []row
	who := "operator"
	if sess.Kind == catalog.SessionOperator {
		ps, err := s.cfg.Control.ListProjects(r.Context(), "", 1000)
		if err != nil {
			s.controlError(w, r, "projects", err)
			return
		}
		for _, p := range ps {
			rows = append(rows, row{p.ID, p.Name, roleOperator})
		}
	} else {
		who = sess.Email
		members, err := s.cfg.Store.MemberProjects(r.Context(), sess.Email)
		if err != nil {
			s.internal(w, r, "member projects", err)
			return
		}
		for _, m := range members {
			p, err := s.cfg.Control.Project(r.Context(), m.ProjectID)
			if err != nil {
				s.controlError(w, r, "project", err)
				return
			}
			rows = append(rows, row{p.ID, p.Name, m.Role})
		}
	}
	s.render(w, r, "projects", nil, map[string]any{"Title": "Projects", "Projects": rows, "Who": who})
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	s.render(w, r, "overview", pc, nil)
}

// page renders a page whose content the script loads through the project's /api.
func (s *Server) page(name string) pageHandler {
	return func(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
		s.render(w, r, name, pc, map[string]any{"Query": r.URL.Query()})
	}
}

// apiRead serves a read route of the public API for the signed-in member, with the
// scopes of their role.
func (s *Server) apiRead(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	key := catalog.APIKey{ID: "dashboard:" + pc.Who, ProjectID: pc.Project.ID, Scopes: pc.scopes()}
	s.cfg.API.ServeDelegated(w, r, key, "/"+mux.Vars(r)["path"])
}

func (s *Server) keysPage(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	s.renderKeys(w, r, pc, "", catalog.APIKey{})
}

func (s *Server) renderKeys(w http.ResponseWriter, r *http.Request, pc *projectCtx, secret string, created catalog.APIKey) {
	keys, err := s.cfg.Control.ListAPIKeys(r.Context(), pc.Project.ID)
	if err != nil {
		s.controlError(w, r, "API keys", err)
		return
	}
	now := s.cfg.Now()
	type row struct {
		catalog.APIKey
		State catalog.KeyState
	}
	rows := make([]row, len(keys))
	for i, k := range keys {
		rows[i] = row{k, k.State(now)}
	}
	s.render(w, r, "keys", pc, map[string]any{"Keys": rows, "Secret": secret, "Created": created, "Scopes": control.Scopes})
}

// createKey creates an API key and shows its secret in this answer only.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	var expires time.Time
	if d := strings.TrimSpace(r.PostForm.Get("expiresDays")); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > 3650 {
			s.fail(w, r, http.StatusBadRequest, "Expiry must be 1 to 3650 days, or empty for none.")
			return
		}
		expires = s.cfg.Now().Add(time.Duration(n) * 24 * time.Hour)
	}
	secret, k, err := s.cfg.Control.CreateAPIKey(r.Context(), pc.actor, pc.Project.ID, strings.TrimSpace(r.PostForm.Get("name")),
		r.PostForm["scope"], expires)
	if err != nil {
		s.controlError(w, r, "create API key", err)
		return
	}
	s.renderKeys(w, r, pc, secret, k)
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	s.change(w, r, pc, "revoke API key", "/keys", "key-revoked", func() error {
		_, err := s.cfg.Control.RevokeAPIKey(r.Context(), pc.actor, pc.Project.ID, mux.Vars(r)["key"])
		return err
	})
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	role := r.PostForm.Get("role")
	if role == "owner" && pc.Role == "admin" {
		s.fail(w, r, http.StatusForbidden, "Only an owner (or an operator) can add an owner.")
		return
	}
	s.change(w, r, pc, "add member", "/members", "member-added", func() error {
		_, err := s.cfg.Control.AddMember(r.Context(), pc.actor, pc.Project.ID, strings.TrimSpace(r.PostForm.Get("email")), role)
		return err
	})
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	s.change(w, r, pc, "remove member", "/members", "member-removed", func() error {
		return s.cfg.Control.RemoveMember(r.Context(), pc.actor, pc.Project.ID, r.PostForm.Get("email"))
	})
}

func (s *Server) addSigningKey(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	pub := strings.ToLower(strings.TrimSpace(r.PostForm.Get("publicKey")))
	s.change(w, r, pc, "register signing key", "/signing-keys", "signing-key-added", func() error {
		_, err := s.cfg.Control.AddSigningKey(r.Context(), pc.actor, pc.Project.ID, pub)
		return err
	})
}

func (s *Server) revokeSigningKey(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	s.change(w, r, pc, "revoke signing key", "/signing-keys", "signing-key-revoked", func() error {
		_, err := s.cfg.Control.RevokeSigningKey(r.Context(), pc.actor, pc.Project.ID, mux.Vars(r)["key"])
		return err
	})
}

func (s *Server) setRetention(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	days, err := strconv.Atoi(strings.TrimSpace(r.PostForm.Get("days")))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Days must be a whole number.")
		return
	}
	s.change(w, r, pc, "set retention", "/retention", "retention-set", func() error {
		_, err := s.cfg.Control.SetRetention(r.Context(), pc.actor, pc.Project.ID, catalog.Stream(r.PostForm.Get("stream")), days)
		return err
	})
}

// createHold places a hold on the events selected in the event browser.
func (s *Server) createHold(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	h, err := s.cfg.Control.CreateHold(r.Context(), pc.actor, pc.Project.ID, r.PostForm["event"], strings.TrimSpace(r.PostForm.Get("reason")))
	if err != nil {
		s.controlError(w, r, "create legal hold", err)
		return
	}
	redirect(w, r, pc, "/holds/"+h.ID, "hold-created")
}

// holdPage shows a hold, its membership root and, for ?event=, that event's membership
// proof (checked again in the browser).
func (s *Server) holdPage(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	holdID := mux.Vars(r)["hold"]
	hs, err := s.cfg.Control.ListHolds(r.Context(), pc.Project.ID)
	if err != nil {
		s.controlError(w, r, "legal holds", err)
		return
	}
	var hold *catalog.LegalHold
	for i := range hs {
		if hs[i].ID == holdID {
			hold = &hs[i]
		}
	}
	if hold == nil {
		s.fail(w, r, http.StatusNotFound, "No legal hold "+holdID+" in this project.")
		return
	}
	data := map[string]any{"Hold": hold, "Active": hold.State() == catalog.HoldActive}
	if ev := r.URL.Query().Get("event"); ev != "" {
		p, err := s.cfg.Control.ProveHoldMembership(r.Context(), pc.Project.ID, holdID, ev)
		if err != nil {
			s.controlError(w, r, "hold proof", err)
			return
		}
		proof := make([]string, len(p.Proof))
		for i, h := range p.Proof {
			proof[i] = tlog.Hex(h)
		}
		data["Proof"] = map[string]any{"EventID": p.EventID, "LeafHash": tlog.Hex(p.LeafHash), "Index": p.Index,
			"Size": p.Size, "Path": strings.Join(proof, ","), "Root": tlog.Hex(p.MembershipRoot)}
	}
	s.render(w, r, "hold", pc, data)
}

func (s *Server) releaseHold(w http.ResponseWriter, r *http.Request, pc *projectCtx) {
	holdID := mux.Vars(r)["hold"]
	s.change(w, r, pc, "release legal hold", "/holds/"+holdID, "hold-released", func() error {
		_, err := s.cfg.Control.ReleaseHold(r.Context(), pc.actor, pc.Project.ID, holdID)
		return err
	})
}
