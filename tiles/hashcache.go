package tiles

import (
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// Serving hashes from authenticated tiles without authenticating them again.
//
// x/mod's TileHashReader authenticates, on every call, every tile it uses against the
// trusted root: it re-hashes the tiles of the tree's right edge up to the root and each
// tile against its parent, and it computes a stored hash above a tile's bottom level by
// hashing the tile entries below it. An inclusion proof at 10^6 leaves so costs about
// a thousand SHA-256 (some 400 µs here) even with every tile cached. A tile path
// always names the same bytes, and the cache only holds tiles that were authenticated
// against a trusted root of the same log (SaveTiles), so once all the tiles a call
// needs are cached, the stored hashes can be read from them directly: leaf-level ones
// as they are, the ones above from the tile's inner levels, hashed once per cached
// tile. A call that needs a tile not yet cached goes through TileHashReader, which
// authenticates and caches it.

// authTile is a cached, authenticated tile and, once some call needed a hash above its
// bottom level, its inner levels.
type authTile struct {
	data []byte // the tile: W hashes of its bottom level
	once sync.Once
	// inner[k-1] are the hashes of level k within the tile (k = 1..TileHeight-1),
	// each of two below; a level holds W>>k of them.
	inner [][]tlog.Hash
}

// hash returns the hash at level k (0 ≤ k < TileHeight) within the tile, position j.
func (t *authTile) hash(k, j int) tlog.Hash {
	if k == 0 {
		var h tlog.Hash
		copy(h[:], t.data[j*tlog.HashSize:])
		return h
	}
	t.once.Do(t.expand)
	return t.inner[k-1][j]
}

func (t *authTile) expand() {
	w := len(t.data) / tlog.HashSize
	below := make([]tlog.Hash, w)
	for i := range below {
		copy(below[i][:], t.data[i*tlog.HashSize:])
	}
	for k := 1; k < TileHeight && w>>k > 0; k++ {
		level := make([]tlog.Hash, w>>k)
		for j := range level {
			level[j] = tlog.NodeHash(below[2*j], below[2*j+1])
		}
		t.inner = append(t.inner, level)
		below = level
	}
}

// cachedHashReader reads stored hashes of the trusted tree from cached authenticated
// tiles, and hands a call whose tiles are not all cached to TileHashReader.
type cachedHashReader struct {
	r    *Reader
	slow tlog.HashReader
}

func (c *cachedHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	n := int64(c.r.trusted.Size)
	out := make([]tlog.Hash, len(indexes))
	// A proof reads its hashes level by level, several from each tile: look each
	// tile up once.
	var at *authTile
	var atKey tileKey
	for i, x := range indexes {
		if x < 0 || x >= tlog.StoredHashIndex(0, n) {
			return c.slow.ReadHashes(indexes) // its error
		}
		t, k, j := treeTile(x, n)
		if key := c.r.prefix.tileKey(t); at == nil || key != atKey {
			var ok bool
			if at, ok = c.r.cache.c.Get(key); !ok {
				return c.slow.ReadHashes(indexes)
			}
			atKey = key
		}
		if (j+1)<<k > t.W {
			return c.slow.ReadHashes(indexes)
		}
		out[i] = at.hash(k, j)
	}
	return out, nil
}

// treeTile returns the tile of the tree of size n that holds stored hash x (at its
// width in that tree, as TileHashReader reads it), and x's level and position in it.
func treeTile(x, n int64) (t tlog.Tile, k, j int) {
	level, pos := tlog.SplitStoredHashIndex(x)
	t = tlog.Tile{H: TileHeight, L: level / TileHeight}
	k = level - t.L*TileHeight
	t.N = pos << uint(k) >> TileHeight
	j = int(pos - t.N<<TileHeight>>uint(k))
	t.W = TileWidth
	if last := n >> uint(t.L*TileHeight); t.N<<TileHeight+int64(t.W) >= last {
		t.W = int(last - t.N<<TileHeight)
	}
	return t, k, j
}
