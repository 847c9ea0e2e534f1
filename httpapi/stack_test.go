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
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/siem"
	"github.com/sealtrail/sealtrail/tiles/mem"
)

// stack is a Server over a real catalog, sequencer and keyring, with one project and
// an API key of every scope.
type stack struct {
	t       *testing.T
	h       http.Handler
	srv     *Server
	token   string
	project string
}

// stackOperatorToken authenticates /admin/v1 on a stack.
const stackOperatorToken = "sto_test_operator_token"

// catalogKinds are the catalogs the stack tests run on. PostgreSQL comes from
// SEALTRAIL_TEST_POSTGRES (skipped without it, a failure under CI=true).
var catalogKinds = []string{"sqlite", "postgres"}

// newStack starts a stack on the catalog kind. The sequencer seals a batch when it
// holds maxBatch events or its first is maxAge old, so a test can put concurrent
// writers in one batch.
func newStack(t *testing.T, kind string, maxBatch int, maxAge time.Duration) *stack {
	t.Helper()
	cat := openCatalog(t, kind)
	return startStack(t, cat, keyring.New(cat, stacktest.KEK(t), keyring.Options{}), maxBatch, maxAge, nil)
}

// openCatalog opens a new catalog of kind, closed at the end of the test.
func openCatalog(t *testing.T, kind string) catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	var (
		cat catalog.Catalog
		err error
	)
	switch kind {
	case "sqlite":
		cat, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	case "postgres":
		cat, err = postgres.Open(ctx, testenv.PostgresDB(t), postgres.Options{MaxConns: 8})
	default:
		t.Fatalf("unknown catalog %q", kind)
	}
	if err != nil {
		t.Fatalf("open %s catalog: %v", kind, err)
	}
	t.Cleanup(cat.Close)
	return cat
}

// startStack is newStack on a catalog and keyring of the caller's; cfg, if not nil,
// adjusts the server's configuration.
func startStack(t *testing.T, cat catalog.Catalog, kr *keyring.Keyring, maxBatch int, maxAge time.Duration, cfg func(*Config)) *stack {
	t.Helper()
	ctx := context.Background()
	seq, key := stacktest.Sequencer(t, cat, "httpapi.test", func(c *sequencer.Config) {
		c.MaxBatch, c.MaxAge, c.Keyring = maxBatch, maxAge, kr
	})
	ctl := control.New(cat, seq, nil)
	actor := control.Actor{Type: "operator", ID: "test"}
	p, err := ctl.CreateProject(ctx, actor, "p")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := ctl.CreateAPIKey(ctx, actor, p.ID, "",
		[]string{catalog.ScopeWrite, catalog.ScopeRead, catalog.ScopeExport, catalog.ScopeVerify}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Control: ctl, Sequencer: seq, Catalog: cat, Key: key, Store: mem.New(),
		OperatorToken: stackOperatorToken, SIEM: siem.NewAdmin(cat.(catalog.SIEMCatalog), ctl, seq, stacktest.KEK(t))}
	if cfg != nil {
		cfg(&c)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{t: t, h: s.Handler(), srv: s, token: token, project: p.ID}
}

// do sends a request with the stack's API key and returns the status and body. It is
// safe for concurrent use.
func (s *stack) do(method, target, body string) (int, string) {
	return s.doAs(s.token, method, target, body)
}

// doAs is do with another bearer token (stackOperatorToken for /admin/v1).
func (s *stack) doAs(token, method, target, body string) (int, string) {
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
	}
	r.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	return rec.Code, rec.Body.String()
}
