package control

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tlog"
)

// The control plane is tested over the real stack: the SQLite catalog, an in-memory
// object store, the key ring and the sequencer. The catalog and the sequencer are
// wrapped to trace the order of calls and to inject failures.

// tracer records, in order, every audit seal and every catalog write.
type tracer struct {
	mu    sync.Mutex
	steps []string
}

func (t *tracer) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.steps = append(t.steps, s)
}

func (t *tracer) reset() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.steps
	t.steps = nil
	return s
}

// faultCatalog is the SQLite catalog with every write traced; the write named by fail
// returns errInjected without touching the database.
type faultCatalog struct {
	Catalog
	tr   *tracer
	mu   sync.Mutex
	fail string
}

var errInjected = errors.New("injected catalog failure")

func (c *faultCatalog) failOn(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = method
}

func (c *faultCatalog) write(method string) error {
	c.tr.add("catalog " + method)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail == method {
		return errInjected
	}
	return nil
}

func (c *faultCatalog) CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error) {
	if err := c.write("CreateProject"); err != nil {
		return catalog.Project{}, err
	}
	return c.Catalog.CreateProject(ctx, p)
}

func (c *faultCatalog) CreateAPIKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error) {
	if err := c.write("CreateAPIKey"); err != nil {
		return catalog.APIKey{}, err
	}
	return c.Catalog.CreateAPIKey(ctx, k)
}

func (c *faultCatalog) RevokeAPIKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.APIKey, error) {
	if err := c.write("RevokeAPIKey"); err != nil {
		return catalog.APIKey{}, err
	}
	return c.Catalog.RevokeAPIKey(ctx, projectID, keyID, at)
}

func (c *faultCatalog) AddMember(ctx context.Context, m catalog.Member) (catalog.Member, error) {
	if err := c.write("AddMember"); err != nil {
		return catalog.Member{}, err
	}
	return c.Catalog.AddMember(ctx, m)
}

func (c *faultCatalog) RemoveMember(ctx context.Context, projectID, email string) error {
	if err := c.write("RemoveMember"); err != nil {
		return err
	}
	return c.Catalog.RemoveMember(ctx, projectID, email)
}

func (c *faultCatalog) CreateSigningKey(ctx context.Context, k catalog.SigningKey) (catalog.SigningKey, error) {
	if err := c.write("CreateSigningKey"); err != nil {
		return catalog.SigningKey{}, err
	}
	return c.Catalog.CreateSigningKey(ctx, k)
}

func (c *faultCatalog) RevokeSigningKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.SigningKey, error) {
	if err := c.write("RevokeSigningKey"); err != nil {
		return catalog.SigningKey{}, err
	}
	return c.Catalog.RevokeSigningKey(ctx, projectID, keyID, at)
}

func (c *faultCatalog) SetRetention(ctx context.Context, r catalog.Retention) (catalog.Retention, error) {
	if err := c.write("SetRetention"); err != nil {
		return catalog.Retention{}, err
	}
	return c.Catalog.SetRetention(ctx, r)
}

func (c *faultCatalog) SetIngestRateLimit(ctx context.Context, projectID string, limit int) (catalog.Project, error) {
	if err := c.write("SetIngestRateLimit"); err != nil {
		return catalog.Project{}, err
	}
	return c.Catalog.SetIngestRateLimit(ctx, projectID, limit)
}

func (c *faultCatalog) CreateLegalHold(ctx context.Context, h catalog.LegalHold) (catalog.LegalHold, error) {
	if err := c.write("CreateLegalHold"); err != nil {
		return catalog.LegalHold{}, err
	}
	return c.Catalog.CreateLegalHold(ctx, h)
}

func (c *faultCatalog) ReleaseLegalHold(ctx context.Context, projectID, holdID string, at time.Time) (catalog.LegalHold, error) {
	if err := c.write("ReleaseLegalHold"); err != nil {
		return catalog.LegalHold{}, err
	}
	return c.Catalog.ReleaseLegalHold(ctx, projectID, holdID, at)
}

// traceSeq traces every audit seal and can fail them all.
type traceSeq struct {
	*sequencer.Sequencer
	tr   *tracer
	mu   sync.Mutex
	fail bool
}

func (s *traceSeq) Submit(ctx context.Context, log catalog.LogID, e sequencer.Entry) (sequencer.Result, error) {
	if log.Stream == catalog.StreamProjectAudit {
		s.tr.add("seal " + e.Index.Action)
		s.mu.Lock()
		fail := s.fail
		s.mu.Unlock()
		if fail {
			return sequencer.Result{}, sequencer.ErrSealFailed
		}
	}
	return s.Sequencer.Submit(ctx, log, e)
}

