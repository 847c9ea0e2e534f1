package tiles_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
)

const testPrefix tiles.Prefix = "p/events/"

// xmodTree keeps x/mod's stored hashes of a tree: an independent source of the
// expected hash tile contents.
type xmodTree struct {
	hashes []tlog.Hash
	n      int64
}

func (x *xmodTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, j := range idx {
		out[i] = x.hashes[j]
	}
	return out, nil
}

func (x *xmodTree) grow(t *testing.T, n int64) {
	for ; x.n < n; x.n++ {
		hs, err := tlog.StoredHashes(x.n, synthLeaf(uint64(x.n)), x)
		if err != nil {
			t.Fatal(err)
		}
		x.hashes = append(x.hashes, hs...)
	}
}

// expectedObjects returns every object a log grown through the sizes in steps must
// hold, computed with x/mod (NewTiles, ReadTileData) rather than the tiles code.
func expectedObjects(t *testing.T, steps []uint64) map[string][]byte {
	x := &xmodTree{}
	want := make(map[string][]byte)
	old := int64(0)
	for _, n := range steps {
		x.grow(t, int64(n))
		for _, tl := range tlog.NewTiles(8, old, int64(n)) {
			data, err := tlog.ReadTileData(tl, x)
			if err != nil {
				t.Fatal(err)
			}
			want[testPrefix.Key(tiles.TilePath(tl))] = data
			if tl.L == 0 {
				e := tl
				e.L = tiles.EntriesLevel
				start := uint64(tl.N) * 256
				b, err := tiles.MarshalEntryBundle(synthLeaves(start, start+uint64(tl.W)))
				if err != nil {
					t.Fatal(err)
				}
				want[testPrefix.Key(tiles.TilePath(e))] = b
			}
		}
		old = int64(n)
	}
	return want
}

func storeContents(_ *testing.T, s *mem.Store) map[string][]byte {
	return s.Snapshot("")
}

func diffObjects(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("missing %s", k)
		case !bytes.Equal(g, want[k]):
			t.Errorf("%s: %d bytes differ from the expected %d", k, len(g), len(want[k]))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected object %s", k)
		}
	}
}

// TestLayoutSizes checks paths and contents against x/mod for the sizes where tiles
// become full or partial at every level, in one batch and grown through them all.
func TestLayoutSizes(t *testing.T) {
	sizes := []uint64{0, 1, 255, 256, 257, 65536, 65537}
	for _, n := range sizes {
		s := mem.New()
		ref := newRefTree(synthLeaf)
		buildLog(t, s, testPrefix, ref, []uint64{n}, n+1)
		if n == 0 {
			if err := tiles.NewWriter(s, testPrefix, nil).Materialize(t.Context(), 0, nil, sttlog.EmptyRoot); err != nil {
				t.Fatal(err)
			}
		}
		diffObjects(t, storeContents(t, s), expectedObjects(t, []uint64{n}))
		for _, k := range s.Keys("") {
			if a, _ := s.Attrs(k); a != tiles.ImmutableAttrs {
				t.Errorf("%s written with %+v", k, a)
			}
		}
	}
	s := mem.New()
	buildLog(t, s, testPrefix, newRefTree(synthLeaf), sizes[1:], 1<<20)
	diffObjects(t, storeContents(t, s), expectedObjects(t, sizes[1:]))
	// The level-2 tile appears exactly when the tree reaches 65536 leaves.
	if _, err := s.Get(t.Context(), testPrefix.Key("tile/2/000.p/1")); err != nil {
		t.Error(err)
	}
}

func TestMaterializeIdempotent(t *testing.T) {
	ctx := t.Context()
	s := mem.New()
	ref := newRefTree(synthLeaf)
	buildLog(t, s, testPrefix, ref, []uint64{300, 700}, 1000)
	before := storeContents(t, s)
	// Re-running any batch, with a cold or warm writer, writes the same bytes.
	w := tiles.NewWriter(s, testPrefix, nil)
	for range 2 {
		if err := w.Materialize(ctx, 300, synthLeaves(300, 700), ref.root(700)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 0, synthLeaves(0, 300), ref.root(300)); err != nil {
		t.Fatal(err)
	}
	diffObjects(t, storeContents(t, s), before)
	// No leaves: only a check of the stored tree.
	if err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 700, nil, ref.root(700)); err != nil {
		t.Fatal(err)
	}
	if err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 700, nil, ref.root(699)); !errors.Is(err, tiles.ErrMismatch) {
		t.Fatalf("check against a wrong root = %v", err)
	}
}

