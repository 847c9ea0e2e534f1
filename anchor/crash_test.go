package anchor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

var errInjected = errors.New("injected fault")

// faultyCatalog fails one method once, after performing it (a lost response: the
// commit happened, the caller does not know) or before.
type faultyCatalog struct {
	catalog.Catalog
	method string
	after  bool
	fired  bool
}

func (f *faultyCatalog) fire(method string, op func() error) error {
	if f.fired || method != f.method {
		return op()
	}
	f.fired = true
	if !f.after {
		return errInjected
	}
	if err := op(); err != nil {
		return err
	}
	return errInjected
}

func (f *faultyCatalog) AppendTreeHeads(ctx context.Context, old uint64, hs []catalog.TreeHead, next catalog.TreeHeadsLog) error {
	return f.fire("append", func() error { return f.Catalog.AppendTreeHeads(ctx, old, hs, next) })
}

func (f *faultyCatalog) AdvanceTreeHeadsPublished(ctx context.Context, size uint64) error {
	return f.fire("published", func() error { return f.Catalog.AdvanceTreeHeadsPublished(ctx, size) })
}

func (f *faultyCatalog) SetAnchors(ctx context.Context, hs []catalog.TreeHead) error {
	return f.fire("anchors", func() error { return f.Catalog.SetAnchors(ctx, hs) })
}

// signer is a Publisher that attests with a fixed key and fails on demand.
type signer struct {
	fail bool
}

func (s *signer) Type() string { return "witness" }
func (s *signer) Publish(context.Context, []byte) (string, json.RawMessage, time.Time, error) {
	if s.fail {
		return "", nil, time.Time{}, errInjected
	}
	return "test@1", json.RawMessage(`{"cosignatures":["— test AAAA"]}`), time.Time{}, nil
}

// TestCrash interrupts a run at each step of its commit order (a failed object write,
// a lost catalog response, a failed publication) and checks that a restarted job
// finishes the work: no duplicate and no missing tree_heads leaf, objects that match
// the catalog, every head anchored once.
func TestCrash(t *testing.T) {
	cases := []struct {
		name  string
		fault func(*mem.Store, *faultyCatalog, *signer) (undo func())
	}{
		{"entry bundle write fails", func(s *mem.Store, _ *faultyCatalog, _ *signer) func() {
			return s.Inject(mem.Fault{Op: mem.OpCreate, Key: "tree_heads/tile/entries", Err: errInjected})
		}},
		{"hash tile written, response lost", func(s *mem.Store, _ *faultyCatalog, _ *signer) func() {
			return s.Inject(mem.Fault{Op: mem.OpCreate, Key: "tree_heads/tile/0", Err: errInjected, After: true, Times: 1})
		}},
		{"checkpoint write fails", func(s *mem.Store, _ *faultyCatalog, _ *signer) func() {
			return s.Inject(mem.Fault{Op: mem.OpPut, Key: "tree_heads/checkpoint", Err: errInjected})
		}},
		{"commit happened, response lost", func(_ *mem.Store, c *faultyCatalog, _ *signer) func() {
			c.method, c.after = "append", true
			return func() {}
		}},
		{"commit fails", func(_ *mem.Store, c *faultyCatalog, _ *signer) func() {
			c.method = "append"
			return func() {}
		}},
		{"published size lost", func(_ *mem.Store, c *faultyCatalog, _ *signer) func() {
			c.method, c.after = "published", true
			return func() {}
		}},
		{"anchors fail", func(_ *mem.Store, c *faultyCatalog, _ *signer) func() {
			c.method = "anchors"
			return func() {}
		}},
		{"anchors recorded, response lost", func(_ *mem.Store, c *faultyCatalog, _ *signer) func() {
			c.method, c.after = "anchors", true
			return func() {}
		}},
		{"publication fails", func(_ *mem.Store, _ *faultyCatalog, p *signer) func() {
			p.fail = true
			return func() { p.fail = false }
		}},
	}
	eachCatalog(t, func(t *testing.T, db catalog.Catalog) {
		ctx := context.Background()
		key := testKey(t)
		pub := key.Public().(ed25519.PublicKey)
		store := mem.New()
		logs := logsN(4)
		for i, tc := range cases {
			fc := &faultyCatalog{Catalog: db}
			p := &signer{}
			undo := tc.fault(store, fc, p)
			grow(t, db, 1+i%3, logs[i%4], logs[(i+1)%4])
			j, err := New(Config{Catalog: fc, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{p}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.RunOnce(ctx); !errors.Is(err, errInjected) {
				t.Fatalf("%s: run = %v, want the injected fault", tc.name, err)
			}
			undo()
			// Restart: a new job, as a new process would have.
			j, err = New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{p}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.RunOnce(ctx); err != nil {
				t.Fatalf("%s: run after the fault: %v", tc.name, err)
			}
			st := checkLog(t, db, store, pub)
			if grown, err := db.GrownLogs(ctx, catalog.LogID{}, 0); err != nil || len(grown) != 0 {
				t.Fatalf("%s: streams still unlogged: %+v, %v", tc.name, grown, err)
			}
			if un, err := db.UnanchoredTreeHeads(ctx, 0, st.Size, 0); err != nil || len(un) != 0 {
				t.Fatalf("%s: %d heads unanchored, %v", tc.name, len(un), err)
			}
			for _, l := range logs {
				hs, _ := db.ListTreeHeads(ctx, l, 100)
				for _, h := range hs {
					p := proofOf(t, h)
					sth := headSTH(h)
					if _, err := tlog.CheckTreeHeadInclusion(&sth, &p, pub); err != nil {
						t.Fatalf("%s: head %s %d: %v", tc.name, l, h.TreeSize, err)
					}
				}
			}
		}
	})
}

// TestLease: one runner at a time across replicas; another takes over once the
// holder's lease has run out.
func TestLease(t *testing.T) {
	eachCatalog(t, func(t *testing.T, db catalog.Catalog) {
		ctx := context.Background()
		key := testKey(t)
		store := mem.New()
		now := time.Now()
		clock := func() time.Time { return now }
		a, _ := New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "a", Interval: time.Minute, Now: clock})
		b, _ := New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "b", Interval: time.Minute, Now: clock})
		grow(t, db, 1, logsN(2)...)
		if rep, err := a.RunOnce(ctx); err != nil || !rep.Leased || rep.Appended != 2 {
			t.Fatalf("a = %+v, %v", rep, err)
		}
		grow(t, db, 1, logsN(1)...)
		if rep, err := b.RunOnce(ctx); err != nil || rep.Leased || rep.Appended != 0 {
			t.Fatalf("b while a holds the lease = %+v, %v", rep, err)
		}
		now = now.Add(2 * time.Minute)
		if rep, err := b.RunOnce(ctx); err != nil || !rep.Leased || rep.Appended != 1 || rep.Size != 3 {
			t.Fatalf("b after a's lease ran out = %+v, %v", rep, err)
		}
		checkLog(t, db, store, key.Public().(ed25519.PublicKey))
	})
}
