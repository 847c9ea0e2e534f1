package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog/sqlite"
)

func postBatch(t *testing.T, s *Server, token, body string) (*httptest.ResponseRecorder, batchResult) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/v1/log/batch", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var res batchResult
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("batch answer %s: %v", rec.Body, err)
		}
	}
	return rec, res
}

func batchOf(actions ...string) string {
	evs := make([]string, len(actions))
	for i, a := range actions {
		evs[i] = fmt.Sprintf(`{"action":%q,"actor":{"type":"u","id":"1"}}`, a)
	}
	return `{"events":[` + strings.Join(evs, ",") + `]}`
}

// TestBatchItemOutcomes: one result per event, in order, each with POST /log's status
// for that event alone; a bad event or a failed seal fails only its own item.
func TestBatchItemOutcomes(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, token := scriptedServer(t, db, Config{Sequencer: scriptedSequencer{}})
	body := `{"events":[{"action":"ok","actor":{"type":"u","id":"1"}},` +
		`{"action":"","actor":{"type":"u"},"bogus":1},` +
		`{"action":"seal-failed","actor":{"type":"u","id":"1"}},` +
		`{"action":"busy","actor":{"type":"u","id":"1"}},` +
		`{"action":"id-conflict","actor":{"type":"u","id":"1"}},` +
		`{"action":"not-published","actor":{"type":"u","id":"1"}},` +
		`{"action":"a","actor":{"type":"u","id":"1"},"nonce":"00"},` +
		`{"action":"ok2","actor":{"type":"u","id":"1"}}]}`
	rec, res := postBatch(t, s, token, body)
	if rec.Code != http.StatusOK {
		t.Fatalf("batch: %d %s", rec.Code, rec.Body)
	}
	want := []struct {
		status string
		code   int
		msg    string
		retry  int
	}{
		{itemSealed, 0, "", 0},
		{itemRejected, 400, "Invalid event", 0},
		{itemFailed, 500, "Failed to seal event; nothing was recorded", 0},
		{itemUnavailable, 503, "Too many events waiting to be sealed; retry later", 2},
		{itemRejected, 409, "Event id already used with different content", 0},
		{itemUnavailable, 503, "Event committed but not yet published; retrying a signed event returns its result", 2},
		{itemRejected, 400, "Invalid event", 0},
		{itemSealed, 0, "", 0},
	}
	if len(res.Results) != len(want) || res.Sealed != 2 {
		t.Fatalf("got %d results, %d sealed: %s", len(res.Results), res.Sealed, rec.Body)
	}
	for i, w := range want {
		got := res.Results[i]
		if got.Index != i || got.Status != w.status || got.Code != w.code || got.Error != w.msg || got.RetryAfter != w.retry {
			t.Errorf("item %d: %+v, want %+v", i, got, w)
		}
		if (got.Status == itemSealed) != strings.HasPrefix(got.ID, "evt_") {
			t.Errorf("item %d: status %s with id %q", i, got.Status, got.ID)
		}
	}
	// The same field errors as POST /log gives the event alone.
	fields := map[string]bool{}
	for _, d := range res.Results[1].Details {
		fields[d.Field] = true
	}
	if len(fields) != 3 || !fields["action"] || !fields["actor.id"] || !fields["bogus"] {
		t.Errorf("item 1 details %+v, want action, actor.id, bogus", res.Results[1].Details)
	}
	if len(res.Results[6].Details) != 1 || res.Results[6].Details[0].Field != "nonce" {
		t.Errorf("item 6 details %+v, want nonce", res.Results[6].Details)
	}
}

// TestBatchEnvelopeAndLimits: a body that is not a batch, or holds too many events, is
// a 400 for the whole request; a batch of N counts as N requests of the rate limit
// and is refused whole when it does not fit.
func TestBatchEnvelopeAndLimits(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, token := scriptedServer(t, db, Config{Sequencer: scriptedSequencer{}, MaxBatchEvents: 3, RateLimit: 100})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.ingestLimits.now = func() time.Time { return now }
	for _, body := range []string{
		`[]`, `{}`, `{"events":{}}`, `{"events":null}`, `{"events":[]}`,
		`{"events":[],"more":1}`, batchOf("a", "b", "c", "d"), `{"events":[`,
	} {
		rec, _ := postBatch(t, s, token, body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"error":"Invalid`) {
			t.Errorf("%s: %d %s, want 400", body, rec.Code, rec.Body)
		}
	}
	// 8 requests so far; the next 90 fit as 30 batches of 3, then 2 remain.
	for i := range 30 {
		if rec, res := postBatch(t, s, token, batchOf("a", "b", "c")); rec.Code != http.StatusOK || res.Sealed != 3 {
			t.Fatalf("batch %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec, _ := postBatch(t, s, token, batchOf("a", "b", "c"))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("batch over the limit: %d %s, want 429", rec.Code, rec.Body)
	}
	now = now.Add(10 * time.Second)
	if rec, res := postBatch(t, s, token, batchOf("a", "b", "c")); rec.Code != http.StatusOK || res.Sealed != 3 {
		t.Fatalf("batch in the next window: %d %s", rec.Code, rec.Body)
	}
}
