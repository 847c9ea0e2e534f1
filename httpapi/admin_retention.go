package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/tlog"
)

// Operator routes of retention (back to "keep forever", the per-project minimum) and
// billing suspension; see docs/retention.md.

// SuspendedRetryAfter is the Retry-After of an ingest refused because the project is
// suspended: an hour, since lifting a suspension is an operator's act, not load passing.
const SuspendedRetryAfter = time.Hour

func (s *Server) retentionAdminRoutes() []struct {
	path, method string
	f            http.HandlerFunc
} {
	return []struct {
		path, method string
		f            http.HandlerFunc
	}{
		{"/projects/{project}/retention/{stream}", http.MethodDelete, s.adminClearRetention},
		{"/projects/{project}/retention-minimum", http.MethodPut, s.adminSetMinRetention},
		{"/projects/{project}/retention-minimum", http.MethodGet, s.adminGetMinRetention},
		{"/projects/{project}/suspension", http.MethodPut, s.adminSuspend},
		{"/projects/{project}/suspension", http.MethodDelete, s.adminUnsuspend},
	}
}

// adminClearRetention is DELETE /projects/{project}/retention/{stream}: the stream
// keeps its payloads forever again.
func (s *Server) adminClearRetention(w http.ResponseWriter, r *http.Request) {
	stream, err := streamParam(mux.Vars(r)["stream"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		err := s.cfg.Control.ClearRetention(r.Context(), a, mux.Vars(r)["project"], stream)
		return http.StatusOK, map[string]any{"stream": mux.Vars(r)["stream"], "days": nil}, err
	})
}

// adminSetMinRetention is PUT /projects/{project}/retention-minimum {"days": n}; 0
// removes the minimum.
func (s *Server) adminSetMinRetention(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Days *int `json:"days"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if req.Days == nil {
		writeError(w, http.StatusBadRequest, "days is required")
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		err := s.cfg.Control.SetMinRetention(r.Context(), a, mux.Vars(r)["project"], *req.Days)
		return http.StatusOK, map[string]any{"minimumDays": *req.Days}, err
	})
}

func (s *Server) adminGetMinRetention(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Control.MinRetention(r.Context(), mux.Vars(r)["project"])
	if err != nil {
		s.controlError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"minimumDays": d})
}

// adminSuspend is PUT /projects/{project}/suspension {"reason": "..."}.
func (s *Server) adminSuspend(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Reason string `json:"reason"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		sp, err := s.cfg.Control.Suspend(r.Context(), a, mux.Vars(r)["project"], req.Reason)
		return http.StatusOK, map[string]any{"projectId": sp.ProjectID, "reason": sp.Reason,
			"since": tlog.FormatTime(sp.Since)}, err
	})
}

// adminUnsuspend is DELETE /projects/{project}/suspension.
func (s *Server) adminUnsuspend(w http.ResponseWriter, r *http.Request) {
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		err := s.cfg.Control.Unsuspend(r.Context(), a, mux.Vars(r)["project"])
		return http.StatusOK, map[string]any{"projectId": mux.Vars(r)["project"], "suspended": false}, err
	})
}

// suspended answers 429 with the suspension's reason and reports true while the
// request's project is suspended.
func (s *Server) suspended(w http.ResponseWriter, r *http.Request) bool {
	reason, err := s.cfg.Control.SuspensionReason(r.Context(), apiKeyFrom(r).ProjectID)
	switch {
	case err != nil:
		s.internal(w, r, "suspension", err)
		return true
	case reason == "":
		return false
	}
	w.Header().Set("Retry-After", itoa(uint64(retrySeconds(SuspendedRetryAfter))))
	s.metrics.errors.WithLabelValues("suspended").Inc()
	writeJSON(w, http.StatusTooManyRequests, errorBody{Error: "Ingest is suspended for this project", Reason: reason})
	return true
}
