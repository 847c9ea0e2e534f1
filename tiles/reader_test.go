package tiles_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/tlog"
)

// checkProofs compares the Reader's proofs with the reference and verifies them with
// transparency-dev/merkle, for the given (index, size) and (old, size) pairs.
func checkProofs(t *testing.T, r *tiles.Reader, ref *refTree, incl, cons [][2]uint64) {
	t.Helper()
	ctx := t.Context()
	// Each proof twice: the second is read from the cached tiles without the
	// authentication (hashcache.go) when r has a cache.
	for _, q := range slices.Concat(incl, incl) {
		index, size := q[0], q[1]
		got, err := r.InclusionProof(ctx, index, size)
		if err != nil {
			t.Fatalf("InclusionProof(%d, %d): %v", index, size, err)
		}
		if want := ref.inclusion(index, size); !hashesEqual(got, want) {
			t.Fatalf("InclusionProof(%d, %d) = %x, reference %x", index, size, got, want)
		}
		root := ref.root(size)
		if err := proof.VerifyInclusion(hasher, index, size, hasher.HashLeaf(synthLeaf(index)), toBytes(got), root[:]); err != nil {
			t.Fatalf("InclusionProof(%d, %d) does not verify: %v", index, size, err)
		}
	}
	for _, q := range slices.Concat(cons, cons) {
		old, size := q[0], q[1]
		got, err := r.ConsistencyProof(ctx, old, size)
		if err != nil {
			t.Fatalf("ConsistencyProof(%d, %d): %v", old, size, err)
		}
		want := ref.consistency(old, size)
		if !hashesEqual(got, want) {
			t.Fatalf("ConsistencyProof(%d, %d) = %x, reference %x", old, size, got, want)
		}
		r1, r2 := ref.root(old), ref.root(size)
		if err := proof.VerifyConsistency(hasher, old, size, toBytes(got), r1[:], r2[:]); err != nil {
			t.Fatalf("ConsistencyProof(%d, %d) does not verify: %v", old, size, err)
		}
	}
}

// TestProofsEverySize builds a log one leaf per batch and checks, at every size up to
// 1000 as the trusted tree, proofs into that tree (all of them up to 128 leaves) and
// into random smaller trees.
func TestProofsEverySize(t *testing.T) {
	t.Parallel()
	const max = 1000
	s := mem.New()
	ref := newRefTree(synthLeaf)
	ends := make([]uint64, max)
	for i := range ends {
		ends[i] = uint64(i + 1)
	}
	buildLog(t, s, testPrefix, ref, ends, 1)

	// The reference itself agrees with merkle's full in-memory tree.
	full := testonly.New(hasher)
	for i := range uint64(max) {
		full.AppendData(synthLeaf(i))
	}
	for _, n := range []uint64{0, 1, 2, 3, 255, 256, 257, 511, 512, 999, 1000} {
		if root := ref.root(n); string(root[:]) != string(full.HashAt(n)) {
			t.Fatalf("reference root at %d differs from merkle/testonly", n)
		}
	}

	cache, err := tiles.NewTileCache(64)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := uint64(1); n <= max; n++ {
		r := tiles.NewReader(s, testPrefix, tiles.Tree{Size: n, Root: ref.root(n)}, cache)
		// Every proof into the trusted tree itself while small, samples later, and
		// random proofs into older trees.
		var incl, cons [][2]uint64
		if n <= 128 {
			for i := range n {
				incl = append(incl, [2]uint64{i, n})
			}
			for old := range n + 1 {
				cons = append(cons, [2]uint64{old, n})
			}
		} else {
			incl = append(incl, [2]uint64{0, n}, [2]uint64{n - 1, n}, [2]uint64{n / 2, n})
			cons = append(cons, [2]uint64{0, n}, [2]uint64{1, n}, [2]uint64{n - 1, n}, [2]uint64{n, n})
		}
		for range 3 {
			size := 1 + rng.Uint64N(n)
			incl = append(incl, [2]uint64{rng.Uint64N(size), size})
			cons = append(cons, [2]uint64{rng.Uint64N(size + 1), size})
		}
		checkProofs(t, r, ref, incl, cons)
		for _, m := range []uint64{0, 1, n / 3, n} {
			if h, err := r.TreeHash(t.Context(), m); err != nil || h != ref.root(m) {
				t.Fatalf("TreeHash(%d) at trusted size %d = %v, %v", m, n, h, err)
			}
		}
	}
}

