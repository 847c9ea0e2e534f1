package sequencer

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/tessera/client"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestTesseraVerifiesSequencedLog has the tessera client, an independent
// implementation of tlog-tiles, read a log the sequencer wrote (SQLite catalog,
// filesystem store, real keyring) over HTTP: it verifies the checkpoint note, checks
// consistency as the log grows, and builds inclusion and consistency proofs that
// must equal ours and verify against the sequencer's root.
func TestTesseraVerifiesSequencedLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := newStackConfig(t, "sqlite", filepath.Join(dir, "catalog.db"), dir)
	st := mustOpenStack(t, cfg)
	signer := cfg.clientKey()
	leafHashes := map[uint64]tlog.Hash{}
	var mu sync.Mutex
	submit := func(from, to uint64) {
		var wg sync.WaitGroup
		for tag := from; tag < to; tag++ {
			wg.Go(func() {
				r, err := st.seq.Submit(ctx, stackLog, tagEntry(signer, tag))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				leafHashes[r.Sequence] = r.LeafHash
				mu.Unlock()
			})
		}
		wg.Wait()
		// Acknowledged at their commit; a mirror sees them once the publish loop
		// (here: at once) materializes them.
		if _, err := st.seq.Materialize(ctx, stackLog); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	origin := tlog.CheckpointOrigin(testOrigin, stackLog.ProjectID, string(stackLog.Stream))
	verifier, err := tlog.NewCheckpointVerifier(cfg.key().Public().(ed25519.PublicKey), origin)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(cfg.Store, string(prefixOf(stackLog))))))
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	f, err := client.NewHTTPFetcher(u, srv.Client())
	if err != nil {
		t.Fatal(err)
	}

	submit(1, 701)
	cp, raw, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, verifier, origin)
	if err != nil {
		t.Fatalf("tessera rejects the sequencer's checkpoint: %v", err)
	}
	tree, err := st.seq.Tree(ctx, stackLog)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != 700 || tree.Size != 700 || !bytes.Equal(cp.Hash, tree.Root[:]) {
		t.Fatalf("tessera reads size %d root %x; the sequencer's tree is %d %s", cp.Size, cp.Hash, tree.Size, tlog.Hex(tree.Root))
	}
	tracker, err := client.NewLogStateTracker(ctx, f.ReadTile, raw, verifier, origin, client.UnilateralConsensus(f.ReadCheckpoint))
	if err != nil {
		t.Fatal(err)
	}

	// Grow the log; the tracker checks consistency with a proof it builds itself.
	submit(701, 2001)
	if _, _, _, err := tracker.Update(ctx); err != nil {
		t.Fatalf("tessera's consistency check of the grown log fails: %v", err)
	}
	const size = 2000
	if got := tracker.Latest(); got.Size != size {
		t.Fatalf("tracker at size %d, want %d", got.Size, size)
	}
	ours, tree, err := st.seq.Proofs(ctx, stackLog)
	if err != nil || tree.Size != size {
		t.Fatalf("proofs at %+v: %v", tree, err)
	}
	pb, err := client.NewProofBuilder(ctx, size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []uint64{0, 1, 255, 256, 699, 700, 1023, 1024, 1999} {
		theirs, err := pb.InclusionProof(ctx, i)
		if err != nil {
			t.Fatalf("tessera InclusionProof(%d): %v", i, err)
		}
		mine, err := ours.InclusionProof(ctx, i, size)
		if err != nil {
			t.Fatal(err)
		}
		if !equalProofs(mine, theirs) {
			t.Fatalf("inclusion proof of %d: ours %x, tessera's %x", i, mine, theirs)
		}
		if err := tlog.VerifyInclusion(leafHashes[i+1], i, size, mine, tree.Root); err != nil {
			t.Fatalf("inclusion of %d: %v", i+1, err)
		}
	}
	for _, c := range [][2]uint64{{1, size}, {256, size}, {700, size}, {701, 1999}, {257, 1024}, {size - 1, size}} {
		theirs, err := pb.ConsistencyProof(ctx, c[0], c[1])
		if err != nil {
			t.Fatalf("tessera ConsistencyProof(%d, %d): %v", c[0], c[1], err)
		}
		mine, err := ours.ConsistencyProof(ctx, c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		if !equalProofs(mine, theirs) {
			t.Fatalf("consistency proof %v: ours %x, tessera's %x", c, mine, theirs)
		}
	}
	// Entry bundles as tessera reads them hold the leaves the sequencer acknowledged.
	for _, n := range []uint64{0, 2, 7} {
		b, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, n, size)
		if err != nil {
			t.Fatalf("tessera GetEntryBundle(%d): %v", n, err)
		}
		if len(b.Entries) == 0 {
			t.Fatalf("bundle %d is empty", n)
		}
		for j, e := range b.Entries {
			if seq := n*256 + uint64(j) + 1; tlog.LeafHash(e) != leafHashes[seq] {
				t.Fatalf("tessera reads entry %d of bundle %d with another leaf hash than sequence %d's", j, n, seq)
			}
		}
	}
}

func equalProofs(a []tlog.Hash, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i][:], b[i]) {
			return false
		}
	}
	return true
}
