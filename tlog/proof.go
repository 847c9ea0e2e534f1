package tlog

import (
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	sumdb "golang.org/x/mod/sumdb/tlog"
)

// HashReader reads stored hashes by their x/mod storage index
// (sumdb.StoredHashIndex(level, n)): the hashes of perfect subtrees. Tile readers and
// MemoryTree implement it.
type HashReader = sumdb.HashReader

// ErrProof wraps every proof that does not verify.
var ErrProof = errors.New("proof does not verify")

// VerifyInclusion checks an RFC 6962 inclusion proof of the leaf hash at index in the
// tree of the given size and root.
func VerifyInclusion(leafHash Hash, index, size uint64, path []Hash, root Hash) error {
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, leafHash[:], hashSlices(path), root[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrProof, err)
	}
	return nil
}

// VerifyConsistency checks an RFC 6962 consistency proof between two tree heads. An
// empty proof verifies when oldSize is 0, or when the sizes and roots are equal.
func VerifyConsistency(oldSize, newSize uint64, oldRoot, newRoot Hash, path []Hash) error {
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, oldSize, newSize, hashSlices(path), oldRoot[:], newRoot[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrProof, err)
	}
	return nil
}

// ProveInclusion builds the inclusion proof of leaf index in the tree of the given size,
// reading the perfect-subtree hashes it needs from r.
func ProveInclusion(index, size uint64, r HashReader) ([]Hash, error) {
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof: %w", err)
	}
	return rehash(nodes, r)
}

// ProveConsistency builds the consistency proof from oldSize to newSize, reading the
// perfect-subtree hashes it needs from r.
func ProveConsistency(oldSize, newSize uint64, r HashReader) ([]Hash, error) {
	nodes, err := proof.Consistency(oldSize, newSize)
	if err != nil {
		return nil, fmt.Errorf("consistency proof: %w", err)
	}
	return rehash(nodes, r)
}

func rehash(nodes proof.Nodes, r HashReader) ([]Hash, error) {
	if len(nodes.IDs) == 0 {
		return []Hash{}, nil
	}
	idx := make([]int64, len(nodes.IDs))
	for i, id := range nodes.IDs {
		idx[i] = sumdb.StoredHashIndex(int(id.Level), int64(id.Index))
	}
	hs, err := r.ReadHashes(idx)
	if err != nil {
		return nil, fmt.Errorf("read proof hashes: %w", err)
	}
	if len(hs) != len(idx) {
		return nil, fmt.Errorf("read proof hashes: got %d, want %d", len(hs), len(idx))
	}
	raw, err := nodes.Rehash(hashSlices(hs), rfc6962.DefaultHasher.HashChildren)
	if err != nil {
		return nil, fmt.Errorf("rehash proof: %w", err)
	}
	out := make([]Hash, len(raw))
	for i, h := range raw {
		copy(out[i][:], h)
	}
	return out, nil
}

func hashSlices(hs []Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

// MemoryTree is a whole Merkle tree kept in memory as x/mod stored hashes. It serves
// tests, test vectors and small tools; the service reads hashes from tiles instead.
type MemoryTree struct {
	stored []Hash
	size   uint64
}

// AppendLeafHash appends one leaf hash.
func (t *MemoryTree) AppendLeafHash(h Hash) error {
	hs, err := sumdb.StoredHashesForRecordHash(int64(t.size), h, t)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	t.stored = append(t.stored, hs...)
	t.size++
	return nil
}

// Size returns the number of leaves.
func (t *MemoryTree) Size() uint64 { return t.size }

// ReadHashes implements HashReader.
func (t *MemoryTree) ReadHashes(indexes []int64) ([]Hash, error) {
	out := make([]Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.stored)) {
			return nil, fmt.Errorf("stored hash %d not in a tree of %d leaves", x, t.size)
		}
		out[i] = t.stored[x]
	}
	return out, nil
}

// Root returns the root of the tree's first size leaves.
func (t *MemoryTree) Root(size uint64) (Hash, error) {
	if size > t.size {
		return Hash{}, fmt.Errorf("size %d beyond tree of %d leaves", size, t.size)
	}
	if size == 0 {
		return EmptyRoot, nil
	}
	return sumdb.TreeHash(int64(size), t)
}

// RootBuilder computes the root of a stream of leaf hashes in O(log n) memory.
type RootBuilder struct {
	r *compact.Range
}

// NewRootBuilder returns an empty RootBuilder.
func NewRootBuilder() *RootBuilder {
	return &RootBuilder{r: (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewEmptyRange(0)}
}

// Append adds the next leaf hash.
func (b *RootBuilder) Append(h Hash) {
	// Append only fails for a range not starting at 0 or a nil visitor error; neither
	// can happen here.
	_ = b.r.Append(h[:], nil)
}

// Size returns the number of leaves appended.
func (b *RootBuilder) Size() uint64 { return b.r.End() }

// Root returns the root of the leaves appended so far.
func (b *RootBuilder) Root() Hash {
	if b.r.End() == 0 {
		return EmptyRoot
	}
	raw, err := b.r.GetRootHash(nil)
	if err != nil {
		return Hash{} // unreachable: a range from 0 always has a root
	}
	var h Hash
	copy(h[:], raw)
	return h
}
