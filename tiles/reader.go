package tiles

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sync/errgroup"
)

// A Tree is a tree size and its root hash.
type Tree struct {
	Size uint64
	Root tlog.Hash
}

// A Reader reads proofs, leaf hashes and entries of one log from its tiles, for
// any tree size up to that of a tree the caller trusts (from the catalog). Every
// tile it uses is authenticated against the trusted root, so a proof it returns is
// correct or it returns an error wrapping ErrMismatch (storage altered) or
// ErrNotFound (a tile missing: the tree was not materialized yet).
//
// A Reader is cheap; create one per request. It is safe for concurrent use.
// An inclusion proof for a tree of a billion leaves reads at most about six tiles
// with a cold cache, fewer warm: the right edge of the trusted tree, shared by all
// proofs, plus one tile per level on the leaf's path.
type Reader struct {
	store   Store
	prefix  Prefix
	trusted Tree
	cache   *TileCache
	cacheID uint64     // the log's number in cache's keys
	edge    *edgeState // nil unless the trusted tree is only partly materialized

	// rightEdge memoizes the hashes of the trusted tree's incomplete right-edge
	// nodes, by level, which nearly every inclusion proof includes (inclusion.go);
	// allocated on first use.
	rightEdge atomic.Pointer[[64]atomic.Pointer[tlog.Hash]]
}

// NewReader returns a Reader of the log under prefix p in s, trusting tree. cache may
// be nil.
func NewReader(s Store, p Prefix, trusted Tree, cache *TileCache) *Reader {
	r := &Reader{store: s, prefix: p, trusted: trusted, cache: cache}
	if cache != nil {
		r.cacheID = cache.logID(p)
	}
	return r
}

// InclusionProof returns the RFC 6962 inclusion proof of leaf index in the tree of
// size size, index < size <= the trusted size.
func (r *Reader) InclusionProof(ctx context.Context, index, size uint64) ([]tlog.Hash, error) {
	if index >= size || size > r.trusted.Size {
		return nil, fmt.Errorf("tiles: inclusion proof of leaf %d in tree %d (trusted size %d): out of range", index, size, r.trusted.Size)
	}
	if _, p, ok := r.cachedInclusion(ctx, index, size); ok {
		return p, nil
	}
	var p tlog.RecordProof
	err := r.withHashes(ctx, func(hr tlog.HashReader) (err error) {
		p, err = tlog.ProveRecord(int64(size), int64(index), hr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tiles: inclusion proof of leaf %d in tree %d of %s: %w", index, size, r.prefix, err)
	}
	return p, nil
}

// InclusionProofLeaf returns the hash of leaf index and its InclusionProof in the tree
// of size size, in one pass over the tiles.
func (r *Reader) InclusionProofLeaf(ctx context.Context, index, size uint64) (tlog.Hash, []tlog.Hash, error) {
	if index >= size || size > r.trusted.Size {
		return tlog.Hash{}, nil, fmt.Errorf("tiles: inclusion proof of leaf %d in tree %d (trusted size %d): out of range", index, size, r.trusted.Size)
	}
	if leaf, p, ok := r.cachedInclusion(ctx, index, size); ok {
		return leaf, p, nil
	}
	var p tlog.RecordProof
	var leaf []tlog.Hash
	err := r.withHashes(ctx, func(hr tlog.HashReader) (err error) {
		if p, err = tlog.ProveRecord(int64(size), int64(index), hr); err != nil {
			return err
		}
		leaf, err = hr.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(index))})
		return err
	})
	if err != nil {
		return tlog.Hash{}, nil, fmt.Errorf("tiles: inclusion proof of leaf %d in tree %d of %s: %w", index, size, r.prefix, err)
	}
	return leaf[0], p, nil
}

