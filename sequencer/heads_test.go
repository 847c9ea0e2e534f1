package sequencer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// checkpointCounter counts the checkpoint reads the sequencer makes; sole makes it a
// catalog only this process writes (as catalog/sqlite declares itself).
type checkpointCounter struct {
	Catalog
	reads, idReads atomic.Int64
}

func (c *checkpointCounter) EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error) {
	c.idReads.Add(1)
	return c.Catalog.EventSequence(ctx, log, id)
}

// checkIDs asserts that seq.EventSequence gives each result's sequence, and that an
// unknown id is not found.
func checkIDs(t *testing.T, seq *Sequencer, rs []Result) {
	t.Helper()
	for _, r := range rs {
		if got, err := seq.EventSequence(context.Background(), testLog, r.ID); err != nil || got != r.Sequence {
			t.Fatalf("EventSequence(%s) = %d, %v; want %d", r.ID, got, err, r.Sequence)
		}
	}
	if _, err := seq.EventSequence(context.Background(), testLog, "evt_unknown"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("EventSequence of an unknown id: %v", err)
	}
}

func (c *checkpointCounter) Checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error) {
	c.reads.Add(1)
	return c.Catalog.Checkpoint(ctx, log)
}

type soleCounter struct{ *checkpointCounter }

func (soleCounter) SoleWriter() bool { return true }

// proveAll checks that every leaf [0, size) of the tree the reader serves has an
// inclusion proof in the tree of size size that verifies against root, and that its
// leaf hash is the one acknowledged.
func proveAll(t *testing.T, seq *Sequencer, size uint64, root tlog.Hash, want map[uint64]tlog.Hash) {
	t.Helper()
	ctx := context.Background()
	rd, tree, err := seq.ProofsOver(ctx, testLog, size)
	if err != nil || tree.Size < size {
		t.Fatalf("ProofsOver(%d): tree %d, %v", size, tree.Size, err)
	}
	for i := range size {
		leaf, proof, err := rd.InclusionProofLeaf(ctx, i, size)
		if err != nil {
			t.Fatalf("proof of leaf %d in tree %d: %v", i, size, err)
		}
		if w, ok := want[i+1]; ok && leaf != w {
			t.Fatalf("leaf %d: hash %x, acknowledged %x", i, leaf, w)
		}
		if err := tlog.VerifyInclusion(leaf, i, size, proof, root); err != nil {
			t.Fatalf("proof of leaf %d in tree %d does not verify: %v", i, size, err)
		}
	}
}

func leafHashes(rs []Result, into map[uint64]tlog.Hash) map[uint64]tlog.Hash {
	if into == nil {
		into = map[uint64]tlog.Hash{}
	}
	for _, r := range rs {
		into[r.Sequence] = r.LeafHash
	}
	return into
}

// TestHeadsSoleWriter: on a catalog only this process writes, the live tree and its
// proofs come from the head the commits left in memory: no checkpoint read per
// request, and an event is in the tree served, with a verifying proof, as soon as
// Submit returns (before its publication: the interval is 3 s).
func TestHeadsSoleWriter(t *testing.T) {
	var cc *checkpointCounter
	h := newHarness(t, func(c *Config) {
		cc = &checkpointCounter{Catalog: c.Catalog}
		c.Catalog = soleCounter{cc}
		c.PublishInterval = 3 * time.Second
	})
	if !h.seq.heads.sole {
		t.Fatal("a SoleWriter catalog did not make the head cache authoritative")
	}
	ctx := context.Background()
	rs := h.submitN(testLog, 20)
	want := leafHashes(rs, nil)
	checkIDs(t, h.seq, rs)
	checkIDs(t, h.seq, rs) // now from memory; the unknown id is asked twice
	if n := cc.idReads.Load(); n != int64(len(rs))+2 {
		t.Fatalf("%d id lookups in the catalog, want %d", n, len(rs)+2)
	}
	reads := cc.reads.Load()
	for range 50 {
		tree, err := h.seq.Tree(ctx, testLog)
		if err != nil || tree.Size != 20 {
			t.Fatalf("Tree: %+v, %v", tree, err)
		}
		if _, _, err := h.seq.Proofs(ctx, testLog); err != nil {
			t.Fatal(err)
		}
	}
	tree, _ := h.seq.Tree(ctx, testLog)
	proveAll(t, h.seq, 20, tree.Root, want)
	if n := cc.reads.Load() - reads; n != 0 {
		t.Fatalf("%d checkpoint reads for heads and proofs of a tree this process committed", n)
	}
	for round := range 5 {
		r, err := h.seq.Submit(ctx, testLog, entry(100+round))
		if err != nil {
			t.Fatal(err)
		}
		want[r.Sequence] = r.LeafHash
		tree, err := h.seq.Tree(ctx, testLog)
		if err != nil || tree.Size != r.Sequence {
			t.Fatalf("Tree right after the acknowledgement of %d: %+v, %v", r.Sequence, tree, err)
		}
		proveAll(t, h.seq, tree.Size, tree.Root, want)
	}
	if n := cc.reads.Load() - reads; n != 0 {
		t.Fatalf("%d checkpoint reads after commits of this process", n)
	}
	// A commit whose outcome the process does not know forgets the head: the next
	// request reads the catalog once.
	h.seq.heads.forget(testLog)
	for range 3 {
		if tree, err := h.seq.Tree(ctx, testLog); err != nil || tree.Size != 25 {
			t.Fatalf("Tree after forget: %+v, %v", tree, err)
		}
	}
	if n := cc.reads.Load() - reads; n != 1 {
		t.Fatalf("%d checkpoint reads after forget, want 1", n)
	}
}

