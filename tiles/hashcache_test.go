package tiles

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// TestAuthTileHash checks the cached reading of a stored hash against x/mod's own:
// the tile nodeTile names is TileForIndex's tile widened to the tree (as
// TileHashReader reads it), and authTile.hash is HashFromTile, for stored hashes at
// every level of trees of random sizes, partial tiles included.
func TestAuthTileHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		n := 1 + rng.Int64N(1<<22)
		if rng.IntN(4) == 0 {
			n = 1 + rng.Int64N(3*TileWidth)
		}
		// A stored hash of the tree: a complete subtree at some level.
		level := rng.IntN(64 - 1)
		for n>>uint(level) == 0 {
			level = rng.IntN(level + 1)
		}
		pos := rng.Int64N(n >> uint(level))
		x := tlog.StoredHashIndex(level, pos)
		tile, k, j := nodeTile(level, pos, n)
		least := tlog.TileForIndex(TileHeight, x)
		if tile.L != least.L || tile.N != least.N || tile.W < least.W || tile.W > TileWidth {
			t.Fatalf("nodeTile for %d in %d = %v, TileForIndex %v", x, n, tile, least)
		}
		if rest := n>>uint(tile.L*TileHeight) - tile.N*TileWidth; tile.W != int(min(rest, TileWidth)) {
			t.Fatalf("nodeTile for %d in %d = %v: width is not the tree's (%d)", x, n, tile, rest)
		}
		data := make([]byte, tile.W*tlog.HashSize)
		for i := range tile.W {
			h := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(rng.Uint32())})
			copy(data[i*tlog.HashSize:], h[:])
		}
		want, err := tlog.HashFromTile(tile, data, x)
		if err != nil {
			t.Fatal(err)
		}
		if got := (&authTile{data: data}).hash(k, j); got != want {
			t.Fatalf("hash of %d in %v (level %d, position %d) = %v, HashFromTile %v", x, tile, k, j, got, want)
		}
	}
}
