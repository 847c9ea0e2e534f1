package tlog

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// The naive reference: RFC 6962 section 2.1 MTH, PATH and PROOF written as recursion over
// a slice of leaf hashes, exactly as the RFC states them, sharing no code with the
// package under test.

func refSplit(n int) int { return 1 << (bits.Len(uint(n-1)) - 1) } // largest power of 2 < n

func refRoot(leaves []Hash) Hash {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return leaves[0]
	}
	k := refSplit(len(leaves))
	l, r := refRoot(leaves[:k]), refRoot(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func refPath(m int, leaves []Hash) []Hash {
	if len(leaves) <= 1 {
		return nil
	}
	k := refSplit(len(leaves))
	if m < k {
		return append(refPath(m, leaves[:k]), refRoot(leaves[k:]))
	}
	return append(refPath(m-k, leaves[k:]), refRoot(leaves[:k]))
}

func refProof(m int, leaves []Hash) []Hash { return refSubproof(m, leaves, true) }

func refSubproof(m int, leaves []Hash, b bool) []Hash {
	n := len(leaves)
	if m == n {
		if b {
			return nil
		}
		return []Hash{refRoot(leaves)}
	}
	k := refSplit(n)
	if m <= k {
		return append(refSubproof(m, leaves[:k], b), refRoot(leaves[k:]))
	}
	return append(refSubproof(m-k, leaves[k:], false), refRoot(leaves[:k]))
}

func testLeaves(n int) []Hash {
	out := make([]Hash, n)
	for i := range out {
		out[i] = LeafHash(binary.BigEndian.AppendUint64([]byte("leaf-"), uint64(i)))
	}
	return out
}

func buildTree(t testing.TB, leaves []Hash) *MemoryTree {
	t.Helper()
	var tr MemoryTree
	for _, h := range leaves {
		if err := tr.AppendLeafHash(h); err != nil {
			t.Fatal(err)
		}
	}
	return &tr
}

func equalHashes(a, b []Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestProofsAgainstReference checks every inclusion and consistency proof of every tree
// of up to 300 leaves against the reference, and that each verifies.
func TestProofsAgainstReference(t *testing.T) {
	const maxN = 300
	leaves := testLeaves(maxN)
	tr := buildTree(t, leaves)
	roots := make([]Hash, maxN+1)
	for n := 0; n <= maxN; n++ {
		roots[n] = refRoot(leaves[:n])
		got, err := tr.Root(uint64(n))
		if err != nil || got != roots[n] {
			t.Fatalf("root(%d) = %x, %v; want %x", n, got, err, roots[n])
		}
	}
	for n := 1; n <= maxN; n++ {
		for m := 0; m < n; m++ {
			p, err := ProveInclusion(uint64(m), uint64(n), tr)
			if err != nil {
				t.Fatalf("inclusion(%d,%d): %v", m, n, err)
			}
			if want := refPath(m, leaves[:n]); !equalHashes(p, want) {
				t.Fatalf("inclusion(%d,%d) differs from reference", m, n)
			}
			if err := VerifyInclusion(leaves[m], uint64(m), uint64(n), p, roots[n]); err != nil {
				t.Fatalf("inclusion(%d,%d) does not verify: %v", m, n, err)
			}
		}
	}
	for n := 1; n <= maxN; n++ {
		for m := 0; m <= n; m++ {
			p, err := ProveConsistency(uint64(m), uint64(n), tr)
			if err != nil {
				t.Fatalf("consistency(%d,%d): %v", m, n, err)
			}
			var want []Hash
			if m > 0 {
				want = refProof(m, leaves[:n])
			}
			if !equalHashes(p, want) {
				t.Fatalf("consistency(%d,%d) differs from reference: %d vs %d hashes", m, n, len(p), len(want))
			}
			if err := VerifyConsistency(uint64(m), uint64(n), roots[m], roots[n], p); err != nil {
				t.Fatalf("consistency(%d,%d) does not verify: %v", m, n, err)
			}
		}
	}
}

// TestProofsLargeRandom cross-checks random proofs in larger trees.
func TestProofsLargeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	leaves := testLeaves(5000)
	tr := buildTree(t, leaves)
	for range 40 {
		n := 1 + rng.IntN(len(leaves))
		m := rng.IntN(n)
		root := refRoot(leaves[:n])
		p, err := ProveInclusion(uint64(m), uint64(n), tr)
		if err != nil || !equalHashes(p, refPath(m, leaves[:n])) {
			t.Fatalf("inclusion(%d,%d) wrong: %v", m, n, err)
		}
		if err := VerifyInclusion(leaves[m], uint64(m), uint64(n), p, root); err != nil {
			t.Fatal(err)
		}
		c, err := ProveConsistency(uint64(m), uint64(n), tr)
		if err != nil {
			t.Fatal(err)
		}
		if m > 0 && !equalHashes(c, refProof(m, leaves[:n])) {
			t.Fatalf("consistency(%d,%d) differs from reference", m, n)
		}
		if err := VerifyConsistency(uint64(m), uint64(n), refRoot(leaves[:m]), root, c); err != nil {
			t.Fatal(err)
		}
	}
}

func flipBit(h Hash, bit int) Hash {
	h[bit/8] ^= 1 << (bit % 8)
	return h
}

// TestProofBitFlipsRejected changes every bit of every proof hash, of the root, of the
// leaf hash and of the size and index in turn; no changed input may verify.
func TestProofBitFlipsRejected(t *testing.T) {
	leaves := testLeaves(300)
	tr := buildTree(t, leaves)
	cases := [][2]int{{0, 1}, {0, 2}, {1, 2}, {3, 7}, {6, 7}, {0, 256}, {255, 256}, {17, 257}, {256, 257}, {100, 300}, {299, 300}}
	for _, c := range cases {
		m, n := c[0], c[1]
		root := refRoot(leaves[:n])
		p, _ := ProveInclusion(uint64(m), uint64(n), tr)
		for i := range p {
			for b := range 256 {
				q := append([]Hash(nil), p...)
				q[i] = flipBit(q[i], b)
				if VerifyInclusion(leaves[m], uint64(m), uint64(n), q, root) == nil {
					t.Fatalf("inclusion(%d,%d): flipped bit %d of hash %d verified", m, n, b, i)
				}
			}
		}
		for b := range 256 {
			if VerifyInclusion(leaves[m], uint64(m), uint64(n), p, flipBit(root, b)) == nil {
				t.Fatalf("inclusion(%d,%d): flipped root bit %d verified", m, n, b)
			}
			if VerifyInclusion(flipBit(leaves[m], b), uint64(m), uint64(n), p, root) == nil {
				t.Fatalf("inclusion(%d,%d): flipped leaf bit %d verified", m, n, b)
			}
		}
		for b := range 64 {
			if VerifyInclusion(leaves[m], uint64(m)^(1<<b), uint64(n), p, root) == nil {
				t.Fatalf("inclusion(%d,%d): flipped index bit %d verified", m, n, b)
			}
			// RFC 6962 inclusion proofs bind the size only through the root: where the
			// leaf's right sibling is an opaque subtree hash, the same path and root also
			// verify for another size with the same path shape (index 3 at sizes 6 and 7).
			// A signed tree head binds (size, root) together, which is why proofs are
			// always checked against one. Any other size change must fail.
			n2 := uint64(n) ^ (1 << b)
			if VerifyInclusion(leaves[m], uint64(m), n2, p, root) == nil && !sameInclusionShape(uint64(m), uint64(n), n2) {
				t.Fatalf("inclusion(%d,%d): flipped size bit %d verified", m, n, b)
			}
		}
		if m == 0 {
			continue
		}
		oldRoot := refRoot(leaves[:m])
		cp, _ := ProveConsistency(uint64(m), uint64(n), tr)
		for i := range cp {
			for b := range 256 {
				q := append([]Hash(nil), cp...)
				q[i] = flipBit(q[i], b)
				if VerifyConsistency(uint64(m), uint64(n), oldRoot, root, q) == nil {
					t.Fatalf("consistency(%d,%d): flipped bit %d of hash %d verified", m, n, b, i)
				}
			}
		}
		for b := range 256 {
			if VerifyConsistency(uint64(m), uint64(n), flipBit(oldRoot, b), root, cp) == nil ||
				VerifyConsistency(uint64(m), uint64(n), oldRoot, flipBit(root, b), cp) == nil {
				t.Fatalf("consistency(%d,%d): flipped root bit %d verified", m, n, b)
			}
		}
		for b := range 64 {
			// As for inclusion, the new size is bound only through the new root: a size
			// whose SUBPROOF recursion takes the same turns verifies the same proof.
			m2, n2 := uint64(m)^(1<<b), uint64(n)^(1<<b)
			if VerifyConsistency(m2, uint64(n), oldRoot, root, cp) == nil && !sameConsistencyShape(uint64(m), uint64(n), m2, uint64(n)) {
				t.Fatalf("consistency(%d,%d): flipped old size bit %d verified", m, n, b)
			}
			if VerifyConsistency(uint64(m), n2, oldRoot, root, cp) == nil && !sameConsistencyShape(uint64(m), uint64(n), uint64(m), n2) {
				t.Fatalf("consistency(%d,%d): flipped new size bit %d verified", m, n, b)
			}
		}
	}
}

// sameInclusionShape reports whether the inclusion paths of index m at sizes n1 and n2
// combine the same way (same length, the sibling on the same side at every level).
func sameInclusionShape(m, n1, n2 uint64) bool {
	if m >= n1 || m >= n2 {
		return false
	}
	shape := func(n uint64) (out []bool) {
		// Walk RFC 6962 PATH: at each split, record whether m is on the left.
		lo, hi := uint64(0), n
		for hi-lo > 1 {
			k := uint64(refSplit(int(hi - lo)))
			left := m-lo < k
			out = append(out, left)
			if left {
				hi = lo + k
			} else {
				lo += k
			}
		}
		return out
	}
	a, b := shape(n1), shape(n2)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameConsistencyShape reports whether RFC 6962 SUBPROOF for (m1, n1) and (m2, n2) takes
// the same turns and ends the same way.
func sameConsistencyShape(m1, n1, m2, n2 uint64) bool {
	if m1 == 0 || m2 == 0 || m1 > n1 || m2 > n2 || n1 > 1<<62 || n2 > 1<<62 {
		return false
	}
	shape := func(m, n uint64) (out []int) {
		b := true
		for m != n {
			k := uint64(1) << (bits.Len64(n-1) - 1)
			if m <= k {
				out = append(out, 0)
				n = k
			} else {
				out = append(out, 1)
				m, n, b = m-k, n-k, false
			}
		}
		if b {
			return append(out, 2)
		}
		return append(out, 3)
	}
	a, c := shape(m1, n1), shape(m2, n2)
	if len(a) != len(c) {
		return false
	}
	for i := range a {
		if a[i] != c[i] {
			return false
		}
	}
	return true
}

func TestEmptyConsistencyProofs(t *testing.T) {
	leaves := testLeaves(5)
	root := refRoot(leaves)
	if err := VerifyConsistency(0, 5, EmptyRoot, root, nil); err != nil {
		t.Errorf("oldSize 0 with empty proof: %v", err)
	}
	if err := VerifyConsistency(5, 5, root, root, nil); err != nil {
		t.Errorf("equal sizes with empty proof: %v", err)
	}
	if err := VerifyConsistency(5, 5, root, flipBit(root, 3), nil); err == nil {
		t.Error("equal sizes with different roots verified")
	}
	if err := VerifyConsistency(6, 5, root, root, nil); err == nil {
		t.Error("shrinking tree verified")
	}
	b := NewRootBuilder()
	for _, h := range leaves {
		b.Append(h)
	}
	if b.Root() != root || NewRootBuilder().Root() != EmptyRoot {
		t.Error("RootBuilder disagrees with the reference")
	}
}

func FuzzVerifyInclusion(f *testing.F) {
	leaves := testLeaves(64)
	tr := buildTree(f, leaves)
	p, _ := ProveInclusion(5, 64, tr)
	var seed []byte
	for _, h := range p {
		seed = append(seed, h[:]...)
	}
	f.Add(uint64(5), uint64(64), seed)
	f.Add(uint64(0), uint64(1), []byte{})
	f.Fuzz(func(t *testing.T, index, size uint64, proofBytes []byte) {
		var q []Hash
		for len(proofBytes) >= HashSize {
			var h Hash
			copy(h[:], proofBytes)
			q = append(q, h)
			proofBytes = proofBytes[HashSize:]
		}
		if size > 64 || index >= 64 {
			_ = VerifyInclusion(leaves[0], index, size, q, Hash{})
			return
		}
		root, _ := tr.Root(size)
		err := VerifyInclusion(leaves[index], index, size, q, root)
		if index < size {
			want, _ := ProveInclusion(index, size, tr)
			if (err == nil) != equalHashes(q, want) {
				t.Fatalf("inclusion(%d,%d): verify=%v but proof equal to the real one: %v", index, size, err, equalHashes(q, want))
			}
		} else if err == nil {
			t.Fatalf("inclusion(%d,%d) verified with index out of range", index, size)
		}
	})
}

func FuzzVerifyConsistency(f *testing.F) {
	leaves := testLeaves(64)
	tr := buildTree(f, leaves)
	p, _ := ProveConsistency(7, 64, tr)
	var seed []byte
	for _, h := range p {
		seed = append(seed, h[:]...)
	}
	f.Add(uint64(7), uint64(64), seed)
	f.Add(uint64(0), uint64(3), []byte{})
	f.Fuzz(func(t *testing.T, m, n uint64, proofBytes []byte) {
		var q []Hash
		for len(proofBytes) >= HashSize {
			var h Hash
			copy(h[:], proofBytes)
			q = append(q, h)
			proofBytes = proofBytes[HashSize:]
		}
		if n > 64 || m > n {
			_ = VerifyConsistency(m, n, Hash{}, Hash{}, q)
			return
		}
		r1, _ := tr.Root(m)
		r2, _ := tr.Root(n)
		err := VerifyConsistency(m, n, r1, r2, q)
		want, _ := ProveConsistency(m, n, tr)
		if m > 0 && m < n && (err == nil) != equalHashes(q, want) {
			t.Fatalf("consistency(%d,%d): verify=%v, proof equal to the real one: %v", m, n, err, equalHashes(q, want))
		}
	})
}