// TestProofsRandomSizes checks proofs read from the tiles of a synthetic log of 10^7
// leaves (10^6 with -short), trusting trees of random sizes, against the reference.
// Level-0 tiles and bundles are regenerated on read (synthStore), so it stays small.
func TestProofsRandomSizes(t *testing.T) {
	t.Parallel()
	size := uint64(10_000_000)
	if testing.Short() {
		size = 1_000_000
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ends := []uint64{size}
	for range 10 {
		ends = append(ends, 1+rng.Uint64N(size))
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	s := newSynthStore()
	// Level-0 tiles are checked byte for byte at smaller sizes; here the root check
	// in Materialize covers them.
	s.checkWrites = false
	ref := newRefTree(synthLeaf)
	buildLog(t, s, testPrefix, ref, ends, 1<<17)
	cache, err := tiles.NewTileCache(1024)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ends {
		r := tiles.NewReader(s, testPrefix, tiles.Tree{Size: n, Root: ref.root(n)}, cache)
		var incl, cons [][2]uint64
		for range 10 {
			sz := 1 + rng.Uint64N(n)
			incl = append(incl, [2]uint64{rng.Uint64N(sz), sz}, [2]uint64{rng.Uint64N(n), n})
			cons = append(cons, [2]uint64{rng.Uint64N(sz + 1), sz}, [2]uint64{rng.Uint64N(n + 1), n})
		}
		checkProofs(t, r, ref, incl, cons)
	}
}

func TestReaderEntriesAndLeaves(t *testing.T) {
	ctx := t.Context()
	s := mem.New()
	ref := newRefTree(synthLeaf)
	buildLog(t, s, testPrefix, ref, []uint64{300, 600}, 1000)
	r := tiles.NewReader(s, testPrefix, tiles.Tree{Size: 600, Root: ref.root(600)}, nil)
	for n, width := range []int{256, 256, 88} {
		es, err := r.EntryBundle(ctx, uint64(n))
		if err != nil || len(es) != width {
			t.Fatalf("EntryBundle(%d) = %d entries, %v", n, len(es), err)
		}
		for i, e := range es {
			if string(e) != string(synthLeaf(uint64(n*256+i))) {
				t.Fatalf("EntryBundle(%d)[%d] = %q", n, i, e)
			}
		}
	}
	if _, err := r.EntryBundle(ctx, 3); err == nil {
		t.Fatal("EntryBundle beyond the tree succeeded")
	}
	hs, err := r.LeafHashes(ctx, 250, 600)
	if err != nil || len(hs) != 350 || hs[0] != tlog.RecordHash(synthLeaf(250)) || hs[349] != tlog.RecordHash(synthLeaf(599)) {
		t.Fatalf("LeafHashes = %d, %v", len(hs), err)
	}
	// An older trusted tree reads its own (older) partial objects.
	old := tiles.NewReader(s, testPrefix, tiles.Tree{Size: 300, Root: ref.root(300)}, nil)
	if es, err := old.EntryBundle(ctx, 1); err != nil || len(es) != 44 {
		t.Fatalf("EntryBundle(1) at size 300 = %d, %v", len(es), err)
	}
	// Out of range requests.
	for _, f := range []func() error{
		func() error { _, err := r.InclusionProof(ctx, 600, 600); return err },
		func() error { _, err := r.InclusionProof(ctx, 0, 601); return err },
		func() error { _, err := r.InclusionProof(ctx, 0, 0); return err },
		func() error { _, err := r.ConsistencyProof(ctx, 10, 9); return err },
		func() error { _, err := r.ConsistencyProof(ctx, 1, 601); return err },
		func() error { _, err := r.TreeHash(ctx, 601); return err },
		func() error { _, err := r.LeafHashes(ctx, 10, 601); return err },
		func() error {
			_, err := tiles.NewReader(s, testPrefix, tiles.Tree{Size: 1 << 40}, nil).LeafHashes(ctx, 0, 1<<40)
			return err
		},
	} {
		if f() == nil {
			t.Error("out-of-range request succeeded")
		}
	}
}

func TestReaderRejectsBadStorage(t *testing.T) {
	ctx := t.Context()
	s := mem.New()
	ref := newRefTree(synthLeaf)
	buildLog(t, s, testPrefix, ref, []uint64{70000}, 1<<17)
	tree := tiles.Tree{Size: 70000, Root: ref.root(70000)}
	cache, _ := tiles.NewTileCache(100)

	// A tile altered in storage: an error, never a wrong proof, and not cached.
	key := testPrefix.Key("tile/0/100")
	good, _ := s.Get(ctx, key)
	bad := slices.Clone(good)
	bad[100] ^= 1
	s.Set(key, bad)
	r := tiles.NewReader(s, testPrefix, tree, cache)
	if p, err := r.InclusionProof(ctx, 25700, 70000); !errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("proof over a corrupt tile = %x, %v; want ErrMismatch", p, err)
	}
	s.Set(key, good)
	checkProofs(t, r, ref, [][2]uint64{{25700, 70000}}, nil)

	// A tree root that is not the stored tree's.
	wrong := tiles.NewReader(s, testPrefix, tiles.Tree{Size: 70000, Root: ref.root(69999)}, nil)
	if _, err := wrong.InclusionProof(ctx, 5, 10); !errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("proof under a wrong root: %v; want ErrMismatch", err)
	}
	// A size that was never materialized: its partial tiles do not exist.
	unmat := tiles.NewReader(s, testPrefix, tiles.Tree{Size: 69999, Root: ref.root(69999)}, nil)
	if _, err := unmat.InclusionProof(ctx, 5, 10); !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("proof at an unmaterialized size: %v; want ErrNotFound", err)
	}
	// Store errors pass through, wrapped.
	boom := errors.New("boom")
	remove := s.Inject(mem.Fault{Op: mem.OpGet, Err: boom})
	if _, err := tiles.NewReader(s, testPrefix, tree, nil).ConsistencyProof(ctx, 3, 69000); !errors.Is(err, boom) || errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("proof with a failing store: %v", err)
	}
	remove()
	// A corrupt bundle is caught against the leaf hashes.
	bkey := testPrefix.Key("tile/entries/100")
	b, _ := s.Get(ctx, bkey)
	b[len(b)-1] ^= 1
	s.Set(bkey, b)
	if _, err := tiles.NewReader(s, testPrefix, tree, nil).EntryBundle(ctx, 100); !errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("EntryBundle(100) with a corrupt entry: %v; want ErrMismatch", err)
	}
	if _, err := tiles.NewReader(s, testPrefix, tree, nil).EntryBundle(ctx, 101); err != nil {
		t.Fatalf("EntryBundle(101): %v", err)
	}
	if err := s.Delete(ctx, testPrefix.Key("tile/entries/101")); err != nil {
		t.Fatal(err)
	}
	if _, err := tiles.NewReader(s, testPrefix, tree, nil).EntryBundle(ctx, 101); !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("EntryBundle(101) deleted: %v; want ErrNotFound", err)
	}
}

