package tiles

import (
	"context"
	"fmt"
	"sync"

	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
)

// NewEdgeReader returns a Reader of the tree trusted whose tiles are materialized
// only up to size published: the leaves [published, trusted.Size) are committed but
// not yet in any tile, and edge holds their leaf hashes, in order (the sequencer reads
// them from the catalog's committed index rows). It serves the same proofs as a Reader
// over a fully materialized tree: hashes of subtrees within the first published leaves
// come from the tiles, the others are computed from edge.
//
// Nothing is trusted unchecked: before its first answer the Reader reads the hashes
// that make up the root of the published tree from the tiles, combines them with edge
// into the root of the trusted tree and compares it with trusted.Root; a difference is
// ErrMismatch. Once that holds, the published tree's root is authenticated too, and
// every other tile read is authenticated against it, as by NewReader.
//
// With published == trusted.Size it is NewReader. cache may be nil.
func NewEdgeReader(s Store, p Prefix, trusted Tree, published uint64, edge []tlog.Hash, cache *TileCache) (*Reader, error) {
	if published > trusted.Size || trusted.Size-published != uint64(len(edge)) {
		return nil, fmt.Errorf("tiles: edge reader of %s: %d edge hashes for tree %d published to %d",
			p, len(edge), trusted.Size, published)
	}
	r := NewReader(s, p, trusted, cache)
	if published < trusted.Size {
		r.edge = &edgeState{published: published, leaves: edge}
	}
	return r, nil
}

// edgeState is the unmaterialized right edge of a Reader's tree, and the root of its
// published part once authenticated.
type edgeState struct {
	published uint64
	leaves    []tlog.Hash

	mu         sync.Mutex
	rootPub    tlog.Hash
	authorized bool

	// memo holds the hashes of subtrees of leaves computed so far: a Reader serves
	// every proof against its tree (the sequencer shares it), and the subtrees of
	// the edge are the same for all of them.
	memoMu sync.Mutex
	memo   map[node]tlog.Hash
}

// subtree returns the hash of nd, a perfect subtree of the edge's leaves
// [from, from+2^level) (from relative to published), computing it once.
func (e *edgeState) subtree(nd node, from uint64) tlog.Hash {
	e.memoMu.Lock()
	h, ok := e.memo[nd]
	e.memoMu.Unlock()
	if ok {
		return h
	}
	h = subtreeOf(e.leaves[from : from+1<<uint(nd.level)])
	e.memoMu.Lock()
	if e.memo == nil {
		e.memo = map[node]tlog.Hash{}
	}
	e.memo[nd] = h
	e.memoMu.Unlock()
	return h
}

// edgeHashReader returns a HashReader over the whole trusted tree for one call of
// withHashes, authenticating the published part on first use.
func (r *Reader) edgeHashReader(tr *tileReader) (tlog.HashReader, error) {
	e := r.edge
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.authorized {
		rootPub := sttlog.EmptyRoot
		if e.published > 0 {
			// The published tree's root as its tiles give it; trusted only once the
			// check below passes.
			var err error
			rootPub, err = tlog.TreeHash(int64(e.published), unauthenticatedHashes{tr: tr, size: e.published})
			if err != nil {
				return nil, fmt.Errorf("root of the published tree %d: %w", e.published, err)
			}
		}
		hr := r.combined(tr, rootPub)
		root, err := tlog.TreeHash(int64(r.trusted.Size), hr)
		if err != nil {
			return nil, err
		}
		if root != r.trusted.Root {
			return nil, fmt.Errorf("tiles up to %d and %d committed leaf hashes give root %v for size %d, committed root is %v: %w",
				e.published, len(e.leaves), root, r.trusted.Size, r.trusted.Root, ErrMismatch)
		}
		e.rootPub, e.authorized = rootPub, true
	}
	return r.combined(tr, e.rootPub), nil
}

func (r *Reader) combined(tr *tileReader, rootPub tlog.Hash) *edgeHashes {
	e := r.edge
	h := &edgeHashes{published: e.published, size: r.trusted.Size, edge: e}
	if e.published > 0 {
		h.base = tlog.TileHashReader(tlog.Tree{N: int64(e.published), Hash: rootPub}, tr)
	}
	return h
}

// unauthenticatedHashes reads stored hashes straight from the tiles of the tree of
// the given size, checking nothing; only for computing that tree's root, which the
// caller then authenticates.
type unauthenticatedHashes struct {
	tr   *tileReader
	size uint64
}