type env struct {
	t   *testing.T
	ctx context.Context
	db  *sqlite.DB
	cat *faultCatalog
	seq *traceSeq
	svc *Service
	tr  *tracer
}

var operator = Actor{Type: "operator", ID: "alice"}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	seq, _ := stacktest.Sequencer(t, db, "control.test", nil)
	tr := &tracer{}
	e := &env{t: t, ctx: ctx, db: db, tr: tr, cat: &faultCatalog{Catalog: db, tr: tr}, seq: &traceSeq{Sequencer: seq, tr: tr}}
	e.svc = New(e.cat, e.seq, nil)
	return e
}

func (e *env) project(name string) catalog.Project {
	e.t.Helper()
	p, err := e.svc.CreateProject(e.ctx, operator, name)
	if err != nil {
		e.t.Fatalf("CreateProject: %v", err)
	}
	return p
}

// event seals an event in the project's events stream and returns its id.
func (e *env) event(projectID, action string) string {
	e.t.Helper()
	payload, err := tlog.Canonicalize([]byte(fmt.Sprintf(`{"action":%q,"actor":{"type":"user","id":"bob"}}`, action)))
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.seq.Submit(e.ctx, catalog.LogID{ProjectID: projectID, Stream: catalog.StreamEvents},
		sequencer.Entry{Payload: payload, Index: sequencer.Index{Action: action, Status: "success", ActorType: "user", ActorID: "bob"}})
	if err != nil {
		e.t.Fatalf("seal event: %v", err)
	}
	return res.ID
}

// auditRecord is a sealed project_audit record as the control plane writes it.
type auditRecord struct {
	Action   string         `json:"action"`
	Actor    Actor          `json:"actor"`
	Status   string         `json:"status"`
	Target   Actor          `json:"target"`
	Metadata map[string]any `json:"metadata"`
}

func auditLog(projectID string) catalog.LogID {
	return catalog.LogID{ProjectID: projectID, Stream: catalog.StreamProjectAudit}
}

// audit reads every record of the project's audit stream, in sequence order.
func (e *env) audit(projectID string) []auditRecord {
	e.t.Helper()
	tree, err := e.seq.Tree(e.ctx, auditLog(projectID))
	if err != nil {
		e.t.Fatal(err)
	}
	seqs := make([]uint64, tree.Size)
	for i := range seqs {
		seqs[i] = uint64(i + 1)
	}
	stored, err := e.seq.Events(e.ctx, auditLog(projectID), seqs)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]auditRecord, len(stored))
	for i, s := range stored {
		if err := json.Unmarshal(s.Payload, &out[i]); err != nil {
			e.t.Fatalf("audit record %d: %v", i+1, err)
		}
	}
	return out
}

func (e *env) auditSize(projectID string) uint64 {
	e.t.Helper()
	tree, err := e.seq.Tree(e.ctx, auditLog(projectID))
	if err != nil {
		e.t.Fatal(err)
	}
	return tree.Size
}

// state is everything the control plane can change in a project, for comparison.
func (e *env) state(projectID string) string {
	e.t.Helper()
	var b strings.Builder
	ps, _ := e.db.ListProjects(e.ctx, "", 1000)
	fmt.Fprintf(&b, "projects=%d\n", len(ps))
	if p, err := e.db.Project(e.ctx, projectID); err == nil {
		fmt.Fprintf(&b, "ingest rate limit %d\n", p.IngestRateLimit)
	}
	ks, _ := e.db.ListAPIKeys(e.ctx, projectID)
	for _, k := range ks {
		fmt.Fprintf(&b, "key %s %v %s\n", k.ID, k.Scopes, k.State(time.Now()))
	}
	ms, _ := e.db.ListMembers(e.ctx, projectID)
	for _, m := range ms {
		fmt.Fprintf(&b, "member %s %s\n", m.Email, m.Role)
	}
	sks, _ := e.db.ListSigningKeys(e.ctx, projectID)
	for _, k := range sks {
		fmt.Fprintf(&b, "signing %s %s\n", k.ID, k.State())
	}
	rs, _ := e.db.ListRetention(e.ctx, projectID)
	for _, r := range rs {
		fmt.Fprintf(&b, "retention %s %d\n", r.Log.Stream, r.Days)
	}
	hs, _ := e.db.ListLegalHolds(e.ctx, projectID)
	for _, h := range hs {
		fmt.Fprintf(&b, "hold %s %s\n", h.ID, h.State())
	}
	return b.String()
}

func newPublicKey(t *testing.T) string {
	t.Helper()
	pub, _, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(pub)
}
