package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// batchItems posts {"events": events} to /log/batch with token, requires 200 and
// returns the results.
func (s *server) batchItems(token string, events []any) []map[string]any {
	s.t.Helper()
	r := s.api(http.MethodPost, "/log/batch", token, map[string]any{"events": events})
	if r.status != http.StatusOK {
		s.t.Fatalf("POST /log/batch: %d %s, want 200", r.status, r.raw)
	}
	raw, _ := r.body["results"].([]any)
	if len(raw) != len(events) {
		s.t.Fatalf("POST /log/batch: %d results for %d events: %s", len(raw), len(events), r.raw)
	}
	items := make([]map[string]any, len(raw))
	for i, it := range raw {
		items[i], _ = it.(map[string]any)
		if idx, _ := items[i]["index"].(float64); int(idx) != i {
			s.t.Fatalf("result %d has index %v", i, items[i]["index"])
		}
	}
	return items
}

// wantItem requires a batch item's status and, for a failed one, its code and error.
func wantItem(t *testing.T, i int, it map[string]any, status string, code int, msg string) {
	t.Helper()
	c, _ := it["code"].(float64)
	if it["status"] != status || int(c) != code || (msg != "" && it["error"] != msg) {
		t.Fatalf("item %d: %v, want status %s code %d error %q", i, it, status, code, msg)
	}
	if id, _ := it["id"].(string); (status == "sealed") != strings.HasPrefix(id, "evt_") {
		t.Fatalf("item %d: %v: id and status disagree", i, it)
	}
}

// TestAPIBatchIngest: POST /log/batch on the built binary, on both catalogs: mixed
// valid, invalid and signed events each get their own result in order; the sealed ones
// are stored, in order, and the stream verifies; the rate limit counts every event; a
// failed seal fails only its events and records nothing.
func TestAPIBatchIngest(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env("SEALTRAIL_RATE_LIMIT=40", "SEALTRAIL_MAX_BATCH_EVENTS=8")})
		p := s.newProject("batch")
		w, _ := s.newKey(p.id, []string{catalog.ScopeWrite}, "")
		items := s.batchItems(w, []any{
			event("batch.a", "alice"),
			map[string]any{"action": "batch.bad", "actor": map[string]any{"type": "user"}},
			event("batch.b", "alice"),
			map[string]any{"action": "batch.c", "actor": map[string]any{"type": "user", "id": "alice"}, "nonce": "00"},
			event("batch.d", "alice"),
		})
		for i, want := range []struct {
			status string
			code   int
			msg    string
		}{{"sealed", 0, ""}, {"rejected", 400, "Invalid event"}, {"sealed", 0, ""}, {"rejected", 400, "Invalid event"}, {"sealed", 0, ""}} {
			wantItem(t, i, items[i], want.status, want.code, want.msg)
		}
		evs := s.mustGet(p.all, "/events?limit=10").body["events"].([]any)
		var got []string
		for _, e := range evs {
			ev := e.(map[string]any)
			got = append(got, fmt.Sprint(ev["id"], " ", ev["action"]))
		}
		want := []string{items[4]["id"].(string) + " batch.d", items[2]["id"].(string) + " batch.b", items[0]["id"].(string) + " batch.a"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("stored (newest first) %v, want %v", got, want)
		}

		// Signed events: a signing project takes signed items and rejects unsigned ones
		// and bad signatures item by item.
		keyID, priv := s.addSigningKey(p.id)
		good := signedEvent(t, priv, keyID, event("signed.ok", "bob"))
		forged := signedEvent(t, priv, keyID, event("signed.forged", "bob"))
		forged["action"] = "signed.changed"
		items = s.batchItems(w, []any{good, event("unsigned", "bob"), forged})
		wantItem(t, 0, items[0], "sealed", 0, "")
		if items[0]["id"] != good["id"] {
			t.Fatalf("signed item sealed as %v, want the client's id %v", items[0]["id"], good["id"])
		}
		wantItem(t, 1, items[1], "rejected", 400, "This project requires signed events (signingKeyId and signature)")
		wantItem(t, 2, items[2], "rejected", 400, "Signature does not verify")
		// The same signed event again is the same event.
		items = s.batchItems(w, []any{good})
		if items[0]["id"] != good["id"] || items[0]["status"] != "sealed" {
			t.Fatalf("resent signed event: %v", items[0])
		}

		// Envelope: too many events, or not a batch.
		var nine []any
		for i := range 9 {
			nine = append(nine, signedEvent(t, priv, keyID, event(fmt.Sprint("n", i), "bob")))
		}
		wantError(t, "nine events", s.api(http.MethodPost, "/log/batch", w, map[string]any{"events": nine}), 400, "Invalid batch")
		wantError(t, "an event, not a batch", s.api(http.MethodPost, "/log/batch", w, good), 400, "Invalid batch")

		// Rate limit (40 per 10 s): so far 5+3+1+1+1 = 11 counted; a fresh key takes 5
		// batches of 8 = 40, the next batch is 429, and nothing of it is sealed.
		w2, _ := s.newKey(p.id, []string{catalog.ScopeWrite}, "")
		sizeBefore := s.sth(p.all, "events").TreeSize
		var batch []any
		for i := range 8 {
			batch = append(batch, signedEvent(t, priv, keyID, event(fmt.Sprint("rl", i), "bob")))
		}
		limited := false
		for range 11 { // enough to cross the limit even if the burst straddles a window

			r := s.api(http.MethodPost, "/log/batch", w2, map[string]any{"events": batch})
			if r.status == http.StatusTooManyRequests {
				limited = true
				break
			}
			if r.status != http.StatusOK {
				t.Fatalf("batch: %d %s", r.status, r.raw)
			}
		}
		if !limited {
			t.Fatal("eleven batches of 8 with a limit of 40 per window: none was limited")
		}
		if got := s.sth(p.all, "events").TreeSize; got != sizeBefore+8 {
			t.Fatalf("tree grew from %d to %d, want +8 (one batch of new events, then resends)", sizeBefore, got)
		}

		// A failed seal: every event of the batch fails with 500 and nothing is recorded.
		w3, _ := s.newKey(p.id, []string{catalog.ScopeWrite}, "")
		restore := s.breakPayloads()
		doomed := []any{signedEvent(t, priv, keyID, event("doomed1", "bob")), event("doomed.unsigned", "bob"),
			signedEvent(t, priv, keyID, event("doomed2", "bob"))}
		items = s.batchItems(w3, doomed)
		wantItem(t, 0, items[0], "failed", 500, "Failed to seal event; nothing was recorded")
		wantItem(t, 1, items[1], "rejected", 400, "")
		wantItem(t, 2, items[2], "failed", 500, "Failed to seal event; nothing was recorded")
		if got := s.sth(p.all, "events").TreeSize; got != sizeBefore+8 {
			t.Fatalf("tree size %d after a failed seal, want %d", got, sizeBefore+8)
		}
		restore()
		items = s.batchItems(w3, []any{doomed[0], doomed[2]})
		wantItem(t, 0, items[0], "sealed", 0, "")
		wantItem(t, 1, items[1], "sealed", 0, "")
		rec := s.receipt(p.all, "events")
		if !rec.Valid || rec.TreeSize != sizeBefore+10 || rec.FirstBreak != nil {
			t.Fatalf("receipt %+v, want valid at size %d", rec, sizeBefore+10)
		}
		s.stop()
	})
}
