package tiles

import (
	"sync"
	"sync/atomic"

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
	data []byte      // the tile: W hashes of its bottom level
	used atomic.Bool // looked up since the cache's clock hand last passed (tilecache.go)
	once sync.Once
	// inner holds the hashes of levels 1..TileHeight-1 within the tile, each of two
	// below, level after level in one array: level k (W>>k hashes) starts at
	// start[k], after the levels below it. One array, not one per level, so that a
	// proof's reads of several levels of a tile no longer in the CPU's caches are
	// independent loads the CPU overlaps, not chains of them.
	inner []tlog.Hash
	start [TileHeight]int
}

// hash returns the hash at level k (0 ≤ k < TileHeight) within the tile, position j.
func (t *authTile) hash(k, j int) tlog.Hash {
	if k == 0 {
		var h tlog.Hash
		copy(h[:], t.data[j*tlog.HashSize:])
		return h
	}
	t.once.Do(t.expand)
	return t.inner[t.start[k]+j]
}

// top returns the hash of the whole tile, a full one: of its two hashes at level
// TileHeight-1.
func (t *authTile) top() tlog.Hash {
	t.once.Do(t.expand)
	top := t.inner[t.start[TileHeight-1]:]
	return tlog.NodeHash(top[0], top[1])
}

// touchPath reads one byte of bottom-level hash j and of each inner hash on its path
// to the tile's top (the siblings a proof reads) and returns them xored, so that
// their cache misses, independent loads, overlap instead of coming one by one as
// the proof reads level after level.
func (t *authTile) touchPath(j int) byte {
	t.once.Do(t.expand)
	x := t.data[j*tlog.HashSize] // and its sibling's, in the same cache line
	for k := 1; k < TileHeight; k++ {
		if i := t.start[k] + ((j >> k) ^ 1); i < len(t.inner) {
			x ^= t.inner[i][0]
		}
	}
	return x
}

func (t *authTile) expand() {
	w := len(t.data) / tlog.HashSize
	total := 0
	for k := 1; k < TileHeight; k++ {
		t.start[k] = total
		total += w >> k
	}
	inner := make([]tlog.Hash, total)
	below := func(i int) (h tlog.Hash) {
		copy(h[:], t.data[i*tlog.HashSize:])
		return h
	}
	for k := 1; k < TileHeight && w>>k > 0; k++ {
		level := inner[t.start[k] : t.start[k]+w>>k]
		prev := inner[t.start[k-1]:] // level k-1, for k > 1
		for j := range level {
			if k == 1 {
				level[j] = tlog.NodeHash(below(2*j), below(2*j+1))
			} else {
				level[j] = tlog.NodeHash(prev[2*j], prev[2*j+1])
			}
		}
	}
	t.inner = inner
}

// cachedHashReader reads stored hashes of the trusted tree as cachedInclusion does
// (cachedTiles, inclusion.go: cached tiles, or full tiles read and checked against
// their cached parents), and hands a call whose hashes are not all available so to
// TileHashReader.
type cachedHashReader struct {
	tiles cachedTiles
	slow  tlog.HashReader
}

func (c *cachedHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	n := int64(c.tiles.r.trusted.Size)
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= tlog.StoredHashIndex(0, n) {
			return c.slow.ReadHashes(indexes) // its error
		}
		level, pos := tlog.SplitStoredHashIndex(x)
		h, ok := c.tiles.stored(level, uint64(pos))
		if !ok {
			return c.slow.ReadHashes(indexes)
		}
		out[i] = h
	}
	return out, nil
}

// nodeTile returns the tile of the tree of size n that holds the complete subtree at
// level, position pos (at its width in that tree, as TileHashReader reads it; not
// positive for a tile beyond the tree), and the subtree's level and position in it.
func nodeTile(level int, pos, n int64) (t tlog.Tile, k, j int) {
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
