package httpapi

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	sumdb "golang.org/x/mod/sumdb/tlog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

func hexes(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = tlog.Hex(h)
	}
	return out
}

func (s *Server) publicKeyHex() string {
	return hex.EncodeToString(s.cfg.Key.Public().(ed25519.PublicKey))
}

// logOf reads the stream parameter and returns the key's project-stream, or answers 400.
func (s *Server) logOf(w http.ResponseWriter, r *http.Request, p *params) (catalog.LogID, bool) {
	log := catalog.LogID{ProjectID: apiKeyFrom(r).ProjectID, Stream: p.stream()}
	if p.err != nil {
		writeError(w, http.StatusBadRequest, p.err.Error())
		return log, false
	}
	return log, true
}

// verify is GET /api/v1/verify: a full rebuild of one stream and a signed receipt.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	log, ok := s.logOf(w, r, newParams(r))
	if !ok {
		return
	}
	keys, err := s.cfg.Catalog.ListSigningKeys(r.Context(), log.ProjectID)
	if err != nil {
		s.internal(w, r, "signing keys", err)
		return
	}
	// Every registered key, revoked ones included: a signature made while a key was
	// active stays valid after the key is revoked.
	byID := map[string][]ed25519.PublicKey{}
	for _, k := range keys {
		if pub, err := tlog.ParsePublicKey(k.PublicKey); err == nil {
			byID[k.ID] = append(byID[k.ID], pub)
		}
	}
	res, err := s.cfg.Sequencer.Rebuild(r.Context(), log, func(id string) []ed25519.PublicKey { return byID[id] })
	if err != nil {
		s.internal(w, r, "rebuild", err)
		return
	}
	rec := tlog.Receipt{ReceiptVersion: tlog.ReceiptVersion, Stream: apiStreamName(log.Stream), ProjectID: log.ProjectID,
		Valid: res.Break == nil, CheckedCount: res.Checked, TreeSize: res.Size, RootHash: tlog.Hex(res.Root),
		FirstBreak: res.Break, VerifiedAt: tlog.FormatTime(time.Now())}
	if err := tlog.SignReceipt(s.cfg.Key, &rec); err != nil {
		s.internal(w, r, "sign receipt", err)
		return
	}
	// The body is exactly the signed receipt: its signature covers every member but
	// "signature" (docs/formats.md), so the count of shredded events, which receipt
	// format 2 does not sign, rides in a header (docs/retention.md).
	w.Header().Set("Sealtrail-Shredded-Count", strconv.FormatUint(res.Shredded, 10))
	writeJSON(w, http.StatusOK, rec)
}

// sth signs the live tree head of log.
func (s *Server) sth(r *http.Request, log catalog.LogID) (tlog.STH, tiles.Tree, error) {
	t, err := s.cfg.Sequencer.Tree(r.Context(), log)
	if err != nil {
		return tlog.STH{}, t, err
	}
	h := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: log.ProjectID, Stream: apiStreamName(log.Stream),
		TreeSize: t.Size, RootHash: tlog.Hex(t.Root), Timestamp: tlog.FormatTime(time.Now())}
	return h, t, tlog.SignSTH(s.cfg.Key, &h)
}

