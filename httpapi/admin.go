package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/tlog"
)

// The operator API, /admin/v1, authenticated with the operator token. Every change is
// made through the control plane, which records it in the project's project_audit
// stream with the actor named by the X-Sealtrail-Actor header (default "operator").

func (s *Server) adminRoutes(r *mux.Router) {
	routes := []struct {
		path, method string
		f            http.HandlerFunc
	}{
		{"/projects", http.MethodPost, s.adminCreateProject},
		{"/projects", http.MethodGet, s.adminListProjects},
		{"/projects/{project}", http.MethodGet, s.adminGetProject},
		{"/projects/{project}/keys", http.MethodPost, s.adminCreateKey},
		{"/projects/{project}/keys", http.MethodGet, s.adminListKeys},
		{"/projects/{project}/keys/{key}/revoke", http.MethodPost, s.adminRevokeKey},
		{"/projects/{project}/members", http.MethodPost, s.adminAddMember},
		{"/projects/{project}/members", http.MethodGet, s.adminListMembers},
		{"/projects/{project}/members/{email}", http.MethodDelete, s.adminRemoveMember},
		{"/projects/{project}/signing-keys", http.MethodPost, s.adminAddSigningKey},
		{"/projects/{project}/signing-keys", http.MethodGet, s.adminListSigningKeys},
		{"/projects/{project}/signing-keys/{key}/revoke", http.MethodPost, s.adminRevokeSigningKey},
		{"/projects/{project}/retention", http.MethodPut, s.adminSetRetention},
		{"/projects/{project}/retention", http.MethodGet, s.adminListRetention},
		{"/projects/{project}/rate-limit", http.MethodPut, s.adminSetRateLimit},
		{"/projects/{project}/holds", http.MethodPost, s.adminCreateHold},
		{"/projects/{project}/holds", http.MethodGet, s.adminListHolds},
		{"/projects/{project}/holds/{hold}/release", http.MethodPost, s.adminReleaseHold},
		{"/kek", http.MethodGet, s.adminKEKStatus}, {"/kek/rewrap", http.MethodPost, s.adminKEKRewrap}, // kek.go
		{"/checkpoint-key", http.MethodGet, s.checkpointKey},
		{"/projects/{project}/public-read", http.MethodPut, s.adminSetPublicRead},
	}
	routes = append(routes, s.retentionAdminRoutes()...)
	routes = append(routes, s.adminDigestRoutes()...)
	s.handleOperator(r, routes)
	s.siemRoutes(r)
}

// handleOperator registers operator routes, each behind the operator token, and a 405
// with Allow for every other method of their paths.
func (s *Server) handleOperator(r *mux.Router, routes []struct {
	path, method string
	f            http.HandlerFunc
}) {
	var paths []string
	allowed := map[string][]string{}
	for _, rt := range routes {
		r.Handle(rt.path, s.operator(rt.f)).Methods(rt.method)
		if allowed[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// Every other method of a known path: with gorilla/mux 1.8.1 a subrouter would answer
	// it 404 instead of 405. These routes come last, so they match only what the routes
	// above did not.
	for _, p := range paths {
		r.Handle(p, methodNotAllowed(allowed[p]))
	}
}

// methodNotAllowed answers 405 with the allowed methods.
func methodNotAllowed(methods []string) http.Handler {
	allow := strings.Join(slices.Sorted(slices.Values(methods)), ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
	})
}

func actorOf(r *http.Request) (control.Actor, error) {
	name := strings.TrimSpace(r.Header.Get("X-Sealtrail-Actor"))
	if name == "" {
		name = "operator"
	}
	if len(name) > 256 || !utf8.ValidString(name) {
		return control.Actor{}, errors.New("X-Sealtrail-Actor must be at most 256 bytes of UTF-8")
	}
	return control.Actor{Type: "operator", ID: name}, nil
}

// decode reads a JSON object body into v, strictly: unknown members, trailing data and
// wrong types are errors.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := s.readAll(w, r, s.cfg.MaxBodyBytes)
	if !ok {
		return false
	}
	if _, err := tlog.Canonicalize(body); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON: "+strings.TrimPrefix(err.Error(), "jcs: "))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid request: "+err.Error())
		return false
	}
	return true
}

// controlError answers a control-plane error with its status.
func (s *Server) controlError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, control.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, control.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, control.ErrExists), errors.Is(err, control.ErrState):
		writeError(w, http.StatusConflict, err.Error())
	default:
		s.internal(w, r, "control-plane change", err)
	}
}

// adminCall runs f with the actor, answering a bad actor header with 400.
func (s *Server) adminCall(w http.ResponseWriter, r *http.Request, f func(control.Actor) (int, any, error)) {
	actor, err := actorOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	status, body, err := f(actor)
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	writeJSON(w, status, body)
}

func timeOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := tlog.FormatTime(t)
	return &s
}

