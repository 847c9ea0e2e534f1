package tiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// memTree is a log held as x/mod's stored hashes, in memory.
type memTree []tlog.Hash

func (m *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = (*m)[x]
	}
	return out, nil
}

func (m *memTree) grow(t testing.TB, to int64) {
	for size := int64(0); size < to; size++ {
		if tlog.StoredHashCount(size+1) <= int64(len(*m)) {
			continue // already stored
		}
		leaf := sha256.Sum256([]byte{byte(size), byte(size >> 8), byte(size >> 16)})
		hs, err := tlog.StoredHashes(size, leaf[:], m)
		if err != nil {
			t.Fatal(err)
		}
		*m = append(*m, hs...)
	}
}

// cachedReader returns a Reader (without a store) of the tree of size n of m, with
// every tile of the tree cached, as SaveTiles would after authenticating them.
func cachedReader(t testing.TB, m *memTree, n int64) *Reader {
	c, err := NewTileCache(1 << 13)
	if err != nil {
		t.Fatal(err)
	}
	root, err := tlog.TreeHash(n, m)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(nil, "p/", Tree{Size: uint64(n), Root: root}, c)
	for _, tile := range tlog.NewTiles(TileHeight, 0, n) {
		data, err := tlog.ReadTileData(tile, m)
		if err != nil {
			t.Fatal(err)
		}
		c.add(r.tileKey(tile), &authTile{data: data})
	}
	return r
}

// TestCachedInclusion checks every inclusion proof the cached path builds against
// x/mod's ProveRecord over the same hashes, trusting trees whose tiles are all cached
// and proving leaves in them and in older trees (whose last tiles are wider in the
// trusted tree), at sizes around tile boundaries and up to three tile levels.
func TestCachedInclusion(t *testing.T) {
	var m memTree
	const most = 1<<16 + 3*TileWidth + 5
	m.grow(t, most)
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := []int64{1, 2, 3, 5, 255, 256, 257, 511, 512, 513, 1000, 65535, 65536, 65537, most}
	for range 20 {
		sizes = append(sizes, 1+rng.Int64N(most))
	}
	for _, n := range sizes {
		r := cachedReader(t, &m, n)
		check := func(index, size int64) {
			t.Helper()
			leaf, proof, ok := r.cachedInclusion(t.Context(), uint64(index), uint64(size))
			if !ok {
				t.Fatalf("trusted %d: leaf %d in %d: a tile was not found, all are cached", n, index, size)
			}
			want, err := tlog.ProveRecord(size, index, &m)
			if err != nil {
				t.Fatal(err)
			}
			if len(proof) != len(want) {
				t.Fatalf("trusted %d: leaf %d in %d: %d hashes, ProveRecord %d", n, index, size, len(proof), len(want))
			}
			for i := range want {
				if proof[i] != want[i] {
					t.Fatalf("trusted %d: leaf %d in %d: hash %d differs from ProveRecord's", n, index, size, i)
				}
			}
			if leaf != m[tlog.StoredHashIndex(0, index)] {
				t.Fatalf("trusted %d: leaf %d: wrong leaf hash", n, index)
			}
		}
		for range 300 {
			size := 1 + rng.Int64N(n)
			check(rng.Int64N(size), size)
		}
		for _, i := range []int64{0, n / 2, n - 1} {
			check(i, n)
		}
		if n <= 600 {
			for size := int64(1); size <= n; size++ {
				for i := range size {
					check(i, size)
				}
			}
		}
	}
}

// mapStore is a Store of tiles in a map, counting reads; it only reads.
type mapStore struct {
	mu    sync.Mutex
	objs  map[string][]byte
	reads int
}

func (m *mapStore) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if b, ok := m.objs[key]; ok {
		return bytes.Clone(b), nil
	}
	return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
}

func (m *mapStore) GetRange(context.Context, string, int64, int64) ([]byte, error) {
	return nil, errors.ErrUnsupported
}

func (m *mapStore) Create(context.Context, string, []byte, Attrs) error {
	return errors.ErrUnsupported
}

func (m *mapStore) Put(context.Context, string, []byte, Attrs) error { return errors.ErrUnsupported }

func (m *mapStore) Delete(context.Context, string) error { return errors.ErrUnsupported }

// threeRowsSize is the size of the tree of threeRows: three tile rows, partial
// tiles at the right edge of each.
const threeRowsSize = 3*TileWidth*TileWidth + 77