// TestHeadsSharedCatalog runs two sequencers on one catalog that does not declare a
// sole writer, as two replicas on PostgreSQL: the live tree is read from the catalog
// every time (the other replica may have committed), while a proof that names a tree
// size the cached head covers costs no read, and one beyond it reads the catalog and
// sees the other replica's commits.
func TestHeadsSharedCatalog(t *testing.T) {
	var ca *checkpointCounter
	a := newHarness(t, func(c *Config) {
		ca = &checkpointCounter{Catalog: c.Catalog}
		c.Catalog = ca
	})
	if a.seq.heads.sole {
		t.Fatal("a catalog that does not declare a sole writer made the head cache authoritative")
	}
	b := &harness{t: t, db: a.db, cat: a.cat, store: a.store, keys: a.keys, key: a.key}
	var err error
	if b.seq, err = New(Config{Catalog: &checkpointCounter{Catalog: a.cat}, Store: a.store, Keyring: a.keys,
		Origin: testOrigin, Key: a.key}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.seq.Close(ctx)
	})
	ctx := context.Background()
	rs := b.submitN(testLog, 10)
	want := leafHashes(rs, nil)
	checkIDs(t, a.seq, rs) // committed by the other replica, asked once: from the catalog
	if n := ca.idReads.Load(); n != int64(len(rs))+1 {
		t.Fatalf("%d id lookups in the catalog, want %d", n, len(rs)+1)
	}
	checkIDs(t, a.seq, rs) // now from memory
	if n := ca.idReads.Load(); n != int64(len(rs))+2 {
		t.Fatalf("%d id lookups in the catalog after a second pass, want %d (the unknown id again)", n, len(rs)+2)
	}
	tree, err := a.seq.Tree(ctx, testLog)
	if err != nil || tree.Size != 10 {
		t.Fatalf("replica a's live tree after b sealed 10: %+v, %v", tree, err)
	}
	want = leafHashes(b.submitN(testLog, 10), want)
	reads := ca.reads.Load()
	rd, old, err := a.seq.ProofsOver(ctx, testLog, 7)
	if err != nil || old.Size != 10 {
		t.Fatalf("ProofsOver(7): %+v, %v; want the cached tree of 10", old, err)
	}
	root7, err := rd.TreeHash(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	proveAll(t, a.seq, 7, root7, want)
	if n := ca.reads.Load() - reads; n != 0 {
		t.Fatalf("%d checkpoint reads for proofs in trees the cached head covers", n)
	}
	if _, tree, err = a.seq.ProofsOver(ctx, testLog, 15); err != nil || tree.Size != 20 {
		t.Fatalf("ProofsOver(15) after b sealed 20: %+v, %v", tree, err)
	}
	proveAll(t, a.seq, 20, tree.Root, want)
	if live, err := a.seq.Tree(ctx, testLog); err != nil || live != tree {
		t.Fatalf("replica a's live tree %+v (%v), want %+v", live, err, tree)
	}
	before := ca.reads.Load()
	for range 3 {
		if _, err := a.seq.Tree(ctx, testLog); err != nil {
			t.Fatal(err)
		}
	}
	if n := ca.reads.Load() - before; n != 3 {
		t.Fatalf("%d checkpoint reads for 3 live heads on a shared catalog, want 3", n)
	}
}

// TestHeadsEdgeBudget: the Readers kept with heads hold at most edgeBudget
// unmaterialized leaves together; a head replaced or forgotten gives its share back,
// and a Reader for a head no longer current is not kept.
func TestHeadsEdgeBudget(t *testing.T) {
	c := newHeadCache(nil)
	rd := tiles.NewReader(nil, "", tiles.Tree{}, nil)
	logs := []catalog.LogID{{ProjectID: "prj_p1", Stream: catalog.StreamEvents}, {ProjectID: "prj_p2", Stream: catalog.StreamEvents}}
	h1 := c.note(catalog.Checkpoint{Log: logs[0], Size: 10})
	if got := c.keep(logs[0], h1, rd, maxCachedEdge); got != rd || h1.rd.Load() != rd || c.budget != edgeBudget-maxCachedEdge {
		t.Fatalf("kept %v, budget %d", h1.rd.Load(), c.budget)
	}
	if got := c.keep(logs[0], h1, tiles.NewReader(nil, "", tiles.Tree{}, nil), 1); got != rd {
		t.Fatal("a second Reader replaced the kept one")
	}
	h2 := c.note(catalog.Checkpoint{Log: logs[0], Size: 11})
	if c.budget != edgeBudget {
		t.Fatalf("budget %d after the head was replaced, want %d", c.budget, edgeBudget)
	}
	if c.keep(logs[0], h1, rd, 1); h1.rd.Load() != rd || c.budget != edgeBudget {
		t.Fatalf("a Reader of a replaced head was charged: budget %d", c.budget)
	}
	if c.keep(logs[0], h2, rd, maxCachedEdge+1); h2.rd.Load() != nil {
		t.Fatal("a Reader over more than maxCachedEdge leaves was kept")
	}
	c.budget = 5
	h3 := c.note(catalog.Checkpoint{Log: logs[1], Size: 10})
	if c.keep(logs[1], h3, rd, 6); h3.rd.Load() != nil || c.budget != 5 {
		t.Fatalf("a Reader beyond the budget was kept: budget %d", c.budget)
	}
	c.keep(logs[1], h3, rd, 5)
	c.forget(logs[1])
	if h3.rd.Load() != rd || c.budget != 5 {
		t.Fatalf("budget %d after forget, want 5", c.budget)
	}
}
