package tiles_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"
)

// synthLeaf is the data of leaf i of the synthetic test trees.
func synthLeaf(i uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("leaf-"), i)
}

func synthLeaves(start, end uint64) [][]byte {
	ls := make([][]byte, 0, end-start)
	for i := start; i < end; i++ {
		ls = append(ls, synthLeaf(i))
	}
	return ls
}

// refTree is an independent in-memory reference for RFC 6962 proofs: hashing written
// here from the RFC and proof node lists from transparency-dev/merkle, not from x/mod
// or the tiles code. To stay small for 10^7 leaves it keeps node hashes at levels >= 8
// only and recomputes lower ones from the leaves (memoized for small trees).
type refTree struct {
	leaf  func(uint64) []byte
	size  uint64
	upper [][][32]byte // upper[l-8][i] is node (l, i), l >= 8
	low   map[compact.NodeID][32]byte
	roots map[uint64]tlog.Hash
}

var hasher = rfc6962.DefaultHasher

func newRefTree(leaf func(uint64) []byte) *refTree {
	return &refTree{leaf: leaf, low: make(map[compact.NodeID][32]byte), roots: make(map[uint64]tlog.Hash)}
}

func refLeafHash(data []byte) [32]byte {
	var buf [64]byte
	return sha256.Sum256(append(append(buf[:0], 0), data...))
}

func refNodeHash(l, r [32]byte) [32]byte {
	var buf [65]byte
	buf[0] = 1
	copy(buf[1:], l[:])
	copy(buf[33:], r[:])
	return sha256.Sum256(buf[:])
}

// grow extends the tree to size leaves, computing the nodes at levels >= 8.
func (r *refTree) grow(size uint64) {
	if len(r.upper) == 0 {
		r.upper = make([][][32]byte, 1)
	}
	r.size = max(r.size, size)
	for b := uint64(len(r.upper[0])); (b+1)*256 <= size; b++ {
		r.upper[0] = append(r.upper[0], r.compute(compact.NewNodeID(8, b)))
		for l := 1; ; l++ {
			below := r.upper[l-1]
			if len(below)%2 != 0 {
				break
			}
			if l == len(r.upper) {
				r.upper = append(r.upper, nil)
			}
			r.upper[l] = append(r.upper[l], refNodeHash(below[len(below)-2], below[len(below)-1]))
		}
	}
}

func (r *refTree) compute(id compact.NodeID) [32]byte {
	if id.Level == 0 {
		return refLeafHash(r.leaf(id.Index))
	}
	return refNodeHash(r.node(compact.NewNodeID(id.Level-1, id.Index*2)), r.node(compact.NewNodeID(id.Level-1, id.Index*2+1)))
}

func (r *refTree) node(id compact.NodeID) [32]byte {
	if end := (id.Index + 1) << id.Level; end > r.size {
		panic(fmt.Sprintf("refTree: node %+v beyond size %d", id, r.size))
	}
	if id.Level >= 8 {
		return r.upper[id.Level-8][id.Index]
	}
	if r.size > 1<<16 {
		return r.compute(id)
	}
	if h, ok := r.low[id]; ok {
		return h
	}
	h := r.compute(id)
	r.low[id] = h
	return h
}

func (r *refTree) nodes(ids []compact.NodeID) [][]byte {
	hs := make([][]byte, len(ids))
	for i, id := range ids {
		h := r.node(id)
		hs[i] = h[:]
	}
	return hs
}

func (r *refTree) root(size uint64) tlog.Hash {
	if h, ok := r.roots[size]; ok {
		return h
	}
	if size == 0 {
		return tlog.Hash(hasher.EmptyRoot())
	}
	hs := r.nodes(compact.RangeNodes(0, size, nil))
	h := hs[len(hs)-1]
	for i := len(hs) - 2; i >= 0; i-- {
		n := refNodeHash([32]byte(hs[i]), [32]byte(h))
		h = n[:]
	}
	r.roots[size] = tlog.Hash(h)
	return tlog.Hash(h)
}