// threeRows returns the tree of threeRowsSize leaves and its root.
func threeRows(t *testing.T) (memTree, tlog.Hash) {
	var m memTree
	m.grow(t, threeRowsSize)
	root, err := tlog.TreeHash(threeRowsSize, &m)
	if err != nil {
		t.Fatal(err)
	}
	return m, root
}

// TestCachedInclusionMissingTile drops each tile of a tree of three tile rows from the
// cache in turn, with every tile in the store. A missing full tile under a cached
// parent is read from the store once, checked against the parent, cached and used; a
// missing partial tile, or one whose stored bytes differ, makes the cached path
// decline (ProveRecord's way then reads and judges it), caching nothing.
func TestCachedInclusionMissingTile(t *testing.T) {
	m, root := threeRows(t)
	const n = threeRowsSize
	var err error
	tiles := tlog.NewTiles(TileHeight, 0, n)
	store := &mapStore{objs: map[string][]byte{}}
	data := make([][]byte, len(tiles))
	for i, tile := range tiles {
		if data[i], err = tlog.ReadTileData(tile, &m); err != nil {
			t.Fatal(err)
		}
		store.objs[Prefix("p/").Key(TilePath(tile))] = data[i]
	}
	for _, tamper := range []bool{false, true} {
		for i, drop := range tiles {
			c, err := NewTileCache(1 << 12)
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(store, "p/", Tree{Size: n, Root: root}, c)
			for j, tile := range tiles {
				if tile != drop {
					c.add(r.tileKey(tile), &authTile{data: data[j]})
				}
			}
			key := Prefix("p/").Key(TilePath(drop))
			if tamper {
				bad := bytes.Clone(data[i])
				bad[len(bad)-1] ^= 1
				store.objs[key] = bad
			}
			// A leaf under the dropped tile, at its row's end (so the right edge
			// counts) when that is the leaves', else leaf 0 (every proof reads the tiles
			// above and the tree's right edge).
			index := int64(0)
			switch drop.L {
			case 0:
				index = drop.N*TileWidth + int64(drop.W) - 1
			case 1:
				index = drop.N * TileWidth * TileWidth
			}
			used := false
			for _, x := range mustIndexes(t, n, index) {
				if tl := tlog.TileForIndex(TileHeight, x); tl.L == drop.L && tl.N == drop.N {
					used = true
				}
			}
			store.reads = 0
			leaf, proof, ok := r.cachedInclusion(t.Context(), uint64(index), n)
			_, cached := c.get(r.tileKey(drop))
			fillable := drop.W == TileWidth && drop.L < 2 && used
			switch {
			case !used:
				if !ok || store.reads != 0 {
					t.Fatalf("tile %d (%v) is not on leaf %d's path, yet: ok %v, %d reads", i, drop, index, ok, store.reads)
				}
			case fillable && !tamper:
				if !ok || store.reads != 1 || !cached {
					t.Fatalf("full tile %d (%v) under a cached parent: ok %v, %d reads, cached %v", i, drop, ok, store.reads, cached)
				}
				if tlog.CheckRecord(proof, n, root, index, leaf) != nil {
					t.Fatalf("leaf %d's proof, with tile %d read from the store, does not verify", index, i)
				}
			default:
				if ok || cached {
					t.Fatalf("tile %d (%v), tampered %v, full %v: answered %v, cached %v", i, drop, tamper, drop.W == TileWidth, ok, cached)
				}
			}
			store.objs[key] = data[i]
		}
	}
}

// mustIndexes returns the stored hashes ProveRecord reads for leaf index in tree n,
// and the leaf's own.
func mustIndexes(t *testing.T, n, index int64) []int64 {
	var idx []int64
	_, err := tlog.ProveRecord(n, index, tlog.HashReaderFunc(func(xs []int64) ([]tlog.Hash, error) {
		idx = append(idx, xs...)
		return make([]tlog.Hash, len(xs)), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return append(idx, tlog.StoredHashIndex(0, index))
}

// BenchmarkCachedInclusion is an inclusion proof of a random leaf of a tree of 10^6
// leaves with every tile cached (a running service's steady state), the cached
// path alone: what GET /proof/inclusion spends below the catalog and HTTP. Random
// leaves over 3,900 leaf tiles, so the tiles' memory is mostly not in the CPU's
// caches, as in the service.
func BenchmarkCachedInclusion(b *testing.B) {
	const n = 1_000_000
	var m memTree
	m.grow(b, n)
	r := cachedReader(b, &m, n)
	m = nil // the tiles alone, as in the service
	for i := range uint64(n / TileWidth) {
		if _, _, ok := r.cachedInclusion(b.Context(), i*TileWidth, n); !ok { // inner levels computed
			b.Fatal("a tile is not cached")
		}
	}
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			if _, _, ok := r.cachedInclusion(b.Context(), rng.Uint64N(n), n); !ok {
				b.Error("a tile is not cached")
				return
			}
		}
	})
}