func (u unauthenticatedHashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	ts := make([]tlog.Tile, len(idx))
	for i, x := range idx {
		t, ok := storedTile(tlog.TileForIndex(TileHeight, x), u.size)
		if !ok {
			return nil, fmt.Errorf("hash %d is not in the tree of size %d", x, u.size)
		}
		ts[i] = t
	}
	data, err := u.tr.ReadTiles(ts)
	if err != nil {
		return nil, err
	}
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if out[i], err = tlog.HashFromTile(ts[i], data[i], x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// edgeHashes is a HashReader over a tree of size size whose first published leaves
// are in tiles (read through base) and whose other leaves' hashes are edge.leaves.
type edgeHashes struct {
	published, size uint64
	base            tlog.HashReader
	edge            *edgeState // its leaves are those beyond published
}

// node is a complete subtree: level and index at that level.
type node struct {
	level int
	n     uint64
}

func (n node) span() (start, end uint64) { return n.n << uint(n.level), (n.n + 1) << uint(n.level) }

// ReadHashes returns the stored hashes idx: those of subtrees within the published
// tree from base (in one call), the others computed.
func (h *edgeHashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	nodes := make([]node, len(idx))
	var baseIdx []int64
	for i, x := range idx {
		level, n := tlog.SplitStoredHashIndex(x)
		nodes[i] = node{level, uint64(n)}
		if _, end := nodes[i].span(); level > 62 || end > h.size {
			return nil, fmt.Errorf("hash %d is beyond the tree of size %d", x, h.size)
		}
		h.collect(nodes[i], &baseIdx)
	}
	known := make(map[int64]tlog.Hash, len(baseIdx))
	if len(baseIdx) > 0 {
		hs, err := h.base.ReadHashes(baseIdx)
		if err != nil {
			return nil, err
		}
		for i, x := range baseIdx {
			known[x] = hs[i]
		}
	}
	out := make([]tlog.Hash, len(idx))
	for i, nd := range nodes {
		out[i] = h.compute(nd, known)
	}
	return out, nil
}

// collect adds the indexes of the published subtrees that nd's hash is made of.
func (h *edgeHashes) collect(nd node, into *[]int64) {
	start, end := nd.span()
	switch {
	case end <= h.published:
		*into = append(*into, tlog.StoredHashIndex(nd.level, int64(nd.n)))
	case start >= h.published:
	default:
		h.collect(node{nd.level - 1, 2 * nd.n}, into)
		h.collect(node{nd.level - 1, 2*nd.n + 1}, into)
	}
}

func (h *edgeHashes) compute(nd node, known map[int64]tlog.Hash) tlog.Hash {
	start, end := nd.span()
	switch {
	case end <= h.published:
		return known[tlog.StoredHashIndex(nd.level, int64(nd.n))]
	case start >= h.published:
		return h.edge.subtree(nd, start-h.published)
	default:
		return tlog.NodeHash(h.compute(node{nd.level - 1, 2 * nd.n}, known), h.compute(node{nd.level - 1, 2*nd.n + 1}, known))
	}
}

// subtreeOf returns the root of the perfect subtree over hs, a power of two of them.
func subtreeOf(hs []tlog.Hash) tlog.Hash {
	if len(hs) == 1 {
		return hs[0]
	}
	half := len(hs) / 2
	return tlog.NodeHash(subtreeOf(hs[:half]), subtreeOf(hs[half:]))
}

// HashTile returns the bytes of hash tile t (full or partial, t.L >= 0) of the trusted
// tree, computed from its hashes, which are authenticated like every other answer of
// the Reader: the bytes the tile object holds, or will hold once materialized. A tile
// reaching beyond the trusted tree is ErrNotFound.
func (r *Reader) HashTile(ctx context.Context, t tlog.Tile) ([]byte, error) {
	if t.H != TileHeight || t.L < 0 || t.L > 7 || t.N < 0 || t.W < 1 || t.W > TileWidth {
		return nil, fmt.Errorf("tiles: hash tile %v: not a hash tile of this log", t)
	}
	last := uint64(t.N)*TileWidth + uint64(t.W) // hashes at level t.L up to the tile's end
	if last > 1<<(62-uint(t.L)*TileHeight) || last<<(uint(t.L)*TileHeight) > r.trusted.Size {
		return nil, fmt.Errorf("tiles: %s%s beyond tree size %d: %w", r.prefix, TilePath(t), r.trusted.Size, ErrNotFound)
	}
	var data []byte
	err := r.withHashes(ctx, func(hr tlog.HashReader) (err error) {
		data, err = tlog.ReadTileData(t, hr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tiles: %s%s: %w", r.prefix, TilePath(t), err)
	}
	return data, nil
}
