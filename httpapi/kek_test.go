package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/wrappertest"
	"github.com/sealtrail/sealtrail/tlog"
)

// faultKEK is a KEK whose backend can be taken away, as a KMS outage would.
type faultKEK struct {
	keyring.Wrapper
	down atomic.Bool
}

var errKMSDown = errors.New("injected: KMS unreachable")

func (f *faultKEK) Wrap(ctx context.Context, pt, ad []byte) ([]byte, error) {
	if f.down.Load() {
		return nil, errKMSDown
	}
	return f.Wrapper.Wrap(ctx, pt, ad)
}

func (f *faultKEK) Unwrap(ctx context.Context, w, ad []byte) ([]byte, error) {
	if f.down.Load() {
		return nil, errKMSDown
	}
	return f.Wrapper.Unwrap(ctx, w, ad)
}

type kekCatalog interface {
	catalog.Catalog
	keyring.RewrapStore
}

// TestKMSOutage: with the KEK's backend unreachable, an event that needs a data key
// the replica has not cached fails with 500 and nothing of it is recorded; once the
// backend is back the same request succeeds. The rotation routes answer on the same
// server. On both catalogs.
func TestKMSOutage(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var (
				cat kekCatalog
				err error
			)
			if kind == "sqlite" {
				cat = wrappertest.Catalog(t)
			} else {
				cat, err = postgres.Open(ctx, testenv.PostgresDB(t), postgres.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cat.Close)
			}
			kek := &faultKEK{Wrapper: wrappertest.FileKEK(t)}
			kr := keyring.New(cat, kek, keyring.Options{})
			s := startStack(t, cat, kr, 0, 0, func(c *Config) { c.KEK = keyring.NewRotator(ctx, kr, cat, nil) })
			events := catalog.LogID{ProjectID: s.project, Stream: catalog.StreamEvents}
			size := func() uint64 {
				t.Helper()
				cp, err := cat.Checkpoint(ctx, events)
				if errors.Is(err, catalog.ErrNotFound) {
					return 0
				}
				if err != nil {
					t.Fatal(err)
				}
				return cp.Size
			}
			body := `{"action":"user.login","actor":{"type":"user","id":"alice"}}`

			kek.down.Store(true)
			if code, resp := s.do(http.MethodPost, "/api/v1/log", body); code != http.StatusInternalServerError || !strings.Contains(resp, `"error"`) {
				t.Fatalf("ingest with the KMS down: %d %s, want 500 with a JSON error", code, resp)
			}
			if n := size(); n != 0 {
				t.Fatalf("the failed ingest left a tree of size %d", n)
			}
			if _, err := cat.DataKey(ctx, events, keyring.Monthly.Epoch(time.Now())); !errors.Is(err, catalog.ErrNotFound) {
				t.Fatalf("the failed ingest left a data key: %v", err)
			}
			if rows, err := cat.QueryEvents(ctx, catalog.Query{Log: events}); err != nil || len(rows) != 0 {
				t.Fatalf("the failed ingest left index rows: %v, %v", rows, err)
			}

			kek.down.Store(false)
			if code, resp := s.do(http.MethodPost, "/api/v1/log", body); code != http.StatusAccepted {
				t.Fatalf("ingest after the KMS came back: %d %s", code, resp)
			}
			if n := size(); n != 1 {
				t.Fatalf("tree size %d after one event", n)
			}

			// The rotation routes: status, then a run (nothing to move: one KEK).
			code, resp := s.doAs(stackOperatorToken, http.MethodGet, "/admin/v1/kek", "")
			var st struct {
				CurrentKek string           `json:"currentKek"`
				Keys       map[string]int64 `json:"keys"`
				Remaining  int64            `json:"remaining"`
				Started    *bool            `json:"started"`
			}
			if err := json.Unmarshal([]byte(resp), &st); code != http.StatusOK || err != nil || st.CurrentKek != kek.ID() ||
				st.Keys[kek.ID()] != 2 || st.Remaining != 0 || st.Started != nil {
				t.Fatalf("GET /admin/v1/kek: %d %s", code, resp)
			}
			code, resp = s.doAs(stackOperatorToken, http.MethodPost, "/admin/v1/kek/rewrap", "")
			if err := json.Unmarshal([]byte(resp), &st); code != http.StatusAccepted || err != nil || st.Started == nil {
				t.Fatalf("POST /admin/v1/kek/rewrap: %d %s", code, resp)
			}
			var done struct {
				Running   bool    `json:"running"`
				StartedAt string  `json:"startedAt"`
				Error     *string `json:"error"`
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				_, resp = s.doAs(stackOperatorToken, http.MethodGet, "/admin/v1/kek", "")
				if err := json.Unmarshal([]byte(resp), &done); err != nil || !done.Running || time.Now().After(deadline) {
					break
				}
			}
			if _, err := tlog.ParseTime(done.StartedAt); err != nil || done.Running || done.Error != nil {
				t.Fatalf("GET /admin/v1/kek after the run: %s", resp)
			}
			if code, resp := s.doAs(stackOperatorToken, http.MethodPut, "/admin/v1/kek", ""); code != http.StatusMethodNotAllowed {
				t.Fatalf("PUT /admin/v1/kek: %d %s", code, resp)
			}
			if code, resp := s.do(http.MethodGet, "/admin/v1/kek", ""); code != http.StatusUnauthorized {
				t.Fatalf("GET /admin/v1/kek with an API key: %d %s", code, resp)
			}
		})
	}
}
