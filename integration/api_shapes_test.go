package integration

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

var (
	hex64     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex128    = regexp.MustCompile(`^[0-9a-f]{128}$`)
	timestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// storedEvent is a stored event as /events returns it.
type storedEvent struct {
	ID              string          `json:"id"`
	Sequence        uint64          `json:"sequence"`
	Timestamp       string          `json:"timestamp"`
	ProjectID       string          `json:"projectId"`
	Stream          string          `json:"stream"`
	LeafHash        string          `json:"leafHash"`
	PayloadHash     string          `json:"payloadHash"`
	PayloadNonce    *string         `json:"payloadNonce"`
	CiphertextHash  *string         `json:"ciphertextHash"`
	SigningKeyID    *string         `json:"signingKeyId"`
	ClientSignature *string         `json:"clientSignature"`
	Action          string          `json:"action"`
	Status          string          `json:"status"`
	Actor           map[string]any  `json:"actor"`
	Target          map[string]any  `json:"target"`
	Context         json.RawMessage `json:"context"`
}

// page is an /events response.
type page struct {
	Events     []storedEvent `json:"events"`
	NextCursor *string       `json:"nextCursor"`
}

func (s *server) events(token, query string) page {
	s.t.Helper()
	r := s.mustGet(token, "/events"+query)
	var p page
	if err := json.Unmarshal([]byte(r.raw), &p); err != nil || p.Events == nil {
		s.t.Fatalf("/events%s: %v: %s", query, err, r.raw)
	}
	return p
}

// checkStored requires the audit-identity fields of a stored event to be well formed.
func checkStored(t *testing.T, e storedEvent, pid string, signed bool) {
	t.Helper()
	ok := tlog.ValidEventID(e.ID) && e.Sequence >= 1 && timestamp.MatchString(e.Timestamp) && e.ProjectID == pid &&
		e.Stream == "events" && hex64.MatchString(e.LeafHash) && hex64.MatchString(e.PayloadHash) &&
		e.PayloadNonce != nil && hex64.MatchString(*e.PayloadNonce) && e.CiphertextHash != nil && hex64.MatchString(*e.CiphertextHash) &&
		e.Action != "" && e.Actor["id"] != nil
	if signed {
		ok = ok && e.SigningKeyID != nil && e.ClientSignature != nil && hex128.MatchString(*e.ClientSignature)
	} else {
		ok = ok && e.SigningKeyID == nil && e.ClientSignature == nil && strings.HasPrefix(e.ID, "evt_")
	}
	if !ok {
		t.Fatalf("stored event is not well formed (signed %v): %+v", signed, e)
	}
}

// TestAPISuccessShapes checks the 2xx answer of every endpoint against the spec's
// field names and types, and checks every signature and proof with tlog.
func TestAPISuccessShapes(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		p := s.newProject("shapes")
		w := p.key[catalog.ScopeWrite]

		// POST /log: exactly {id, status: sealed}.
		r := s.api(http.MethodPost, "/log", w, map[string]any{"action": "doc.read", "actor": map[string]any{"type": "user", "id": "alice"},
			"target": map[string]any{"type": "user", "id": "bob"}, "context": map[string]any{"n": 1}, "risk": "low"})
		if r.status != http.StatusAccepted || len(r.body) != 2 || r.str("status") != "sealed" || !tlog.ValidEventID(r.str("id")) {
			t.Fatalf("POST /log: %d %s, want 202 {id, status: sealed}", r.status, r.raw)
		}
		ids := []string{r.str("id")}
		pinned := s.sth(p.all, "events") // size 1
		ids = append(ids, s.mustPost(w, map[string]any{"action": "doc.share", "status": "pending",
			"actor": map[string]any{"type": "user", "id": "bob"}, "target": map[string]any{"type": "user", "id": "carol"}}))
		for i := range 3 {
			ids = append(ids, s.mustLog(w, fmt.Sprint("bulk.", i)))
		}
		live := s.sth(p.all, "events")
		if live.V != tlog.TreeHeadVersion || live.ProjectID != p.id || live.Stream != "events" || live.TreeSize != 5 ||
			!hex64.MatchString(live.RootHash) || !timestamp.MatchString(live.Timestamp) {
			t.Fatalf("STH %+v", live)
		}

		// GET /events: newest first, nextCursor only on a full page.
		all := s.events(p.key[catalog.ScopeRead], "")
		if len(all.Events) != 5 || all.NextCursor != nil {
			t.Fatalf("/events: %d events, cursor %v", len(all.Events), all.NextCursor)
		}
		// Each stored event is exactly an export line (DESIGN.md, "Export line").
		var rawPage struct{ Events []json.RawMessage }
		if err := json.Unmarshal([]byte(s.mustGet(p.all, "/events").raw), &rawPage); err != nil {
			t.Fatal(err)
		}
		for _, raw := range rawPage.Events {
			if _, err := tlog.DecodeExportLine(raw); err != nil {
				t.Fatalf("stored event is not an export line: %v\n%s", err, raw)
			}
		}
		for i, e := range all.Events {
			checkStored(t, e, p.id, false)
			if e.Sequence != uint64(5-i) || e.ID != ids[4-i] {
				t.Fatalf("/events[%d] is #%d %s, want newest first", i, e.Sequence, e.ID)
			}
		}
		if all.Events[4].Status != "success" || all.Events[3].Status != "pending" || string(all.Events[4].Context) != `{"n":1}` {
			t.Fatalf("stored payload: %+v", all.Events[3:])
		}
		var walked []string
		cursor := ""
		for range 4 {
			pg := s.events(p.all, "?limit=2"+cursor)
			for _, e := range pg.Events {
				walked = append(walked, e.ID)
			}
			if pg.NextCursor == nil {
				if len(pg.Events) == 2 {
					t.Fatal("a full page before the end has no nextCursor")
				}
				break
			}
			if len(pg.Events) != 2 {
				t.Fatalf("a short page carries nextCursor %q", *pg.NextCursor)
			}
			cursor = "&cursor=" + *pg.NextCursor
		}
		if want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(walked, want) {
			t.Fatalf("paging walked %q, want %q", walked, want)
		}
		filters := map[string][]string{
			"?action=doc.share":                                {ids[1]},
			"?actorId=bob":                                     {ids[1]},
			"?targetId=bob":                                    {ids[0]},
			"?status=pending":                                  {ids[1]},
			"?from=" + all.Events[0].Timestamp:                 nil, // checked below: from is inclusive
			"?to=" + all.Events[4].Timestamp:                   {},  // to is exclusive
			"?entityType=user&entityId=bob":                    {ids[1], ids[0]},
			"?entityType=user&entityId=bob&direction=outgoing": {ids[1]},
			"?entityType=user&entityId=bob&direction=incoming": {ids[0]},
			"?entityType=user&entityId=bob&limit=1":            {ids[1]},
		}
		for q, want := range filters {
			pg := s.events(p.all, q)
			var got []string
			for _, e := range pg.Events {
				got = append(got, e.ID)
			}
			if want == nil {
				if !slices.Contains(got, ids[4]) {
					t.Fatalf("/events%s: %q lacks the event at from", q, got)
				}
				continue
			}
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("/events%s: %q, want %q", q, got, want)
			}
			if strings.Contains(q, "entityId") && pg.NextCursor != nil {
				t.Fatalf("/events%s: entity mode has a cursor", q)
			}
		}

		// GET /verify on both streams.
		for _, st := range []string{"events", "project-audit"} {
			rec := s.receipt(p.key[catalog.ScopeVerify], st)
			sth := s.sth(p.all, st)
			if rec.ReceiptVersion != tlog.ReceiptVersion || !rec.Valid || rec.FirstBreak != nil || rec.ProjectID != p.id ||
				rec.Stream != strings.ReplaceAll(st, "-", "_") || rec.TreeSize != sth.TreeSize || rec.CheckedCount != sth.TreeSize ||
				rec.RootHash != sth.RootHash || !timestamp.MatchString(rec.VerifiedAt) || rec.TreeSize == 0 {
				t.Fatalf("/verify?stream=%s: %+v (STH %+v)", st, rec, sth)
			}
		}
		raw := s.mustGet(p.all, "/verify")
		if fb, ok := raw.body["firstBreak"]; !ok || fb != nil {
			t.Fatalf("/verify: firstBreak must be present and null: %s", raw.raw)
		}

		// Inclusion proofs, by id and by index, against the live and a pinned size.
		for _, q := range []struct {
			query string
			index uint64
			head  tlog.STH
		}{
			{"?eventId=" + ids[2], 2, live},
			{"?leafIndex=4", 4, live},
			{"?leafIndex=0&treeSize=1", 0, pinned},
			{"?eventId=" + ids[0] + "&treeSize=1", 0, pinned},
			{"?leafIndex=3&treeSize=5&eventId=" + ids[1], 1, live}, // leafIndex is ignored with eventId
			{"?leafIndex=junk&eventId=" + ids[1], 1, live},
		} {
			r := s.mustGet(p.all, "/proof/inclusion"+q.query)
			var ip struct {
				Stream    string   `json:"stream"`
				LeafIndex uint64   `json:"leafIndex"`
				TreeSize  uint64   `json:"treeSize"`
				LeafHash  string   `json:"leafHash"`
				Proof     []string `json:"proof"`
			}
			if err := json.Unmarshal([]byte(r.raw), &ip); err != nil || len(r.body) != 5 {
				t.Fatalf("inclusion%s: %v %s", q.query, err, r.raw)
			}
			if ip.Stream != "events" || ip.LeafIndex != q.index || ip.TreeSize != q.head.TreeSize ||
				ip.LeafHash != all.Events[4-q.index].LeafHash {
				t.Fatalf("inclusion%s: %s", q.query, r.raw)
			}
			if err := tlog.VerifyInclusion(mustHash(t, ip.LeafHash), ip.LeafIndex, ip.TreeSize, mustHashes(t, ip.Proof),
				mustHash(t, q.head.RootHash)); err != nil {
				t.Fatalf("inclusion%s does not verify: %v", q.query, err)
			}
		}

		// Consistency proofs; empty ones for oldSize 0 and oldSize == newSize.
		for _, q := range []struct {
			query    string
			old, new tlog.STH
			empty    bool
		}{
			{"?oldSize=1", pinned, live, false},
			{"?oldSize=1&newSize=5", pinned, live, false},
			{"?oldSize=0", tlog.STH{RootHash: tlog.Hex(tlog.EmptyRoot)}, live, true},
			{"?oldSize=5&newSize=5", live, live, true},
			{"?oldSize=1&newSize=1", pinned, pinned, true},
		} {
			r := s.mustGet(p.all, "/proof/consistency"+q.query)
			var cp struct {
				Stream  string   `json:"stream"`
				OldSize uint64   `json:"oldSize"`
				NewSize uint64   `json:"newSize"`
				Proof   []string `json:"proof"`
			}
			if err := json.Unmarshal([]byte(r.raw), &cp); err != nil || len(r.body) != 4 || cp.Proof == nil {
				t.Fatalf("consistency%s: %v %s", q.query, err, r.raw)
			}
			if cp.Stream != "events" || cp.OldSize != q.old.TreeSize || cp.NewSize != q.new.TreeSize || (len(cp.Proof) == 0) != q.empty {
				t.Fatalf("consistency%s: %s", q.query, r.raw)
			}
			if err := tlog.VerifyConsistency(cp.OldSize, cp.NewSize, mustHash(t, q.old.RootHash), mustHash(t, q.new.RootHash),
				mustHashes(t, cp.Proof)); err != nil {
				t.Fatalf("consistency%s does not verify: %v", q.query, err)
			}
		}

		// Anchors: none until anchoring runs; an empty list, never null.
		for _, st := range []string{"events", "project-audit"} {
			r := s.mustGet(p.all, "/anchors?stream="+st)
			heads, ok := r.body["heads"].([]any)
			if !ok || r.str("stream") != strings.ReplaceAll(st, "-", "_") {
				t.Fatalf("/anchors?stream=%s: %s", st, r.raw)
			}
			for _, h := range heads {
				checkAnchor(t, h)
			}
		}

		// Legal-hold proof: membership of an event in the hold's committed root.
		hold := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+p.id+"/holds", "ops",
			map[string]any{"eventIds": []string{ids[3], ids[1], ids[4]}, "reason": "litigation"})
		holdID, root := hold.str("holdId"), hold.str("membershipRoot")
		for _, id := range []string{ids[1], ids[3], ids[4]} {
			r := s.mustGet(p.key[catalog.ScopeRead], "/legal-holds/"+holdID+"/proof?eventId="+id)
			var hp struct {
				HoldID, EventID, EventLeafHash, MembershipRoot string
				LeafIndex, TreeSize                            uint64
				Proof                                          []string
			}
			if err := json.Unmarshal([]byte(r.raw), &hp); err != nil || len(r.body) != 7 {
				t.Fatalf("hold proof: %v %s", err, r.raw)
			}
			var leaf string
			for _, e := range all.Events {
				if e.ID == id {
					leaf = e.LeafHash
				}
			}
			if hp.HoldID != holdID || hp.EventID != id || hp.EventLeafHash != leaf || hp.MembershipRoot != root || hp.TreeSize != 3 {
				t.Fatalf("hold proof of %s: %s", id, r.raw)
			}
			lh := mustHash(t, leaf)
			if err := tlog.VerifyInclusion(tlog.LeafHash(lh[:]), hp.LeafIndex, hp.TreeSize, mustHashes(t, hp.Proof), mustHash(t, root)); err != nil {
				t.Fatalf("hold proof of %s does not verify: %v", id, err)
			}
		}

		// Exports: CSV with its header, NDJSON lines that decode and rebuild.
		checkExports(t, s, p, live)

		// The tlog read path: signed checkpoint, hash tiles, entry bundles.
		cp := s.mustGet(p.all, "/tlog/events/checkpoint")
		if cp.header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("checkpoint Cache-Control %q", cp.header.Get("Cache-Control"))
		}
		note, err := tlog.OpenCheckpoint(s.pub, tlog.CheckpointOrigin(origin, p.id, "events"), []byte(cp.raw))
		if err != nil || note.Size != live.TreeSize || tlog.Hex(note.Root) != live.RootHash {
			t.Fatalf("checkpoint note: %v %+v, want %+v", err, note, live)
		}
		tile := s.mustGet(p.all, "/tlog/events/tile/0/000.p/5")
		entries := s.mustGet(p.all, "/tlog/events/tile/entries/000.p/5")
		for _, r := range []response{tile, entries} {
			if r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Fatalf("tile Cache-Control %q", r.header.Get("Cache-Control"))
			}
		}
		hs, err := tiles.ParseHashTile([]byte(tile.raw), 5)
		if err != nil {
			t.Fatal(err)
		}
		es, err := tiles.ParseEntryBundle([]byte(entries.raw), 5)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if tlog.Hex(hs[i]) != all.Events[4-i].LeafHash || tlog.LeafHash(es[i]) != hs[i] {
				t.Fatalf("tile leaf %d differs from the event's leafHash", i)
			}
		}
		s.stop()
	})
}

