package tiles_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"golang.org/x/mod/sumdb/tlog"
)

// countingStore counts reads and written bytes of the store it wraps.
type countingStore struct {
	tiles.Store
	gets, creates, written atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	c.creates.Add(1)
	c.written.Add(int64(len(data)))
	return c.Store.Create(ctx, key, data, a)
}

// uniformStore serves the tiles of a tree of any size whose leaves are all the same,
// so that every full subtree of height l has the same hash: enough to measure tile
// reads for a billion leaves without building them.
type uniformStore struct {
	tiles.Store // nil: only Get is used
	level       [64]tlog.Hash
	gets        atomic.Int64
}

func newUniformStore() *uniformStore {
	u := &uniformStore{}
	u.level[0] = tlog.RecordHash([]byte("same leaf"))
	for l := 1; l < 64; l++ {
		u.level[l] = tlog.NodeHash(u.level[l-1], u.level[l-1])
	}
	return u
}

func (u *uniformStore) Get(_ context.Context, key string) ([]byte, error) {
	u.gets.Add(1)
	t, err := tiles.ParseTilePath(key[len(testPrefix):])
	if err != nil || t.L < 0 {
		return nil, fmt.Errorf("uniformStore: %s: %w", key, tiles.ErrNotFound)
	}
	data := make([]byte, 0, t.W*tlog.HashSize)
	for range t.W {
		data = append(data, u.level[t.L*tiles.TileHeight][:]...)
	}
	return data, nil
}

func (u *uniformStore) root(n int64) tlog.Hash {
	h, err := tlog.TreeHash(n, tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			l, _ := tlog.SplitStoredHashIndex(x)
			out[i] = u.level[l]
		}
		return out, nil
	}))
	if err != nil {
		panic(err)
	}
	return h
}

// TestTileReadsAtBillion checks how many tiles one proof reads in a tree of 10^9
// leaves, with a cold cache and with the right edge cached.
func TestTileReadsAtBillion(t *testing.T) {
	const n = 1_000_000_000
	u := newUniformStore()
	tree := tiles.Tree{Size: n, Root: u.root(n)}
	rng := rand.New(rand.NewPCG(5, 6))
	maxCold, maxWarm := int64(0), int64(0)
	for range 50 {
		i := rng.Uint64N(n)
		u.gets.Store(0)
		p, err := tiles.NewReader(u, testPrefix, tree, nil).InclusionProof(t.Context(), i, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, n, tree.Root, int64(i), u.level[0]); err != nil {
			t.Fatal(err)
		}
		maxCold = max(maxCold, u.gets.Load())
		cache, _ := tiles.NewTileCache(100)
		r := tiles.NewReader(u, testPrefix, tree, cache)
		if _, err := r.InclusionProof(t.Context(), rng.Uint64N(n), n); err != nil {
			t.Fatal(err)
		}
		u.gets.Store(0)
		if _, err := r.InclusionProof(t.Context(), i, n); err != nil {
			t.Fatal(err)
		}
		maxWarm = max(maxWarm, u.gets.Load())
	}
	t.Logf("inclusion proof at 10^9 leaves: at most %d tile reads cold, %d with the right edge cached", maxCold, maxWarm)
	if maxCold > 7 || maxWarm > 4 {
		t.Fatalf("too many tile reads: %d cold, %d warm", maxCold, maxWarm)
	}
}

func BenchmarkTileReadsAtBillion(b *testing.B) {
	const n = 1_000_000_000
	u := newUniformStore()
	tree := tiles.Tree{Size: n, Root: u.root(n)}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, kind := range []string{"inclusion", "consistency"} {
		b.Run(kind, func(b *testing.B) {
			u.gets.Store(0)
			for b.Loop() {
				r := tiles.NewReader(u, testPrefix, tree, nil)
				var err error
				if kind == "inclusion" {
					_, err = r.InclusionProof(b.Context(), rng.Uint64N(n), n)
				} else {
					_, err = r.ConsistencyProof(b.Context(), 1+rng.Uint64N(n-1), n)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(u.gets.Load())/float64(b.N), "tile-reads/op")
		})
	}
}

// benchLogs are synthetic logs built once per benchmark run.
var benchLogs sync.Map // size -> *benchLog

type benchLog struct {
	once  sync.Once
	store *synthStore
	ref   *refTree
}

func getBenchLog(b *testing.B, size uint64) *benchLog {
	v, _ := benchLogs.LoadOrStore(size, &benchLog{})
	l := v.(*benchLog)
	l.once.Do(func() {
		l.store = newSynthStore()
		l.store.checkWrites = false
		l.ref = newRefTree(synthLeaf)
		buildLog(b, l.store, testPrefix, l.ref, []uint64{size}, 1<<18)
	})
	return l
}

// BenchmarkProof measures proof construction from tiles in synthetic trees, with a
// cold cache (every tile read from the store), a warm one, and a cache of the
// service's size (4,096 tiles: at 10^7 leaves most leaf tiles are not in it, the
// tiles above are). The store is in memory; level-0 tiles are regenerated on read,
// which a real store's latency dwarfs.
func BenchmarkProof(b *testing.B) {
	for _, size := range []uint64{1_000_000, 10_000_000} {
		for _, kind := range []string{"inclusion", "consistency"} {
			for _, cached := range []string{"cold", "warm", "4096"} {
				name := fmt.Sprintf("size=%d/%s/%s", size, kind, cached)
				b.Run(name, func(b *testing.B) {
					l := getBenchLog(b, size)
					cs := &countingStore{Store: l.store}
					tree := tiles.Tree{Size: size, Root: l.ref.root(size)}
					cache, _ := tiles.NewTileCache(1 << 16)
					if cached == "4096" {
						cache, _ = tiles.NewTileCache(4096)
					}
					rng := rand.New(rand.NewPCG(9, 10))
					b.ResetTimer()
					for b.Loop() {
						c := cache
						if cached == "cold" {
							c = nil
						}
						r := tiles.NewReader(cs, testPrefix, tree, c)
						var err error
						if kind == "inclusion" {
							_, err = r.InclusionProof(b.Context(), rng.Uint64N(size), size)
						} else {
							_, err = r.ConsistencyProof(b.Context(), 1+rng.Uint64N(size-1), size)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(cs.gets.Load())/float64(b.N), "tile-reads/op")
				})
			}
		}
	}
}

// BenchmarkMaterialize measures batches of several sizes appended to a growing log:
// time per batch, and the bytes and objects written per leaf (partial tiles and
// bundles are rewritten whole by each batch, so small batches cost more per leaf).
func BenchmarkMaterialize(b *testing.B) {
	for _, batch := range []int{1, 16, 256, 4096} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := newSynthStore()
			s.checkWrites = false
			cs := &countingStore{Store: s}
			ref := newRefTree(synthLeaf)
			w := tiles.NewWriter(cs, testPrefix, nil)
			size := uint64(0)
			type job struct {
				leaves [][]byte
				root   tlog.Hash
			}
			for b.Loop() {
				b.StopTimer()
				next := size + uint64(batch)
				ref.grow(next)
				j := job{synthLeaves(size, next), ref.root(next)}
				b.StartTimer()
				if err := w.Materialize(b.Context(), size, j.leaves, j.root); err != nil {
					b.Fatal(err)
				}
				size = next
			}
			b.ReportMetric(float64(cs.written.Load())/float64(size), "bytes/leaf")
			b.ReportMetric(float64(cs.creates.Load())/float64(b.N), "objects/batch")
		})
	}
}
