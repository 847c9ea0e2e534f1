package tiles_test

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
	sttlog "github.com/sealtrail/sealtrail/tlog"
	"github.com/transparency-dev/tessera/client"
)

// TestTesseraClient serves a directory written by the tiles code (fs driver) over
// HTTP on loopback and has the tessera client, an independent implementation of
// tlog-tiles, verify the checkpoint, build proofs itself and read entry bundles.
func TestTesseraClient(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tiles.StreamPrefix("proj1", sttlog.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	origin := sttlog.CheckpointOrigin("audit.example.com", "proj1", sttlog.StreamEvents)
	verifier, err := sttlog.NewCheckpointVerifier(pub, origin)
	if err != nil {
		t.Fatal(err)
	}
	ref := newRefTree(synthLeaf)
	publish := func(size uint64) {
		note, err := sttlog.SignCheckpoint(priv, origin, size, ref.root(size))
		if err != nil {
			t.Fatal(err)
		}
		if err := tiles.PublishCheckpoint(ctx, s, p, note); err != nil {
			t.Fatal(err)
		}
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, string(p)))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/")
	f, err := client.NewHTTPFetcher(u, srv.Client())
	if err != nil {
		t.Fatal(err)
	}

	buildLog(t, s, p, ref, []uint64{1000}, 300)
	publish(1000)
	cp, raw, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, verifier, origin)
	if err != nil {
		t.Fatalf("tessera rejects our checkpoint: %v", err)
	}
	if root := ref.root(1000); cp.Size != 1000 || !bytes.Equal(cp.Hash, root[:]) {
		t.Fatalf("tessera reads checkpoint %d %x", cp.Size, cp.Hash)
	}
	tracker, err := client.NewLogStateTracker(ctx, f.ReadTile, raw, verifier, origin, client.UnilateralConsensus(f.ReadCheckpoint))
	if err != nil {
		t.Fatal(err)
	}

	// Grow past a full level-1 tile (65,536 leaves) and publish again; the tracker
	// checks consistency with tessera's own proof.
	buildLog(t, s, p, ref, []uint64{1000, 65537, 70001}, 1<<15)
	publish(70001)
	if _, _, _, err := tracker.Update(ctx); err != nil {
		t.Fatalf("tessera's consistency check of our log fails: %v", err)
	}
	if got := tracker.Latest(); got.Size != 70001 {
		t.Fatalf("tracker at size %d", got.Size)
	}

	const size = 70001
	r := tiles.NewReader(s, p, tiles.Tree{Size: size, Root: ref.root(size)}, nil)
	pb, err := client.NewProofBuilder(ctx, size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []uint64{0, 1, 255, 256, 65535, 65536, 69999, 70000} {
		theirs, err := pb.InclusionProof(ctx, i)
		if err != nil {
			t.Fatalf("tessera InclusionProof(%d): %v", i, err)
		}
		ours, err := r.InclusionProof(ctx, i, size)
		if err != nil {
			t.Fatal(err)
		}
		if !hashesEqual(ours, theirs) {
			t.Fatalf("inclusion proof of %d: ours %x, tessera's %x", i, ours, theirs)
		}
	}
	for _, c := range [][2]uint64{{1, size}, {1000, size}, {65536, size}, {65537, 70000}, {257, 65536}, {size - 1, size}} {
		theirs, err := pb.ConsistencyProof(ctx, c[0], c[1])
		if err != nil {
			t.Fatalf("tessera ConsistencyProof(%d, %d): %v", c[0], c[1], err)
		}
		ours, err := r.ConsistencyProof(ctx, c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		if !hashesEqual(ours, theirs) {
			t.Fatalf("consistency proof %v: ours %x, tessera's %x", c, ours, theirs)
		}
	}
	for _, n := range []uint64{0, 3, 256, 273} {
		b, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, n, size)
		if err != nil {
			t.Fatalf("tessera GetEntryBundle(%d): %v", n, err)
		}
		for j, e := range b.Entries {
			if !bytes.Equal(e, synthLeaf(n*256+uint64(j))) {
				t.Fatalf("tessera reads entry %d of bundle %d as %q", j, n, e)
			}
		}
		if len(b.Entries) == 0 {
			t.Fatalf("bundle %d empty", n)
		}
	}
}