type projectJSON struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CreatedAt     string `json:"createdAt"`
	RequireSigned bool   `json:"requireSigned"`
	// IngestRateLimit is the operator's override, null for the service default.
	IngestRateLimit *int `json:"ingestRateLimit"`
}

func projectOut(p catalog.Project) projectJSON {
	out := projectJSON{p.ID, p.Name, tlog.FormatTime(p.CreatedAt), p.RequireSigned, nil}
	if p.IngestRateLimit > 0 {
		out.IngestRateLimit = &p.IngestRateLimit
	}
	return out
}

// adminSetRateLimit is PUT /projects/{project}/rate-limit {"ingestRateLimit": n}: the
// project's ingest limit per API key per rate window; 0 or null goes back to the
// service default.
func (s *Server) adminSetRateLimit(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IngestRateLimit *int `json:"ingestRateLimit"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	limit := 0
	if req.IngestRateLimit != nil {
		limit = *req.IngestRateLimit
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		p, err := s.cfg.Control.SetIngestRateLimit(r.Context(), a, mux.Vars(r)["project"], limit)
		return http.StatusOK, projectOut(p), err
	})
}

func (s *Server) adminCreateProject(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		p, err := s.cfg.Control.CreateProject(r.Context(), a, req.Name)
		return http.StatusCreated, projectOut(p), err
	})
}

func (s *Server) adminListProjects(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 1000")
			return
		}
		limit = n
	}
	ps, err := s.cfg.Control.ListProjects(r.Context(), r.URL.Query().Get("after"), limit)
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	out := make([]projectJSON, len(ps))
	for i, p := range ps {
		out[i] = projectOut(p)
	}
	writeJSON(w, http.StatusOK, map[string]any{"projects": out})
}

func (s *Server) adminGetProject(w http.ResponseWriter, r *http.Request) {
	p, err := s.cfg.Control.Project(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, projectOut(p))
}

type keyJSON struct {
	ID        string   `json:"id"`
	ProjectID string   `json:"projectId"`
	Name      string   `json:"name,omitempty"`
	Prefix    string   `json:"prefix"`
	Scopes    []string `json:"scopes"`
	State     string   `json:"state"`
	CreatedAt string   `json:"createdAt"`
	ExpiresAt *string  `json:"expiresAt"`
	RevokedAt *string  `json:"revokedAt"`
}

func keyOut(k catalog.APIKey) keyJSON {
	return keyJSON{k.ID, k.ProjectID, k.Name, k.Prefix, k.Scopes, string(k.State(time.Now())),
		tlog.FormatTime(k.CreatedAt), timeOrNil(k.ExpiresAt), timeOrNil(k.RevokedAt)}
}

func (s *Server) adminCreateKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name      string   `json:"name"`
		Scopes    []string `json:"scopes"`
		ExpiresAt string   `json:"expiresAt"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	var exp time.Time
	if req.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339Nano, req.ExpiresAt)
		if err != nil {
			writeError(w, http.StatusBadRequest, "expiresAt must be an RFC 3339 time")
			return
		}
		exp = t
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		secret, k, err := s.cfg.Control.CreateAPIKey(r.Context(), a, mux.Vars(r)["project"], req.Name, req.Scopes, exp)
		return http.StatusCreated, map[string]any{"key": keyOut(k), "secret": secret}, err
	})
}

func (s *Server) adminListKeys(w http.ResponseWriter, r *http.Request) {
	ks, err := s.cfg.Control.ListAPIKeys(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	out := make([]keyJSON, len(ks))
	for i, k := range ks {
		out[i] = keyOut(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
}

func (s *Server) adminRevokeKey(w http.ResponseWriter, r *http.Request) {
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		v := mux.Vars(r)
		k, err := s.cfg.Control.RevokeAPIKey(r.Context(), a, v["project"], v["key"])
		return http.StatusOK, keyOut(k), err
	})
}

type memberJSON struct {
	ProjectID string `json:"projectId"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	CreatedAt string `json:"createdAt"`
}

func (s *Server) adminAddMember(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		m, err := s.cfg.Control.AddMember(r.Context(), a, mux.Vars(r)["project"], req.Email, req.Role)
		return http.StatusCreated, memberJSON{m.ProjectID, m.Email, m.Role, tlog.FormatTime(m.CreatedAt)}, err
	})
}

func (s *Server) adminListMembers(w http.ResponseWriter, r *http.Request) {
	ms, err := s.cfg.Control.ListMembers(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	out := make([]memberJSON, len(ms))
	for i, m := range ms {
		out[i] = memberJSON{m.ProjectID, m.Email, m.Role, tlog.FormatTime(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": out})
}

func (s *Server) adminRemoveMember(w http.ResponseWriter, r *http.Request) {
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		v := mux.Vars(r)
		err := s.cfg.Control.RemoveMember(r.Context(), a, v["project"], v["email"])
		return http.StatusOK, map[string]string{"removed": v["email"]}, err
	})
}

type signingKeyJSON struct {
	ID        string  `json:"id"`
	ProjectID string  `json:"projectId"`
	PublicKey string  `json:"publicKey"`
	State     string  `json:"state"`
	CreatedAt string  `json:"createdAt"`
	RevokedAt *string `json:"revokedAt"`
}

func signingKeyOut(k catalog.SigningKey) signingKeyJSON {
	return signingKeyJSON{k.ID, k.ProjectID, k.PublicKey, string(k.State()), tlog.FormatTime(k.CreatedAt), timeOrNil(k.RevokedAt)}
}

func (s *Server) adminAddSigningKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PublicKey string `json:"publicKey"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		k, err := s.cfg.Control.AddSigningKey(r.Context(), a, mux.Vars(r)["project"], req.PublicKey)
		return http.StatusCreated, signingKeyOut(k), err
	})
}

