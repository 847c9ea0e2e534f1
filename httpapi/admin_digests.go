package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/control"
)

// The operator API of email digests (docs/digests.md): a project's schedule and its
// members' opt-ins, changed through the control plane like every other setting.

// adminDigestRoutes are the digest routes of /admin/v1; adminRoutes registers them.
func (s *Server) adminDigestRoutes() []struct {
	path, method string
	f            http.HandlerFunc
} {
	return []struct {
		path, method string
		f            http.HandlerFunc
	}{
		{"/projects/{project}/digests", http.MethodGet, s.adminGetDigests},
		{"/projects/{project}/digests", http.MethodPut, s.adminSetDigestSchedule},
		{"/projects/{project}/digests/members/{email}", http.MethodPut, s.adminSetDigestOptIn},
	}
}

type digestsJSON struct {
	Schedule     string   `json:"schedule"`
	LastPeriod   *string  `json:"lastPeriod"`
	LastDigestAt *string  `json:"lastDigestAt"`
	Recipients   []string `json:"recipients"`
}

func digestsOut(d control.DigestSettings) digestsJSON {
	out := digestsJSON{Schedule: d.Schedule, LastDigestAt: timeOrNil(d.LastAt), Recipients: d.Recipients}
	if d.LastPeriod != "" {
		out.LastPeriod = &d.LastPeriod
	}
	if out.Recipients == nil {
		out.Recipients = []string{}
	}
	return out
}

// adminGetDigests is GET /projects/{project}/digests.
func (s *Server) adminGetDigests(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Control.DigestSettings(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, digestsOut(d))
}

// adminSetDigestSchedule is PUT /projects/{project}/digests {"schedule": "weekly"}.
func (s *Server) adminSetDigestSchedule(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Schedule string `json:"schedule"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		d, err := s.cfg.Control.SetDigestSchedule(r.Context(), a, mux.Vars(r)["project"], req.Schedule)
		return http.StatusOK, digestsOut(d), err
	})
}

// adminSetDigestOptIn is PUT /projects/{project}/digests/members/{email}
// {"optIn": true|false}.
func (s *Server) adminSetDigestOptIn(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OptIn *bool `json:"optIn"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if req.OptIn == nil {
		writeError(w, http.StatusBadRequest, "optIn (true or false) is required")
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		d, err := s.cfg.Control.SetDigestOptIn(r.Context(), a, mux.Vars(r)["project"], mux.Vars(r)["email"], *req.OptIn)
		return http.StatusOK, digestsOut(d), err
	})
}