func (r *refTree) inclusion(index, size uint64) [][]byte {
	n, err := proof.Inclusion(index, size)
	if err != nil {
		panic(err)
	}
	p, err := n.Rehash(r.nodes(n.IDs), hasher.HashChildren)
	if err != nil {
		panic(err)
	}
	return p
}

func (r *refTree) consistency(old, size uint64) [][]byte {
	n, err := proof.Consistency(old, size)
	if err != nil {
		panic(err)
	}
	p, err := n.Rehash(r.nodes(n.IDs), hasher.HashChildren)
	if err != nil {
		panic(err)
	}
	return p
}

func hashesEqual(a []tlog.Hash, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i][:]) != string(b[i]) {
			return false
		}
	}
	return true
}

func toBytes(hs []tlog.Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

// synthStore is a Store for very large synthetic trees: level-0 hash tiles and entry
// bundles, which are most of a log's bytes, are not kept but regenerated from
// synthLeaf on read (after checking, on write, that they are what the generator
// gives); every other object goes to a mem.Store.
type synthStore struct {
	*mem.Store
	checkWrites bool
}

func newSynthStore() *synthStore { return &synthStore{Store: mem.New(), checkWrites: true} }

func (s *synthStore) generated(key string) (tlog.Tile, bool) {
	_, path, ok := strings.Cut(key, "/events/")
	if !ok {
		return tlog.Tile{}, false
	}
	t, err := tiles.ParseTilePath(path)
	if err != nil || t.L > 0 {
		return tlog.Tile{}, false
	}
	return t, true
}

func synthTile(t tlog.Tile) []byte {
	start := uint64(t.N) * tiles.TileWidth
	if t.L == tiles.EntriesLevel {
		b, err := tiles.MarshalEntryBundle(synthLeaves(start, start+uint64(t.W)))
		if err != nil {
			panic(err)
		}
		return b
	}
	data := make([]byte, 0, t.W*tlog.HashSize)
	for i := start; i < start+uint64(t.W); i++ {
		h := tlog.RecordHash(synthLeaf(i))
		data = append(data, h[:]...)
	}
	return data
}

func (s *synthStore) Get(ctx context.Context, key string) ([]byte, error) {
	if t, ok := s.generated(key); ok {
		if _, err := s.Store.Get(ctx, key); err != nil {
			return nil, err // counts the read and reports never-written objects
		}
		return synthTile(t), nil
	}
	return s.Store.Get(ctx, key)
}

func (s *synthStore) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	if t, ok := s.generated(key); ok {
		if s.checkWrites && string(synthTile(t)) != string(data) {
			return fmt.Errorf("synthStore: %s is not the synthetic tile", key)
		}
		return s.Store.Create(ctx, key, nil, a)
	}
	return s.Store.Create(ctx, key, data, a)
}

// buildLog materializes the synthetic leaves [0, size) into s under p, in batches
// ending at every size in ends (sorted, the last one size) and otherwise at most
// maxBatch leaves, each through a fresh Writer every few batches so that both the
// cached and the stored right edge are exercised.
func buildLog(t testing.TB, s tiles.Store, p tiles.Prefix, ref *refTree, ends []uint64, maxBatch uint64) {
	t.Helper()
	ctx := context.Background()
	var w *tiles.Writer
	size := uint64(0)
	for i, end := range ends {
		for size < end {
			next := min(end, size+maxBatch)
			ref.grow(next)
			if w == nil || i%3 == 0 {
				w = tiles.NewWriter(s, p, nil)
			}
			if err := w.Materialize(ctx, size, synthLeaves(size, next), ref.root(next)); err != nil {
				t.Fatalf("Materialize(%d, %d leaves): %v", size, next-size, err)
			}
			size = next
		}
	}
}

func (s *synthStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	data, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if off+n > int64(len(data)) {
		return nil, tiles.ErrShortObject
	}
	return data[off : off+n], nil
}
