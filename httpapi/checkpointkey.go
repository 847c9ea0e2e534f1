package httpapi

import (
	"crypto/ed25519"
	"net/http"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// checkpointKey is GET /api/v1/checkpoint-key (public, no API key) and
// /admin/v1/checkpoint-key: the signed-note verifier keys by which mirrors and
// witnesses check checkpoints. Always the tree_heads log's (the one log a witness
// needs, whatever the number of tenants); with projectId (and stream, default
// events) also that project-stream's. The key names no secret and the answer does not
// depend on whether the project exists.
func (s *Server) checkpointKey(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Origin == "" {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	pub := s.cfg.Key.Public().(ed25519.PublicKey)
	out := map[string]any{"servicePublicKey": s.publicKeyHex()}
	th := tlog.TreeHeadsOrigin(s.cfg.Origin)
	vk, err := tlog.CheckpointVerifierKey(pub, th)
	if err != nil {
		s.internal(w, r, "verifier key", err)
		return
	}
	out["treeHeads"] = map[string]string{"origin": th, "verifierKey": vk}
	p := newParams(r)
	if pid := p.str("projectId", 128); pid != "" {
		stream := p.stream()
		if p.err != nil {
			writeError(w, http.StatusBadRequest, p.err.Error())
			return
		}
		if _, err := tiles.StreamPrefix(pid, string(stream)); err != nil {
			writeError(w, http.StatusBadRequest, "projectId is not a valid project id")
			return
		}
		origin := tlog.CheckpointOrigin(s.cfg.Origin, pid, string(stream))
		vk, err := tlog.CheckpointVerifierKey(pub, origin)
		if err != nil {
			writeError(w, http.StatusBadRequest, "projectId is not a valid project id")
			return
		}
		out["stream"] = map[string]string{"projectId": pid, "stream": apiStreamName(stream), "origin": origin, "verifierKey": vk}
	} else if p.err != nil {
		writeError(w, http.StatusBadRequest, p.err.Error())
		return
	}
	writeJSON(w, http.StatusOK, out)
}