// root is GET /api/v1/root.
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	log, ok := s.logOf(w, r, newParams(r))
	if !ok {
		return
	}
	h, _, err := s.sth(r, log)
	if err != nil {
		s.internal(w, r, "tree head", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sth": h, "servicePublicKey": s.publicKeyHex()})
}

// inclusion is GET /api/v1/proof/inclusion.
func (s *Server) inclusion(w http.ResponseWriter, r *http.Request) {
	p := newParams(r)
	eventID := p.str("eventId", tlog.MaxEventIDLen+64)
	var leafIndex uint64
	haveIndex := false
	if eventID == "" { // leafIndex is ignored when eventId is given (spec)
		leafIndex, haveIndex = p.uint("leafIndex")
	}
	treeSize, haveSize := p.uint("treeSize")
	log, ok := s.logOf(w, r, p)
	if !ok {
		return
	}
	if eventID == "" && !haveIndex {
		writeError(w, http.StatusBadRequest, "eventId or leafIndex is required")
		return
	}
	if eventID != "" {
		seq, err := s.cfg.Sequencer.EventSequence(r.Context(), log, eventID)
		if errors.Is(err, catalog.ErrNotFound) {
			writeError(w, http.StatusNotFound, "Event not found")
			return
		}
		if err == nil && seq == 0 {
			err = fmt.Errorf("event %q has sequence 0", eventID)
		}
		if err != nil {
			s.internal(w, r, "event by id", err)
			return
		}
		leafIndex = seq - 1
	}
	// A proof that names its tree size needs a committed tree at least that large, not
	// the live one: the sequencer answers it from memory (sequencer/heads.go).
	need := leafIndex + 1
	if need == 0 { // leafIndex is the largest uint64: out of range below
		need = leafIndex
	}
	var rd *tiles.Reader
	var live tiles.Tree
	var err error
	if haveSize {
		rd, live, err = s.cfg.Sequencer.ProofsOver(r.Context(), log, max(need, treeSize))
	} else if rd, live, err = s.cfg.Sequencer.Proofs(r.Context(), log); err == nil && live.Size < need {
		// The leaf may have been committed since the head this replica knows.
		rd, live, err = s.cfg.Sequencer.ProofsOver(r.Context(), log, need)
	}
	if err != nil {
		s.internal(w, r, "tree", err)
		return
	}
	if !haveSize {
		treeSize = live.Size
	}
	if treeSize < 1 || treeSize > live.Size {
		writeError(w, http.StatusBadRequest, "treeSize must lie in [1, "+itoa(live.Size)+"]")
		return
	}
	if leafIndex >= treeSize {
		writeError(w, http.StatusBadRequest, "leafIndex must be less than treeSize ("+itoa(treeSize)+")")
		return
	}
	leaf, proof, err := rd.InclusionProofLeaf(r.Context(), leafIndex, treeSize)
	if err != nil {
		s.internal(w, r, "inclusion proof", err)
		return
	}
	writeInclusion(w, apiStreamName(log.Stream), leafIndex, treeSize, leaf, proof)
}

// consistency is GET /api/v1/proof/consistency.
func (s *Server) consistency(w http.ResponseWriter, r *http.Request) {
	p := newParams(r)
	oldSize, haveOld := p.uint("oldSize")
	newSize, haveNew := p.uint("newSize")
	log, ok := s.logOf(w, r, p)
	if !ok {
		return
	}
	if !haveOld {
		writeError(w, http.StatusBadRequest, "oldSize is required")
		return
	}
	var rd *tiles.Reader
	var live tiles.Tree
	var err error
	if haveNew { // any committed tree at least that large will do (see inclusion)
		rd, live, err = s.cfg.Sequencer.ProofsOver(r.Context(), log, newSize)
	} else {
		rd, live, err = s.cfg.Sequencer.Proofs(r.Context(), log)
	}
	if err != nil {
		s.internal(w, r, "tree", err)
		return
	}
	if !haveNew {
		newSize = live.Size
	}
	if oldSize > newSize || newSize > live.Size {
		writeError(w, http.StatusBadRequest, "need oldSize <= newSize <= "+itoa(live.Size))
		return
	}
	proof := []tlog.Hash{}
	if oldSize > 0 && oldSize < newSize {
		if proof, err = rd.ConsistencyProof(r.Context(), oldSize, newSize); err != nil {
			s.internal(w, r, "consistency proof", err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"stream": apiStreamName(log.Stream), "oldSize": oldSize,
		"newSize": newSize, "proof": hexes(proof)})
}

// anchors is GET /api/v1/anchors: the stream's signed heads in the tree_heads log,
// newest first, with their anchors once published.
func (s *Server) anchors(w http.ResponseWriter, r *http.Request) {
	p := newParams(r)
	limit := p.limit(20, 100)
	log, ok := s.logOf(w, r, p)
	if !ok {
		return
	}
	heads, err := s.cfg.Catalog.ListTreeHeads(r.Context(), log, limit)
	if err != nil {
		s.internal(w, r, "tree heads", err)
		return
	}
	out := make([]map[string]any, 0, len(heads))
	for _, h := range heads {
		a := map[string]any{"treeSize": h.TreeSize, "rootHash": tlog.Hex(h.RootHash), "timestamp": tlog.FormatTime(h.Timestamp),
			"signature": hex.EncodeToString(h.Signature), "anchorType": nil, "anchorRef": nil, "anchorProof": nil, "anchoredAt": nil}
		if h.Anchor != nil {
			a["anchorType"], a["anchorRef"], a["anchoredAt"] = h.Anchor.Type, h.Anchor.Ref, tlog.FormatTime(h.Anchor.AnchoredAt)
			a["anchorProof"] = jsonOrNull(h.Anchor.Proof)
		}
		out = append(out, a)
	}
	writeJSON(w, http.StatusOK, map[string]any{"stream": apiStreamName(log.Stream), "heads": out})
}

type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

func jsonOrNull(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	if _, err := tlog.Canonicalize(b); err != nil {
		return nil
	}
	return rawJSON(b)
}

// holdProof is GET /api/v1/legal-holds/{holdId}/proof?eventId=.
func (s *Server) holdProof(w http.ResponseWriter, r *http.Request) {
	eventID := r.URL.Query().Get("eventId")
	if eventID == "" {
		writeError(w, http.StatusBadRequest, "eventId is required")
		return
	}
	hp, err := s.cfg.Control.ProveHoldMembership(r.Context(), apiKeyFrom(r).ProjectID, mux.Vars(r)["holdId"], eventID)
	if errors.Is(err, control.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Legal hold not found, or the event is not part of it")
		return
	}
	if err != nil {
		s.internal(w, r, "hold proof", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"holdId": hp.HoldID, "eventId": hp.EventID,
		"eventLeafHash": tlog.Hex(hp.LeafHash), "leafIndex": hp.Index, "treeSize": hp.Size,
		"proof": hexes(hp.Proof), "membershipRoot": tlog.Hex(hp.MembershipRoot)})
}

// tlogObject serves the tlog-tiles read path of the key's project: the checkpoint,
// hash tiles and entry bundles, from the store, or computed from committed state while
// not yet materialized. Payload bundles are never served.
func (s *Server) tlogObject(w http.ResponseWriter, r *http.Request) {
	s.serveTlogObject(w, r, apiKeyFrom(r).ProjectID)
}

// serveTlogObject serves the tlog-tiles object named by the route's stream and path of
// projectID's log.
func (s *Server) serveTlogObject(w http.ResponseWriter, r *http.Request, projectID string) {
	v := mux.Vars(r)
	stream, err := streamParam(v["stream"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	prefix, err := tiles.StreamPrefix(projectID, string(stream))
	if err != nil {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	path, cache := tiles.CheckpointPath, "no-cache"
	var tile sumdb.Tile
	if p := v["path"]; p != "" {
		if tile, err = tiles.ParseTilePath(p); err != nil || strings.Contains(p, "..") {
			writeError(w, http.StatusNotFound, "Not a tile path")
			return
		}
		path, cache = p, "public, max-age=31536000, immutable"
	}
	// Events are acknowledged at their commit and materialized shortly after. A reader
	// of the checkpoint gets the latest committed tree materialized first; a tile not
	// written yet (or of a partial width a publication skipped) is computed from
	// committed state, with the bytes its object holds once written.
	log := catalog.LogID{ProjectID: projectID, Stream: stream}
	if path == tiles.CheckpointPath {
		if _, err := s.cfg.Sequencer.Materialize(r.Context(), log); err != nil {
			s.internal(w, r, "materialize", err)
			return
		}
	}
	data, err := s.cfg.Store.Get(r.Context(), prefix.Key(path))
	if errors.Is(err, tiles.ErrNotFound) && path != tiles.CheckpointPath {
		data, err = s.cfg.Sequencer.TileData(r.Context(), log, tile)
	}
	if errors.Is(err, tiles.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	if err != nil {
		s.internal(w, r, "read tile", err)
		return
	}
	if path == tiles.CheckpointPath {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Cache-Control", cache)
	_, _ = w.Write(data)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