func (s *Server) adminListSigningKeys(w http.ResponseWriter, r *http.Request) {
	ks, err := s.cfg.Control.ListSigningKeys(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	out := make([]signingKeyJSON, len(ks))
	for i, k := range ks {
		out[i] = signingKeyOut(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"signingKeys": out})
}

func (s *Server) adminRevokeSigningKey(w http.ResponseWriter, r *http.Request) {
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		v := mux.Vars(r)
		k, err := s.cfg.Control.RevokeSigningKey(r.Context(), a, v["project"], v["key"])
		return http.StatusOK, signingKeyOut(k), err
	})
}

// streamParam maps the API's stream names to the stored ones; "" is events.
func streamParam(v string) (catalog.Stream, error) {
	switch v {
	case "", "events":
		return catalog.StreamEvents, nil
	case "project-audit":
		return catalog.StreamProjectAudit, nil
	}
	return "", fmt.Errorf("stream must be events or project-audit, not %q", v)
}

type retentionJSON struct {
	Stream    string `json:"stream"`
	Days      int    `json:"days"`
	UpdatedAt string `json:"updatedAt"`
}

func retentionOut(r catalog.Retention) retentionJSON {
	name := "events"
	if r.Log.Stream == catalog.StreamProjectAudit {
		name = "project-audit"
	}
	return retentionJSON{name, r.Days, tlog.FormatTime(r.UpdatedAt)}
}

func (s *Server) adminSetRetention(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream string `json:"stream"`
		Days   *int   `json:"days"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	stream, err := streamParam(req.Stream)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Days == nil {
		writeError(w, http.StatusBadRequest, "days is required")
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		ret, err := s.cfg.Control.SetRetention(r.Context(), a, mux.Vars(r)["project"], stream, *req.Days)
		return http.StatusOK, retentionOut(ret), err
	})
}

func (s *Server) adminListRetention(w http.ResponseWriter, r *http.Request) {
	rs, err := s.cfg.Control.ListRetention(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	out := make([]retentionJSON, len(rs))
	for i, x := range rs {
		out[i] = retentionOut(x)
	}
	writeJSON(w, http.StatusOK, map[string]any{"retention": out})
}

type holdJSON struct {
	ID             string   `json:"holdId"`
	ProjectID      string   `json:"projectId"`
	MembershipRoot string   `json:"membershipRoot"`
	EventIDs       []string `json:"eventIds"`
	State          string   `json:"state"`
	CreatedAt      string   `json:"createdAt"`
	ReleasedAt     *string  `json:"releasedAt"`
}

func holdOut(h catalog.LegalHold) holdJSON {
	return holdJSON{h.ID, h.ProjectID, tlog.Hex(h.MembershipRoot), h.EventIDs, string(h.State()),
		tlog.FormatTime(h.CreatedAt), timeOrNil(h.ReleasedAt)}
}

func (s *Server) adminCreateHold(w http.ResponseWriter, r *http.Request) {
	var req struct {
		EventIDs []string `json:"eventIds"`
		Reason   string   `json:"reason"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		h, err := s.cfg.Control.CreateHold(r.Context(), a, mux.Vars(r)["project"], req.EventIDs, req.Reason)
		return http.StatusCreated, holdOut(h), err
	})
}

func (s *Server) adminListHolds(w http.ResponseWriter, r *http.Request) {
	hs, err := s.cfg.Control.ListHolds(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	out := make([]holdJSON, len(hs))
	for i, h := range hs {
		out[i] = holdOut(h)
	}
	writeJSON(w, http.StatusOK, map[string]any{"holds": out})
}

func (s *Server) adminReleaseHold(w http.ResponseWriter, r *http.Request) {
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		v := mux.Vars(r)
		h, err := s.cfg.Control.ReleaseHold(r.Context(), a, v["project"], v["hold"])
		return http.StatusOK, holdOut(h), err
	})
}