// TestCachedHashReaderFills checks consistency proofs and roots (cachedHashReader)
// with only the tiles above the leaves and the partial one at the tree's right edge
// cached: each leaf tile a call needs is read from the store once, checked against
// its cached parent and cached, and the answers equal x/mod's over the same hashes; a
// leaf tile whose stored bytes differ is not cached and the call fails with
// ErrMismatch.
func TestCachedHashReaderFills(t *testing.T) {
	m, root := threeRows(t)
	const n = threeRowsSize
	var err error
	store := &mapStore{objs: map[string][]byte{}}
	c, err := NewTileCache(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(store, "p/", Tree{Size: n, Root: root}, c)
	for _, tile := range tlog.NewTiles(TileHeight, 0, n) {
		data, err := tlog.ReadTileData(tile, &m)
		if err != nil {
			t.Fatal(err)
		}
		store.objs[Prefix("p/").Key(TilePath(tile))] = data
		if tile.L > 0 || tile.W < TileWidth { // all but the full leaf tiles
			c.add(r.tileKey(tile), &authTile{data: data})
		}
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		old := 1 + rng.Int64N(n-1)
		if old%TileWidth == 0 {
			old++
		}
		leafTile := tlog.Tile{H: TileHeight, L: 0, N: (old - 1) / TileWidth, W: TileWidth}
		_, wasCached := c.get(r.tileKey(leafTile))
		store.reads = 0
		// Through cachedHashReader alone: TileHashReader (which would read, check
		// and cache the tile too, at more cost) must not be needed.
		hr := &cachedHashReader{tiles: cachedTiles{ctx: t.Context(), r: r}, slow: tlog.HashReaderFunc(func([]int64) ([]tlog.Hash, error) {
			t.Fatalf("consistency %d to %d: a hash was not found in the cache or filled", old, n)
			return nil, nil
		})}
		got, err := tlog.ProveTree(n, old, hr)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tlog.ProveTree(n, old, &m)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("consistency %d to %d: %d hashes, ProveTree %d", old, n, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("consistency %d to %d: hash %d differs from ProveTree's", old, n, i)
			}
		}
		if _, cached := c.get(r.tileKey(leafTile)); !cached || (!wasCached && store.reads != 1) {
			t.Fatalf("consistency %d to %d: leaf tile %v cached %v after %d reads (cached before: %v)", old, n, leafTile, cached, store.reads, wasCached)
		}
		h, err := tlog.TreeHash(old, hr)
		if wantH, _ := tlog.TreeHash(old, &m); err != nil || h != wantH {
			t.Fatalf("TreeHash(%d) = %v, %v", old, h, err)
		}
		if p, err := r.ConsistencyProof(t.Context(), uint64(old), n); err != nil || len(p) != len(want) || p[0] != want[0] {
			t.Fatalf("Reader.ConsistencyProof(%d, %d): %d hashes, %v", old, n, len(p), err)
		}
	}
	// A leaf tile not cached, altered in the store.
	for n0 := int64(0); ; n0++ {
		tile := tlog.Tile{H: TileHeight, L: 0, N: n0, W: TileWidth}
		if _, cached := c.get(r.tileKey(tile)); cached {
			continue
		}
		key := Prefix("p/").Key(TilePath(tile))
		store.objs[key][5] ^= 1
		old := uint64(n0*TileWidth + 3)
		if _, err := r.ConsistencyProof(t.Context(), old, n); !errors.Is(err, ErrMismatch) {
			t.Fatalf("consistency %d to %d over an altered tile: %v, want ErrMismatch", old, n, err)
		}
		if _, cached := c.get(r.tileKey(tile)); cached {
			t.Fatal("the altered tile was cached")
		}
		break
	}
}
