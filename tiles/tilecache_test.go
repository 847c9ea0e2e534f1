package tiles

import (
	"fmt"
	"sync"
	"testing"
)

// TestTileCacheClock checks the cache's bound and its eviction order: a full cache
// evicts a tile not looked up since the clock hand last passed it, keeps the ones
// that were, keeps the first entry added under a key, and never holds more than its
// bound, also under concurrent use (run with -race).
func TestTileCacheClock(t *testing.T) {
	if _, err := NewTileCache(0); err == nil {
		t.Fatal("a cache of 0 tiles was accepted")
	}
	c, err := NewTileCache(4)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) tileKey { return tileKey{log: 1, l: 0, n: int64(i), w: TileWidth} }
	tiles := make([]*authTile, 10)
	for i := range tiles {
		tiles[i] = &authTile{data: []byte{byte(i)}}
	}
	for i := range 4 {
		c.add(key(i), tiles[i])
	}
	// Adding under a cached key keeps the cached entry.
	c.add(key(2), tiles[9])
	if at, ok := c.get(key(2)); !ok || at != tiles[2] {
		t.Fatal("a second add replaced the cached tile")
	}
	// Entries 0..3 were all added; 2 was just used. The hand starts at 0: 0 and 1
	// are unused, so 0 goes first, then 1.
	if _, ok := c.get(key(3)); !ok {
		t.Fatal("tile 3 not cached")
	}
	c.add(key(4), tiles[4])
	if _, ok := c.get(key(0)); ok {
		t.Fatal("tile 0, never used, was kept over the new one")
	}
	c.add(key(5), tiles[5])
	if _, ok := c.get(key(1)); ok {
		t.Fatal("tile 1, never used, was kept")
	}
	for _, i := range []int{2, 3, 4, 5} {
		if _, ok := c.get(key(i)); !ok {
			t.Fatalf("tile %d evicted early", i)
		}
	}
	if n := c.len(); n != 4 {
		t.Fatalf("cache holds %d tiles, bound 4", n)
	}
	// Every tile used: the hand clears each once and evicts where it started.
	c.add(key(6), tiles[6])
	held := 0
	for i := range 7 {
		if _, ok := c.get(key(i)); ok {
			held++
		}
	}
	if held != 4 || c.len() != 4 {
		t.Fatalf("%d tiles found, %d in the ring: bound 4", held, c.len())
	}

	// Concurrent lookups and adds keep the bound.
	c, _ = NewTileCache(64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				k := tileKey{log: c.logID(Prefix(fmt.Sprint("p", g%2, "/"))), n: int64(i % 200), w: TileWidth}
				if _, ok := c.get(k); !ok {
					c.add(k, &authTile{})
				}
			}
		})
	}
	wg.Wait()
	n := 0
	c.tiles.Range(func(any, any) bool { n++; return true })
	if n != 64 || c.len() != 64 {
		t.Fatalf("after concurrent use: %d entries, %d in the ring, bound 64", n, c.len())
	}
}
