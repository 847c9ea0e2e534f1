package sequencer

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// testKeyring is AES-256-GCM with one key per log, which a test can shred.
type testKeyring struct {
	mu       sync.Mutex
	keys     map[catalog.LogID]cipher.AEAD
	shredded map[catalog.LogID]bool
}

func newTestKeyring() *testKeyring {
	return &testKeyring{keys: map[catalog.LogID]cipher.AEAD{}, shredded: map[catalog.LogID]bool{}}
}

func (k *testKeyring) aead(log catalog.LogID) cipher.AEAD {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a, ok := k.keys[log]; ok {
		return a
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b, _ := aes.NewCipher(key)
	a, _ := cipher.NewGCM(b)
	k.keys[log] = a
	return a
}

func (k *testKeyring) Seal(_ context.Context, log catalog.LogID, _ time.Time, plaintext, aad []byte) ([]byte, error) {
	a := k.aead(log)
	nonce := make([]byte, a.NonceSize())
	_, _ = rand.Read(nonce)
	return a.Seal(nonce, nonce, plaintext, aad), nil
}

func (k *testKeyring) Open(_ context.Context, log catalog.LogID, ct, aad []byte) ([]byte, error) {
	k.mu.Lock()
	shredded := k.shredded[log]
	k.mu.Unlock()
	if shredded {
		return nil, ErrShredded
	}
	a := k.aead(log)
	if len(ct) < a.NonceSize() {
		return nil, errors.New("short ciphertext")
	}
	return a.Open(nil, ct[:a.NonceSize()], ct[a.NonceSize():], aad)
}

func (k *testKeyring) shred(log catalog.LogID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.shredded[log] = true
}

// faultyCatalog wraps a catalog and fails SealGroup or Publish on demand.
type faultyCatalog struct {
	Catalog
	mu          sync.Mutex
	sealErr     error // returned by SealGroup before fn runs
	commitErr   error // returned by SealGroup after fn ran, without committing
	publishErr  error // returned by Publish before fn runs
	lostCommits int   // SealGroup commits but reports an error this many times
}

func (c *faultyCatalog) set(f func(*faultyCatalog)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *faultyCatalog) SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error) {
	c.mu.Lock()
	sealErr, commitErr, lost := c.sealErr, c.commitErr, c.lostCommits > 0
	if lost {
		c.lostCommits--
	}
	c.mu.Unlock()
	if sealErr != nil {
		return nil, sealErr
	}
	if commitErr != nil {
		return c.Catalog.SealGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
			_, durable, err := fn(ctx, cps)
			if err == nil && durable != nil {
				err = durable() // the payload objects are written; the commit fails
			}
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, commitErr
		})
	}
	res, err := c.Catalog.SealGroup(ctx, logs, fn)
	if err == nil && lost {
		return res, errors.New("connection reset during COMMIT")
	}
	return res, err
}

func (c *faultyCatalog) Publish(ctx context.Context, log catalog.LogID, fn func(context.Context, catalog.Checkpoint) error) (catalog.Checkpoint, error) {
	c.mu.Lock()
	err := c.publishErr
	c.mu.Unlock()
	if err != nil {
		return catalog.Checkpoint{}, err
	}
	return c.Catalog.Publish(ctx, log, fn)
}

func (c *faultyCatalog) PublishGroup(ctx context.Context, logs []catalog.LogID, fn catalog.PublishGroupFunc) ([]catalog.Published, error) {
	c.mu.Lock()
	err := c.publishErr
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.Catalog.PublishGroup(ctx, logs, fn)
}

type harness struct {
	t     *testing.T
	db    *sqlite.DB
	cat   *faultyCatalog
	store *mem.Store
	keys  *testKeyring
	key   ed25519.PrivateKey
	seq   *Sequencer
}

const testOrigin = "sealtrail.test"

func newHarness(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	_, key, _ := tlog.GenerateKey()
	h := &harness{t: t, db: db, cat: &faultyCatalog{Catalog: db}, store: mem.New(), keys: newTestKeyring(), key: key}
	cfg := Config{Catalog: h.cat, Store: h.store, Keyring: h.keys, Origin: testOrigin, Key: key}
	if tweak != nil {
		tweak(&cfg)
	}
	h.seq, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.seq.Close(ctx)
	})
	return h
}

var testLog = catalog.LogID{ProjectID: "prj_test", Stream: catalog.StreamEvents}

