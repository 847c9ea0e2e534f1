package tiles_test

import (
	"errors"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"golang.org/x/mod/sumdb/tlog"
)

// TestEdgeReaderProofs materializes a log only up to some published sizes and serves
// proofs for larger trusted trees from the tiles plus the committed leaf hashes of
// the rest: every answer equals the reference and verifies, at edges that start and end
// on and off tile boundaries at several levels.
func TestEdgeReaderProofs(t *testing.T) {
	t.Parallel()
	ref := newRefTree(synthLeaf)
	s := mem.New()
	published := []uint64{1, 3, 255, 256, 257, 700, 65536, 65537}
	buildLog(t, s, testPrefix, ref, published, 1<<17)
	ref.grow(65537 + 1000)
	cache, err := tiles.NewTileCache(256)
	if err != nil {
		t.Fatal(err)
	}
	edges := []uint64{1, 2, 200, 256, 300, 1000}
	for _, pub := range append([]uint64{0}, published...) {
		for _, extra := range edges {
			size := pub + extra
			leaves := make([]tlog.Hash, extra)
			for i := range leaves {
				leaves[i] = tlog.RecordHash(synthLeaf(pub + uint64(i)))
			}
			r, err := tiles.NewEdgeReader(s, testPrefix, tiles.Tree{Size: size, Root: ref.root(size)}, pub, leaves, cache)
			if err != nil {
				t.Fatal(err)
			}
			incl := [][2]uint64{{size - 1, size}, {pub, size}, {0, size}, {size / 2, size}, {size - 1, size - 1 + 1}}
			cons := [][2]uint64{{pub, size}, {1, size}, {size - 1, size}, {size / 2, size}}
			if pub > 0 {
				incl = append(incl, [2]uint64{pub - 1, size}, [2]uint64{pub - 1, pub})
				cons = append(cons, [2]uint64{pub / 2, pub})
			}
			checkProofs(t, r, ref, incl, cons)
			hs, err := r.LeafHashes(t.Context(), size-extra/2-1, size)
			if err != nil || hs[len(hs)-1] != tlog.RecordHash(synthLeaf(size-1)) {
				t.Fatalf("LeafHashes at %d+%d: %v", pub, extra, err)
			}
			if h, err := r.TreeHash(t.Context(), size); err != nil || h != ref.root(size) {
				t.Fatalf("TreeHash(%d) = %v, %v", size, h, err)
			}
		}
	}
}

// TestEdgeReaderRejectsWrongEdge: committed leaf hashes or tiles that do not make up
// the trusted root are a mismatch, never a proof.
func TestEdgeReaderRejectsWrongEdge(t *testing.T) {
	ctx := t.Context()
	ref := newRefTree(synthLeaf)
	s := mem.New()
	buildLog(t, s, testPrefix, ref, []uint64{300}, 1000)
	ref.grow(320)
	leaves := make([]tlog.Hash, 20)
	for i := range leaves {
		leaves[i] = tlog.RecordHash(synthLeaf(300 + uint64(i)))
	}
	trusted := tiles.Tree{Size: 320, Root: ref.root(320)}
	if _, err := tiles.NewEdgeReader(s, testPrefix, trusted, 300, leaves[:19], nil); err == nil {
		t.Fatal("an edge of the wrong length was accepted")
	}
	bad := append([]tlog.Hash(nil), leaves...)
	bad[7][0] ^= 1
	r, err := tiles.NewEdgeReader(s, testPrefix, trusted, 300, bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.InclusionProof(ctx, 3, 320); !errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("proof with a wrong edge hash: %v, want ErrMismatch", err)
	}
	// A tampered published tile is caught as well.
	key := testPrefix.Key("tile/0/001.p/44")
	data, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data[0] ^= 1
	s2 := mem.New()
	buildLog(t, s2, testPrefix, newRefTree(synthLeaf), []uint64{300}, 1000)
	if err := s2.Put(ctx, key, data, tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	r, err = tiles.NewEdgeReader(s2, testPrefix, trusted, 300, leaves, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.InclusionProof(ctx, 299, 320); !errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("proof over a tampered tile: %v, want ErrMismatch", err)
	}
	// The untampered store with the right edge proves.
	r, err = tiles.NewEdgeReader(s, testPrefix, trusted, 300, leaves, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.InclusionProof(ctx, 299, 320); err != nil {
		t.Fatal(err)
	}
	// No edge: a plain Reader.
	r, err = tiles.NewEdgeReader(s, testPrefix, tiles.Tree{Size: 300, Root: ref.root(300)}, 300, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.EntryBundle(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// TestHashTileFromEdge: any hash tile of the committed tree, partial widths never
// written included, is computed with the bytes the Writer writes.
func TestHashTileFromEdge(t *testing.T) {
	ctx := t.Context()
	ref := newRefTree(synthLeaf)
	s := mem.New()
	buildLog(t, s, testPrefix, ref, []uint64{70000}, 1<<17)
	// The same log materialized only to 300, with the rest as an edge.
	partial := mem.New()
	buildLog(t, partial, testPrefix, newRefTree(synthLeaf), []uint64{300}, 1<<17)
	leaves := make([]tlog.Hash, 70000-300)
	for i := range leaves {
		leaves[i] = tlog.RecordHash(synthLeaf(300 + uint64(i)))
	}
	r, err := tiles.NewEdgeReader(partial, testPrefix, tiles.Tree{Size: 70000, Root: ref.root(70000)}, 300, leaves, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tile := range []tlog.Tile{
		{H: 8, L: 0, N: 0, W: 256}, {H: 8, L: 0, N: 1, W: 44}, {H: 8, L: 0, N: 273, W: 112},
		{H: 8, L: 1, N: 0, W: 256}, {H: 8, L: 1, N: 1, W: 17}, {H: 8, L: 2, N: 0, W: 1},
	} {
		got, err := r.HashTile(ctx, tile)
		if err != nil {
			t.Fatalf("HashTile(%v): %v", tile, err)
		}
		want, err := s.Get(ctx, testPrefix.Key(tiles.TilePath(tile)))
		if err != nil {
			// A partial width the full build never wrote: compare with a plain
			// Reader over the fully built log.
			full := tiles.NewReader(s, testPrefix, tiles.Tree{Size: 70000, Root: ref.root(70000)}, nil)
			if want, err = full.HashTile(ctx, tile); err != nil {
				t.Fatal(err)
			}
		}
		if string(got) != string(want) {
			t.Fatalf("HashTile(%v) differs from the materialized tile", tile)
		}
	}
	for _, tile := range []tlog.Tile{{H: 8, L: 0, N: 273, W: 113}, {H: 8, L: 2, N: 0, W: 2}} {
		if _, err := r.HashTile(ctx, tile); !errors.Is(err, tiles.ErrNotFound) {
			t.Fatalf("HashTile(%v) beyond the tree: %v", tile, err)
		}
	}
}