// TestReaderHostileArgs calls every Reader method with edge and out-of-range values:
// errors, never panics, and never a proof for a tree beyond the trusted one.
func TestReaderHostileArgs(t *testing.T) {
	ctx := t.Context()
	s := mem.New()
	ref := newRefTree(synthLeaf)
	buildLog(t, s, testPrefix, ref, []uint64{5}, 5)
	vals := []uint64{0, 1, 4, 5, 6, 255, 256, 1 << 32, 1<<62 + 1, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	for _, tree := range []tiles.Tree{{Size: 0, Root: ref.root(0)}, {Size: 5, Root: ref.root(5)}, {Size: 1 << 63, Root: ref.root(5)}, {Size: 1<<64 - 1}} {
		r := tiles.NewReader(s, testPrefix, tree, nil)
		for _, a := range vals {
			for _, b := range vals {
				if p, err := r.InclusionProof(ctx, a, b); err == nil && (b > tree.Size || a >= b) {
					t.Errorf("InclusionProof(%d, %d) at size %d = %x", a, b, tree.Size, p)
				}
				if p, err := r.ConsistencyProof(ctx, a, b); err == nil && (b > tree.Size || a > b) {
					t.Errorf("ConsistencyProof(%d, %d) at size %d = %x", a, b, tree.Size, p)
				}
				if hs, err := r.LeafHashes(ctx, a, min(b, a+300)); err == nil && min(b, a+300) > tree.Size {
					t.Errorf("LeafHashes(%d, %d) at size %d = %d hashes", a, b, tree.Size, len(hs))
				}
			}
			if _, err := r.TreeHash(ctx, a); err == nil && a > tree.Size {
				t.Errorf("TreeHash(%d) at size %d succeeded", a, tree.Size)
			}
			if _, err := r.LeafHash(ctx, a); err == nil && a >= tree.Size {
				t.Errorf("LeafHash(%d) at size %d succeeded", a, tree.Size)
			}
			if _, err := r.EntryBundle(ctx, a); err == nil && a*256 >= tree.Size {
				t.Errorf("EntryBundle(%d) at size %d succeeded", a, tree.Size)
			}
		}
	}
}
