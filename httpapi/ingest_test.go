package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// scriptedSequencer seals project_audit records and answers events with err.
type scriptedSequencer struct {
	nopSequencer
	err error
}

func (s scriptedSequencer) Submit(_ context.Context, log catalog.LogID, e sequencer.Entry) (sequencer.Result, error) {
	if log.Stream == catalog.StreamProjectAudit {
		return sequencer.Result{ID: "evt_audit", Sequence: 1}, nil
	}
	if s.err != nil {
		return sequencer.Result{}, s.err
	}
	return sequencer.Result{ID: "evt_ok", Sequence: 1}, nil
}

// TestIngestSealErrors maps each sequencer outcome to its status: 202, 503 with
// Retry-After for back-pressure and for committed-not-yet-published, 409 for a reused
// signed id, 500 (nothing recorded) for a failed seal.
func TestIngestSealErrors(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, key, _ := tlog.GenerateKey()
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		retryAfter string
		body       string
	}{
		{"sealed", nil, http.StatusAccepted, "", `"status":"sealed"`},
		{"busy", &sequencer.BusyError{RetryAfter: 1500 * time.Millisecond}, http.StatusServiceUnavailable, "2", "retry later"},
		{"not published", sequencer.ErrNotPublished, http.StatusServiceUnavailable, "2", "not yet published"},
		{"id conflict", sequencer.ErrIDConflict, http.StatusConflict, "", "different content"},
		{"seal failed", sequencer.ErrSealFailed, http.StatusInternalServerError, "", "nothing was recorded"},
		{"closing", sequencer.ErrClosed, http.StatusServiceUnavailable, "1", "shutting down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := scriptedSequencer{err: tc.err}
			ctl := control.New(db, seq, nil)
			actor := control.Actor{Type: "operator", ID: "test"}
			p, err := ctl.CreateProject(ctx, actor, "p")
			if err != nil {
				t.Fatal(err)
			}
			token, _, err := ctl.CreateAPIKey(ctx, actor, p.ID, "", []string{catalog.ScopeWrite}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Control: ctl, Sequencer: seq, Catalog: db, Key: key, Store: mem.New()})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "/api/v1/log", strings.NewReader(`{"action":"a","actor":{"type":"u","id":"1"}}`))
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("got %d %s, want %d containing %q", rec.Code, rec.Body, tc.status, tc.body)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}