func TestMaterializeRejects(t *testing.T) {
	ctx := t.Context()
	ref := newRefTree(synthLeaf)
	ref.grow(1000)
	setup := func(t *testing.T) *mem.Store {
		s := mem.New()
		buildLog(t, s, testPrefix, ref, []uint64{600}, 1000)
		return s
	}
	unchanged := func(t *testing.T, s *mem.Store, before map[string][]byte) {
		t.Helper()
		diffObjects(t, storeContents(t, s), before)
	}
	t.Run("WrongRoot", func(t *testing.T) {
		s := setup(t)
		before := storeContents(t, s)
		err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 600, synthLeaves(600, 1000), ref.root(999))
		if !errors.Is(err, tiles.ErrMismatch) {
			t.Fatalf("got %v, want ErrMismatch", err)
		}
		unchanged(t, s, before)
	})
	t.Run("CorruptPartialTile", func(t *testing.T) {
		for _, key := range []string{"tile/0/002.p/88", "tile/1/000.p/2"} {
			s := setup(t)
			data, _ := s.Get(ctx, testPrefix.Key(key))
			data[5] ^= 1
			s.Set(testPrefix.Key(key), data)
			before := storeContents(t, s)
			err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 600, synthLeaves(600, 1000), ref.root(1000))
			if !errors.Is(err, tiles.ErrMismatch) {
				t.Fatalf("%s corrupt: got %v, want ErrMismatch", key, err)
			}
			unchanged(t, s, before)
		}
	})
	t.Run("CorruptPartialBundle", func(t *testing.T) {
		s := setup(t)
		key := testPrefix.Key("tile/entries/002.p/88")
		data, _ := s.Get(ctx, key)
		data[len(data)-1] ^= 1
		s.Set(key, data)
		before := storeContents(t, s)
		err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 600, synthLeaves(600, 1000), ref.root(1000))
		if !errors.Is(err, tiles.ErrMismatch) {
			t.Fatalf("got %v, want ErrMismatch", err)
		}
		unchanged(t, s, before)
	})
	t.Run("MissingEdge", func(t *testing.T) {
		s := setup(t)
		if err := s.Delete(ctx, testPrefix.Key("tile/0/002.p/88")); err != nil {
			t.Fatal(err)
		}
		before := storeContents(t, s)
		err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 600, synthLeaves(600, 1000), ref.root(1000))
		if !errors.Is(err, tiles.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
		unchanged(t, s, before)
	})
	t.Run("Fork", func(t *testing.T) {
		// Another tree of size 1000 left its tile first: a fork, reported as a conflict.
		s := setup(t)
		s.Set(testPrefix.Key("tile/0/003.p/232"), bytes.Repeat([]byte{1}, 232*32))
		err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 600, synthLeaves(600, 1000), ref.root(1000))
		if !errors.Is(err, tiles.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict", err)
		}
	})
	t.Run("LeafTooLong", func(t *testing.T) {
		s := setup(t)
		before := storeContents(t, s)
		err := tiles.NewWriter(s, testPrefix, nil).Materialize(ctx, 600, [][]byte{make([]byte, 1<<16)}, ref.root(601))
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("got %v", err)
		}
		unchanged(t, s, before)
	})
}

// TestMaterializeReplicas has two writers, as two replicas after a failover would,
// materialize the same batches at once: both succeed and the store holds one tree.
func TestMaterializeReplicas(t *testing.T) {
	s := mem.New()
	ref := newRefTree(synthLeaf)
	ends := []uint64{100, 256, 700, 1500}
	ref.grow(1500)
	roots := make(map[uint64]tlog.Hash) // refTree is not safe for concurrent use
	for _, end := range ends {
		roots[end] = ref.root(end)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			w := tiles.NewWriter(s, testPrefix, nil)
			size := uint64(0)
			for _, end := range ends {
				if err := w.Materialize(t.Context(), size, synthLeaves(size, end), roots[end]); err != nil {
					errs <- err
					return
				}
				size = end
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	diffObjects(t, storeContents(t, s), expectedObjects(t, ends))
}

// TestMaterializeReusedBuffers checks that the Writer's cached right edge does not
// alias the caller's leaf buffers, which a sequencer may reuse.
func TestMaterializeReusedBuffers(t *testing.T) {
	s := mem.New()
	ref := newRefTree(synthLeaf)
	ref.grow(20)
	w := tiles.NewWriter(s, testPrefix, nil)
	leaves := synthLeaves(0, 10)
	if err := w.Materialize(t.Context(), 0, leaves, ref.root(10)); err != nil {
		t.Fatal(err)
	}
	for _, l := range leaves {
		clear(l)
	}
	if err := w.Materialize(t.Context(), 10, synthLeaves(10, 20), ref.root(20)); err != nil {
		t.Fatal(err)
	}
	diffObjects(t, storeContents(t, s), expectedObjects(t, []uint64{10, 20}))
}
