package tiles

import (
	"context"
	"math/bits"
	"sync/atomic"

	"golang.org/x/mod/sumdb/tlog"
)

// Inclusion proofs straight from cached tiles.
//
// x/mod's ProveRecord lists the stored hashes a proof needs, reads them through a
// HashReader and combines them by recursing over the tree; with every tile cached
// (cachedHashReader) that is still a dozen small allocations and a walk of the
// recursion per proof. An RFC 6962 inclusion proof is simpler read bottom-up: at
// each level the leaf's ancestor has a sibling, or none when it is the last node of
// its level and a left child; the sibling is a complete subtree (a stored hash),
// except for at most one on the tree's right edge, which covers the last leaves and
// is the right fold of the complete subtrees of their binary decomposition. So the
// proof is one stored hash per level, plus a few for that one node, each read from
// the tile that holds it. cachedInclusion does that when every tile is cached and
// reports failure otherwise, and the caller goes the way of ProveRecord, which reads,
// authenticates and caches the tiles.
//
// A leaf's own tile is the one most often not cached: a log of 10^9 leaves has four
// million of them. ProveRecord authenticates a tile it reads against the trusted root,
// re-hashing the tiles of the whole right edge and of the path up (some 400 µs at
// 10^6 leaves, more higher up). A full tile whose parent tile is cached needs less:
// its top hash is a stored hash in the parent, itself authenticated, so the tile is
// authentic when hashing it gives that hash, and hashing it is what computing its
// inner levels does anyway (fillTile).

// cachedInclusion returns the hash of leaf index and its inclusion proof in the tree
// of size size (index < size <= r.trusted.Size), reading only cached tiles of the
// trusted tree; ok is false when a tile it needs is not cached.
func (r *Reader) cachedInclusion(ctx context.Context, index, size uint64) (leaf tlog.Hash, proof []tlog.Hash, ok bool) {
	if r.cache == nil || r.edge != nil || index >= size || size > r.trusted.Size || r.trusted.Size > 1<<62 {
		return tlog.Hash{}, nil, false
	}
	hr := cachedTiles{ctx: ctx, r: r}
	// The leaf's tile first, and every hash of it the proof reads at once (touchPath).
	if leaf, ok = hr.stored(0, index); !ok {
		return tlog.Hash{}, nil, false
	}
	hr.sink = hr.last.touchPath(int(index % TileWidth))
	proof = make([]tlog.Hash, 0, bits.Len64(size-1))
	for level := 0; (size-1)>>level > 0; level++ {
		at, last := index>>level, (size-1)>>level
		if at == last && at%2 == 0 {
			continue // the last node of its level and a left child: no sibling
		}
		sib := at ^ 1
		var h tlog.Hash
		switch {
		case (sib+1)<<level <= size:
			h, ok = hr.stored(level, sib)
		case size == r.trusted.Size:
			h, ok = r.trustedRightEdge(&hr, level, sib<<level)
		default:
			h, ok = hr.rightEdge(sib<<level, size)
		}
		if !ok {
			return tlog.Hash{}, nil, false
		}
		proof = append(proof, h)
	}
	return leaf, proof, true
}

// maxFill bounds the tile rows fillTile climbs to find a cached parent: a proof at a
// billion leaves has four rows.
const maxFill = 4

// fillTile reads full tile n of tile row tl of the trusted tree from the store and
// caches and returns it if it hashes to its stored hash in its parent tile, which
// c.stored reads, filling the parent the same way when it is not cached either (up to
// maxFill rows). When it cannot (the store failed, a mismatch, or no cached
// ancestor), the caller takes ProveRecord's way, which returns the error that
// explains it.
func (c *cachedTiles) fillTile(tl int, n uint64) (*authTile, bool) {
	if tl >= maxFill || (n+1)*TileWidth > c.r.trusted.Size>>uint(tl*TileHeight) {
		return nil, false // too high, or not full: ProveRecord's way
	}
	// The tile's top hash: level TileHeight*(tl+1), position n, at the bottom of
	// tile n>>TileHeight of row tl+1.
	want, ok := c.stored(TileHeight*(tl+1), n)
	if !ok {
		return nil, false
	}
	tile := tlog.Tile{H: TileHeight, L: tl, N: int64(n), W: TileWidth}
	data, err := c.r.store.Get(c.ctx, c.r.prefix.Key(TilePath(tile)))
	if err != nil || len(data) != TileWidth*tlog.HashSize {
		return nil, false
	}
	at := &authTile{data: data}
	if at.top() != want {
		return nil, false
	}
	c.r.cache.add(c.r.tileKey(tile), at)
	return at, true
}

// cachedTiles reads stored hashes of a Reader's trusted tree from the cache, and full
// tiles not cached from the store, checked against their cached parents (fillTile).
type cachedTiles struct {
	ctx context.Context
	r   *Reader
	// the last tile looked up: a proof reads up to TileHeight levels from each
	last    *authTile
	lastKey tileKey
	sink    byte // authTile.touchPath's loads land here
}

// stored returns the hash of the complete subtree at level, position n (covering
// leaves [n<<level, (n+1)<<level)), from the tile of the trusted tree holding it.
func (c *cachedTiles) stored(level int, n uint64) (tlog.Hash, bool) {
	t, k, j := nodeTile(level, int64(n), int64(c.r.trusted.Size))
	if t.W <= 0 || (j+1)<<uint(k) > t.W {
		return tlog.Hash{}, false // not complete in the trusted tree
	}
	at, ok := c.tile(t)
	if !ok {
		return tlog.Hash{}, false
	}
	return at.hash(k, j), true
}

// tile returns tile t of the trusted tree (at its width there) from the cache, or a
// full one from the store through fillTile.
func (c *cachedTiles) tile(t tlog.Tile) (*authTile, bool) {
	key := c.r.tileKey(t)
	if c.last == nil || key != c.lastKey {
		at, ok := c.r.cache.get(key)
		if !ok && t.W == TileWidth {
			at, ok = c.fillTile(t.L, uint64(t.N))
		}
		if !ok {
			return nil, false
		}
		c.last, c.lastKey = at, key
	}
	return c.last, true
}

// trustedRightEdge returns rightEdge(start, r.trusted.Size), the node at level of the
// trusted tree's right edge, from r's memo or else computed and kept there.
func (r *Reader) trustedRightEdge(c *cachedTiles, level int, start uint64) (tlog.Hash, bool) {
	memo := r.rightEdge.Load()
	if memo == nil {
		r.rightEdge.CompareAndSwap(nil, new([64]atomic.Pointer[tlog.Hash]))
		memo = r.rightEdge.Load()
	}
	if h := memo[level].Load(); h != nil {
		return *h, true
	}
	h, ok := c.rightEdge(start, r.trusted.Size)
	if ok {
		memo[level].Store(&h)
	}
	return h, ok
}

// rightEdge returns the hash of the leaves [start, size), fewer than a power of two
// and start a multiple of a larger one: the complete subtrees of the binary
// decomposition of size-start, largest first, folded from the right.
func (c *cachedTiles) rightEdge(start, size uint64) (tlog.Hash, bool) {
	var parts [64]tlog.Hash
	np := 0
	for rest := size - start; rest > 0; np++ {
		level := bits.Len64(rest) - 1
		h, ok := c.stored(level, start>>uint(level))
		if !ok {
			return tlog.Hash{}, false
		}
		parts[np] = h
		start += 1 << uint(level)
		rest -= 1 << uint(level)
	}
	h := parts[np-1]
	for i := np - 2; i >= 0; i-- {
		h = tlog.NodeHash(parts[i], h)
	}
	return h, true
}
