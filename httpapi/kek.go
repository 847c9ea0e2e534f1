package httpapi

import (
	"context"
	"net/http"

	"github.com/sealtrail/sealtrail/keyring"
)

// KEKRotator is the key-encryption-key rotation the operator API drives; a
// *keyring.Rotator is one.
type KEKRotator interface {
	// Start begins rewrapping every data key under the current KEK unless a run is
	// going on, and reports whether it started one.
	Start() bool
	// Status reports this replica's run and the catalog's keys per KEK.
	Status(ctx context.Context) (keyring.RotationStatus, error)
}

var _ KEKRotator = (*keyring.Rotator)(nil)

// kekStatusJSON is the answer of GET /kek and POST /kek/rewrap: keyring.RotationStatus
// with the API's timestamps (tlog.FormatTime; null before the first run).
type kekStatusJSON struct {
	CurrentKEK   string              `json:"currentKek"`
	PreviousKEKs []string            `json:"previousKeks"`
	Keys         map[string]int64    `json:"keys"`
	Remaining    int64               `json:"remaining"`
	Running      bool                `json:"running"`
	StartedAt    *string             `json:"startedAt"`
	FinishedAt   *string             `json:"finishedAt"`
	Last         keyring.RewrapStats `json:"last"`
	Error        *string             `json:"error"`
	// Started is set by POST /kek/rewrap: whether this call started the run (false:
	// one was already running on this replica).
	Started *bool `json:"started,omitempty"`
}

// adminKEKStatus is GET /kek: the current and previous KEKs, the live data keys per
// KEK, and this replica's rewrap run.
func (s *Server) adminKEKStatus(w http.ResponseWriter, r *http.Request) {
	s.kekStatus(w, r, http.StatusOK, nil)
}

// adminKEKRewrap is POST /kek/rewrap: start rewrapping every live data key under the
// current KEK, in the background (202). Idempotent: while a run is going on it starts
// none, and a run resumes where a crashed or failed one stopped.
func (s *Server) adminKEKRewrap(w http.ResponseWriter, r *http.Request) {
	if s.cfg.KEK == nil {
		writeError(w, http.StatusNotFound, "KEK rotation is not available on this server")
		return
	}
	actor, err := actorOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	started := s.cfg.KEK.Start()
	s.cfg.Logger.InfoContext(r.Context(), "KEK rewrap requested", "actor", actor.ID, "started", started)
	s.kekStatus(w, r, http.StatusAccepted, &started)
}

func (s *Server) kekStatus(w http.ResponseWriter, r *http.Request, code int, started *bool) {
	if s.cfg.KEK == nil {
		writeError(w, http.StatusNotFound, "KEK rotation is not available on this server")
		return
	}
	st, err := s.cfg.KEK.Status(r.Context())
	if err != nil {
		s.internal(w, r, "KEK status", err)
		return
	}
	out := kekStatusJSON{CurrentKEK: st.CurrentKEK, PreviousKEKs: st.PreviousKEKs, Keys: st.Keys, Remaining: st.Remaining,
		Running: st.Running, StartedAt: timeOrNil(st.StartedAt), FinishedAt: timeOrNil(st.FinishedAt), Last: st.Last, Started: started}
	if st.Error != "" {
		out.Error = &st.Error
	}
	writeJSON(w, code, out)
}
