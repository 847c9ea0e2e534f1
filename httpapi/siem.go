package httpapi

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/siem"
)

// SIEM is the operator side of SIEM streaming (*siem.Admin); its errors are the
// control plane's.
type SIEM interface {
	Create(ctx context.Context, actor control.Actor, projectID string, spec siem.Spec) (siem.Status, string, error)
	Get(ctx context.Context, projectID, id string) (siem.Status, error)
	List(ctx context.Context, projectID string) ([]siem.Status, error)
	Delete(ctx context.Context, actor control.Actor, projectID, id string) error
	SetState(ctx context.Context, actor control.Actor, projectID, id string, state catalog.DestState) (siem.Status, error)
}

// siemRoutes are /admin/v1/projects/{project}/siem-destinations (docs/siem.md). Each
// change is recorded in the project's project_audit stream.
func (s *Server) siemRoutes(r *mux.Router) {
	const base = "/projects/{project}/siem-destinations"
	s.handleOperator(r, []struct {
		path, method string
		f            http.HandlerFunc
	}{
		{base, http.MethodPost, s.siemCreate},
		{base, http.MethodGet, s.siemList},
		{base + "/{destination}", http.MethodGet, s.siemGet},
		{base + "/{destination}", http.MethodDelete, s.siemDelete},
		{base + "/{destination}/pause", http.MethodPost, s.siemState(catalog.DestPaused)},
		{base + "/{destination}/resume", http.MethodPost, s.siemState(catalog.DestActive)},
	})
}

// siemReady answers 404 when the server runs without SIEM streaming.
func (s *Server) siemReady(w http.ResponseWriter) bool {
	if s.cfg.SIEM == nil {
		writeError(w, http.StatusNotFound, "SIEM streaming is not enabled on this server")
		return false
	}
	return true
}

func (s *Server) siemCreate(w http.ResponseWriter, r *http.Request) {
	if !s.siemReady(w) {
		return
	}
	var spec siem.Spec
	if !s.decode(w, r, &spec) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		st, secret, err := s.cfg.SIEM.Create(r.Context(), a, mux.Vars(r)["project"], spec)
		out := map[string]any{"destination": st}
		if secret != "" {
			out["secret"] = secret // shown once
		}
		return http.StatusCreated, out, err
	})
}

func (s *Server) siemList(w http.ResponseWriter, r *http.Request) {
	if !s.siemReady(w) {
		return
	}
	s.adminCall(w, r, func(control.Actor) (int, any, error) {
		l, err := s.cfg.SIEM.List(r.Context(), mux.Vars(r)["project"])
		return http.StatusOK, map[string]any{"destinations": l}, err
	})
}

func (s *Server) siemGet(w http.ResponseWriter, r *http.Request) {
	if !s.siemReady(w) {
		return
	}
	s.adminCall(w, r, func(control.Actor) (int, any, error) {
		v := mux.Vars(r)
		st, err := s.cfg.SIEM.Get(r.Context(), v["project"], v["destination"])
		return http.StatusOK, st, err
	})
}

func (s *Server) siemDelete(w http.ResponseWriter, r *http.Request) {
	if !s.siemReady(w) {
		return
	}
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		v := mux.Vars(r)
		err := s.cfg.SIEM.Delete(r.Context(), a, v["project"], v["destination"])
		return http.StatusOK, map[string]bool{"deleted": true}, err
	})
}

func (s *Server) siemState(state catalog.DestState) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.siemReady(w) {
			return
		}
		s.adminCall(w, r, func(a control.Actor) (int, any, error) {
			v := mux.Vars(r)
			st, err := s.cfg.SIEM.SetState(r.Context(), a, v["project"], v["destination"], state)
			return http.StatusOK, st, err
		})
	}
}
