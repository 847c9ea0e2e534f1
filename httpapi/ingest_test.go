package httpapi

import (
	"context"
	"fmt"
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

// SubmitMany answers each entry as Submit would, except that an entry whose action
// names a sequencer error by its test name gets that error.
func (s scriptedSequencer) SubmitMany(ctx context.Context, log catalog.LogID, es []sequencer.Entry) ([]sequencer.Result, []error) {
	res, errs := make([]sequencer.Result, len(es)), make([]error, len(es))
	for i, e := range es {
		if err, ok := sealErrors[e.Index.Action]; ok {
			errs[i] = err
			continue
		}
		res[i], errs[i] = s.Submit(ctx, log, e)
		res[i].ID = fmt.Sprintf("evt_ok%d", i)
	}
	return res, errs
}

// sealErrors are the sequencer outcomes the tests script, by name.
var sealErrors = map[string]error{
	"busy":          &sequencer.BusyError{RetryAfter: 1500 * time.Millisecond},
	"not-published": sequencer.ErrNotPublished,
	"id-conflict":   sequencer.ErrIDConflict,
	"seal-failed":   sequencer.ErrSealFailed,
	"closing":       sequencer.ErrClosed,
}

// scriptedServer returns a Server on db with cfg's Sequencer, and a log:write token of
// a new project.
func scriptedServer(t *testing.T, db *sqlite.DB, cfg Config) (*Server, string) {
	t.Helper()
	ctx := context.Background()
	ctl := control.New(db, cfg.Sequencer, nil)
	actor := control.Actor{Type: "operator", ID: "test"}
	p, err := ctl.CreateProject(ctx, actor, "p")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := ctl.CreateAPIKey(ctx, actor, p.ID, "", []string{catalog.ScopeWrite}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Control, cfg.Catalog, cfg.Store = ctl, db, mem.New()
	if cfg.Key == nil {
		_, cfg.Key, _ = tlog.GenerateKey()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, token
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
		{"busy", sealErrors["busy"], http.StatusServiceUnavailable, "2", "retry later"},
		{"not published", sealErrors["not-published"], http.StatusServiceUnavailable, "2", "not yet published"},
		{"id conflict", sealErrors["id-conflict"], http.StatusConflict, "", "different content"},
		{"seal failed", sealErrors["seal-failed"], http.StatusInternalServerError, "", "nothing was recorded"},
		{"closing", sealErrors["closing"], http.StatusServiceUnavailable, "1", "shutting down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, token := scriptedServer(t, db, Config{Sequencer: scriptedSequencer{err: tc.err}, Key: key})
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

// TestWriteSealedIsWriteJSON: the ingest answer's fast path writes exactly what
// writeJSON writes for the same result, headers included.
func TestWriteSealedIsWriteJSON(t *testing.T) {
	generated, err := tlog.NewEventID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"evt_01J9Z8", "evt_a-b_c", generated} {
		fast, slow := httptest.NewRecorder(), httptest.NewRecorder()
		writeSealed(fast, id)
		writeJSON(slow, http.StatusAccepted, ingestResult{ID: id, Status: "sealed"})
		if fast.Code != slow.Code || fast.Body.String() != slow.Body.String() ||
			fmt.Sprint(fast.Header()) != fmt.Sprint(slow.Header()) {
			t.Fatalf("writeSealed: %d %v %q; writeJSON: %d %v %q", fast.Code, fast.Header(), fast.Body, slow.Code, slow.Header(), slow.Body)
		}
	}
}