// checkExports checks the CSV and NDJSON exports of p's events stream (head live).
func checkExports(t *testing.T, s *server, p *apiProject, live tlog.STH) {
	t.Helper()
	dir := t.TempDir()
	res, complete := s.download(p.key[catalog.ScopeExport], "/export", filepath.Join(dir, "e.csv"))
	if !complete || res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment;") ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV export: %d %v", res.StatusCode, res.Header)
	}
	rows := readCSV(t, filepath.Join(dir, "e.csv"))
	wantHeader := []string{"sequence", "id", "timestamp", "action", "status", "actorType", "actorId", "actorDisplay",
		"targetType", "targetId", "targetDisplay", "risk", "requestId", "sessionId", "ipAddress", "userAgent", "agentId",
		"model", "toolName", "toolCallId", "approvalId", "policyVersion", "inputHash", "outputHash", "context", "metadata",
		"payloadHash", "leafHash", "payloadNonce", "ciphertextHash", "signingKeyId", "clientSignature", "projectId", "stream"}
	if !slices.Equal(rows[0], wantHeader) || len(rows) != int(live.TreeSize)+1 {
		t.Fatalf("CSV: header %q and %d rows", rows[0], len(rows)-1)
	}
	if rows[1][0] != "1" || rows[1][3] != "doc.read" || rows[1][6] != "alice" || rows[1][24] != `{"n":1}` {
		t.Fatalf("CSV first row (oldest first): %q", rows[1])
	}

	file := filepath.Join(dir, "e.ndjson")
	res, complete = s.download(p.all, "/export?format=json", file)
	if !complete || res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("NDJSON export: %d %v", res.StatusCode, res.Header)
	}
	recs := exportLines(t, file)
	if uint64(len(recs)) != live.TreeSize {
		t.Fatalf("NDJSON: %d lines, want %d", len(recs), live.TreeSize)
	}
	for i, rec := range recs {
		if rec.Leaf.Sequence != uint64(i+1) || rec.Leaf.ProjectID != p.id {
			t.Fatalf("NDJSON line %d: %+v", i+1, rec.Leaf)
		}
	}
	res, _ = s.download(p.all, "/export?format=json&max=2&action=bulk.1", file)
	if recs := exportLines(t, file); res.StatusCode != http.StatusOK || len(recs) != 1 || recs[0].Leaf.Sequence != 4 {
		t.Fatalf("filtered export: %d lines", len(recs))
	}
	res, _ = s.download(p.all, "/export?format=json&max=2", file)
	if recs := exportLines(t, file); res.StatusCode != http.StatusOK || len(recs) != 2 || recs[1].Leaf.Sequence != 2 {
		t.Fatalf("export max=2: %d lines", len(recs))
	}
	bin := buildVerifier(t, dir)
	s.download(p.all, "/export?format=json", file)
	if r := verifyFull(t, bin, file, live, nil); r.code != 0 || !strings.Contains(r.stdout, "OK: ") {
		t.Fatalf("sealtrail verify full: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func readCSV(t *testing.T, file string) [][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("CSV: %v", err)
	}
	return rows
}

// checkAnchor checks one attested head of /anchors.
func checkAnchor(t *testing.T, h any) {
	t.Helper()
	m, _ := h.(map[string]any)
	for _, k := range []string{"treeSize", "rootHash", "timestamp", "signature", "anchorType", "anchorRef", "anchorProof", "anchoredAt"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("attested head lacks %s: %v", k, m)
		}
	}
}

func mustHash(t *testing.T, s string) tlog.Hash {
	t.Helper()
	h, err := tlog.ParseHash(s)
	if err != nil {
		t.Fatalf("hash %q: %v", s, err)
	}
	return h
}

func mustHashes(t *testing.T, ss []string) []tlog.Hash {
	t.Helper()
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		out[i] = mustHash(t, s)
	}
	return out
}
