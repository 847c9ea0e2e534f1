package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/control"
)

// publicTlogObject is GET /public/v1/{projectId}/{stream}/checkpoint and .../tile/...:
// the tlog-tiles path of a project whose public read mode is on, without an API key,
// for mirrors. Payload objects are never served (only checkpoint and tile paths
// route here). A project whose mode is off, or that does not exist, is 404 alike.
func (s *Server) publicTlogObject(w http.ResponseWriter, r *http.Request) {
	pid := mux.Vars(r)["projectId"]
	on, err := s.cfg.Control.PublicRead(r.Context(), pid)
	if err != nil {
		s.internal(w, r, "public read", err)
		return
	}
	if !on {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	s.serveTlogObject(w, r, pid)
}

// adminSetPublicRead is PUT /admin/v1/projects/{project}/public-read {"publicRead": b}.
func (s *Server) adminSetPublicRead(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PublicRead *bool `json:"publicRead"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if req.PublicRead == nil {
		writeError(w, http.StatusBadRequest, "publicRead (true or false) is required")
		return
	}
	pid := mux.Vars(r)["project"]
	s.adminCall(w, r, func(a control.Actor) (int, any, error) {
		err := s.cfg.Control.SetPublicRead(r.Context(), a, pid, *req.PublicRead)
		return http.StatusOK, map[string]any{"projectId": pid, "publicRead": *req.PublicRead}, err
	})
}