// ConsistencyProof returns the RFC 6962 consistency proof from the tree of size
// oldSize to the tree of size newSize, oldSize <= newSize <= the trusted size. It is
// empty when oldSize is 0 or equals newSize.
func (r *Reader) ConsistencyProof(ctx context.Context, oldSize, newSize uint64) ([]tlog.Hash, error) {
	if oldSize > newSize || newSize > r.trusted.Size {
		return nil, fmt.Errorf("tiles: consistency proof %d to %d (trusted size %d): out of range", oldSize, newSize, r.trusted.Size)
	}
	if oldSize == 0 || oldSize == newSize {
		return []tlog.Hash{}, nil
	}
	var p tlog.TreeProof
	err := r.withHashes(ctx, func(hr tlog.HashReader) (err error) {
		p, err = tlog.ProveTree(int64(newSize), int64(oldSize), hr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tiles: consistency proof %d to %d of %s: %w", oldSize, newSize, r.prefix, err)
	}
	return p, nil
}

// TreeHash returns the root of the tree of size size <= the trusted size.
func (r *Reader) TreeHash(ctx context.Context, size uint64) (tlog.Hash, error) {
	if size > r.trusted.Size {
		return tlog.Hash{}, fmt.Errorf("tiles: root of tree %d (trusted size %d): out of range", size, r.trusted.Size)
	}
	if size == 0 {
		return sttlog.EmptyRoot, nil
	}
	var h tlog.Hash
	err := r.withHashes(ctx, func(hr tlog.HashReader) (err error) {
		h, err = tlog.TreeHash(int64(size), hr)
		return err
	})
	if err != nil {
		return tlog.Hash{}, fmt.Errorf("tiles: root of tree %d of %s: %w", size, r.prefix, err)
	}
	return h, nil
}

// LeafHash returns the hash of leaf index, index < the trusted size.
func (r *Reader) LeafHash(ctx context.Context, index uint64) (tlog.Hash, error) {
	if index >= r.trusted.Size {
		return tlog.Hash{}, fmt.Errorf("tiles: leaf hash %d (trusted size %d): out of range", index, r.trusted.Size)
	}
	hs, err := r.LeafHashes(ctx, index, index+1)
	if err != nil {
		return tlog.Hash{}, err
	}
	return hs[0], nil
}

// MaxLeafHashes bounds the leaves one LeafHashes call returns.
const MaxLeafHashes = 1 << 16

// LeafHashes returns the hashes of leaves [start, end), end <= the trusted size, at
// most MaxLeafHashes of them.
func (r *Reader) LeafHashes(ctx context.Context, start, end uint64) ([]tlog.Hash, error) {
	if start > end || end > r.trusted.Size || end-start > MaxLeafHashes {
		return nil, fmt.Errorf("tiles: leaf hashes [%d, %d) (trusted size %d): out of range", start, end, r.trusted.Size)
	}
	idx := make([]int64, 0, end-start)
	for i := start; i < end; i++ {
		idx = append(idx, tlog.StoredHashIndex(0, int64(i)))
	}
	var hs []tlog.Hash
	err := r.withHashes(ctx, func(hr tlog.HashReader) (err error) {
		hs, err = hr.ReadHashes(idx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tiles: leaf hashes [%d, %d) of %s: %w", start, end, r.prefix, err)
	}
	return hs, nil
}

// EntryBundle returns the entries (leaf data) of entry bundle n of the trusted tree,
// after checking that each hashes to its leaf hash in the tree. It has TileWidth
// entries, or fewer for the trusted tree's last bundle. Of a Reader from
// NewEdgeReader it returns only bundles of the materialized part.
func (r *Reader) EntryBundle(ctx context.Context, n uint64) ([][]byte, error) {
	size := r.trusted.Size
	if r.edge != nil {
		size = r.edge.published // bundles beyond are not materialized yet
	}
	t, ok := storedTile(tlog.Tile{H: TileHeight, L: EntriesLevel, N: int64(n)}, size)
	if !ok || n > 1<<55 {
		return nil, fmt.Errorf("tiles: entry bundle %d beyond materialized size %d", n, size)
	}
	path := TilePath(t)
	data, err := r.store.Get(ctx, r.prefix.Key(path))
	if err != nil {
		return nil, fmt.Errorf("tiles: read %s%s: %w", r.prefix, path, err)
	}
	es, err := ParseEntryBundle(data, t.W)
	if err != nil {
		return nil, fmt.Errorf("tiles: %s%s: %w: %w", r.prefix, path, ErrMismatch, err)
	}
	hs, err := r.LeafHashes(ctx, n*TileWidth, n*TileWidth+uint64(t.W))
	if err != nil {
		return nil, err
	}
	for i, e := range es {
		if tlog.RecordHash(e) != hs[i] {
			return nil, fmt.Errorf("tiles: %s%s: entry %d does not match its leaf hash: %w", r.prefix, path, i, ErrMismatch)
		}
	}
	return es, nil
}

// withHashes runs f with a HashReader over the trusted tree's tiles, and marks an
// error that did not come from the store as a mismatch.
func (r *Reader) withHashes(ctx context.Context, f func(tlog.HashReader) error) error {
	if r.trusted.Size > 1<<62 {
		return fmt.Errorf("trusted tree size %d out of range", r.trusted.Size)
	}
	tr := &tileReader{ctx: ctx, r: r}
	var err error
	if r.edge != nil {
		var hr tlog.HashReader
		if hr, err = r.edgeHashReader(tr); err == nil {
			err = f(hr)
		}
	} else {
		var hr tlog.HashReader = tlog.TileHashReader(tlog.Tree{N: int64(r.trusted.Size), Hash: r.trusted.Root}, tr)
		if r.cache != nil {
			hr = &cachedHashReader{tiles: cachedTiles{ctx: ctx, r: r}, slow: hr}
		}
		err = f(hr)
	}
	if err != nil && !tr.storeFailed() {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	return err
}

// tileReader adapts a Reader to x/mod's TileReader for one call.
type tileReader struct {
	ctx context.Context
	r   *Reader

	mu       sync.Mutex
	storeErr bool
}

var _ tlog.TileReader = (*tileReader)(nil)

func (t *tileReader) Height() int { return TileHeight }

func (t *tileReader) storeFailed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.storeErr
}

// ReadTiles reads tiles, from the cache or else in parallel from the store.
func (t *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	g, ctx := errgroup.WithContext(t.ctx)
	for i, tile := range tiles {
		if t.r.cache != nil {
			if at, ok := t.r.cache.get(t.r.tileKey(tile)); ok {
				out[i] = at.data
				continue
			}
		}
		key := t.r.prefix.Key(TilePath(tile))
		g.Go(func() error {
			data, err := t.r.store.Get(ctx, key)
			if err != nil {
				t.mu.Lock()
				t.storeErr = true
				t.mu.Unlock()
				return fmt.Errorf("read %s: %w", key, err)
			}
			if len(data) != tile.W*tlog.HashSize {
				return fmt.Errorf("%s has %d bytes, want %d", key, len(data), tile.W*tlog.HashSize)
			}
			out[i] = data
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// SaveTiles is called by x/mod with tiles it authenticated; they go in the cache.
func (t *tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	if t.r.cache == nil {
		return
	}
	for i, tile := range tiles {
		// An entry already cached keeps its inner levels.
		t.r.cache.add(t.r.tileKey(tile), &authTile{data: data[i]})
	}
}