func entry(i int) Entry {
	payload, err := tlog.Canonicalize(fmt.Appendf(nil, `{"action":"doc.read","actor":{"type":"user","id":"u%d"},"status":"success"}`, i))
	if err != nil {
		panic(err)
	}
	return Entry{Payload: payload, Index: Index{Action: "doc.read", Status: "success", ActorType: "user", ActorID: fmt.Sprintf("u%d", i)}}
}

// signedEntry returns a customer-signed entry with a client-minted id.
func signedEntry(t testing.TB, key ed25519.PrivateKey, id string, i int) Entry {
	e := entry(i)
	n, _ := tlog.NewNonce()
	e.ID, e.Nonce = id, &n
	e.SigningKeyID, e.Signature = "sk_test", tlog.SignEvent(key, id, tlog.Commitment(n, e.Payload))
	return e
}

// submitN submits n events concurrently and returns their results by index.
func (h *harness) submitN(log catalog.LogID, n int) []Result {
	h.t.Helper()
	out := make([]Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out[i], errs[i] = h.seq.Submit(ctx, log, entry(i))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			h.t.Fatalf("submit %d: %v", i, err)
		}
	}
	return out
}

// checkLog asserts the log is whole: contiguous sequences 1..size, every result's
// inclusion proof verifies against the committed tree as served (whether or not its
// tiles are materialized yet), the checkpoint note opens at the committed size once
// materialized, and a full rebuild is valid.
func (h *harness) checkLog(log catalog.LogID, results []Result) {
	h.t.Helper()
	ctx := context.Background()
	rd, tree, err := h.seq.Proofs(ctx, log)
	if err != nil {
		h.t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, r := range results {
		if r.Sequence < 1 || r.Sequence > tree.Size || (seen[r.Sequence] && !r.Duplicate) {
			h.t.Fatalf("result %+v outside 1..%d or repeated", r, tree.Size)
		}
		seen[r.Sequence] = true
		p, err := rd.InclusionProof(ctx, r.Sequence-1, tree.Size)
		if err != nil {
			h.t.Fatal(err)
		}
		if err := tlog.VerifyInclusion(r.LeafHash, r.Sequence-1, tree.Size, p, tree.Root); err != nil {
			h.t.Fatalf("inclusion of %d: %v", r.Sequence, err)
		}
	}
	if _, err := h.seq.Materialize(ctx, log); err != nil {
		h.t.Fatal(err)
	}
	note, err := h.seq.cfg.Store.Get(ctx, prefixOf(log).Key(tiles.CheckpointPath))
	if err != nil {
		h.t.Fatal(err)
	}
	cp, err := tlog.OpenCheckpoint(h.key.Public().(ed25519.PublicKey), tlog.CheckpointOrigin(testOrigin, log.ProjectID, string(log.Stream)), note)
	if err != nil || cp.Size != tree.Size || cp.Root != tree.Root {
		h.t.Fatalf("checkpoint note %+v, %v; tree %+v", cp, err, tree)
	}
	res, err := h.seq.Rebuild(ctx, log, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if res.Break != nil || res.Size != tree.Size || res.Root != tree.Root || res.Checked != tree.Size {
		h.t.Fatalf("rebuild %+v, live %+v", res, tree)
	}
}

// checkProof asserts that r's inclusion proof, as served now, verifies against the
// committed tree.
func (h *harness) checkProof(log catalog.LogID, r Result) {
	h.t.Helper()
	ctx := context.Background()
	rd, tree, err := h.seq.Proofs(ctx, log)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.Sequence < 1 || r.Sequence > tree.Size {
		h.t.Fatalf("result %+v outside the committed tree of size %d", r, tree.Size)
	}
	p, err := rd.InclusionProof(ctx, r.Sequence-1, tree.Size)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := tlog.VerifyInclusion(r.LeafHash, r.Sequence-1, tree.Size, p, tree.Root); err != nil {
		h.t.Fatalf("inclusion of %d in %d: %v", r.Sequence, tree.Size, err)
	}
}

// waitStopped waits until log's stream stopped (a fork found while publishing).
func (h *harness) waitStopped(ctx context.Context, log catalog.LogID) {
	h.t.Helper()
	for {
		h.seq.mu.Lock()
		ls := h.seq.logs[log]
		h.seq.mu.Unlock()
		if ls != nil && ls.stoppedErr() != nil {
			return
		}
		select {
		case <-ctx.Done():
			h.t.Fatal("the stream never stopped")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
