package tiles

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/mod/sumdb/tlog"
)

// A TileCache keeps recently read tiles, keyed by log prefix and tile (what the
// object key is made of). A tile path always names the same bytes (partial tiles
// too), so entries never go stale; only tiles authenticated against a trusted root
// are added. It is safe for concurrent use and is meant to be shared by every Reader
// of one Store (keys do not name the store).
//
// Every proof looks up several tiles, from every request goroutine at once, so a
// lookup takes no lock and writes nothing shared unless the entry's reference bit was
// clear: entries sit in a sync.Map, and eviction is CLOCK (second chance) over a ring
// of keys, under a mutex only adds take. An LRU list would move an entry to its front
// on every lookup, under one lock, touching its cold neighbours.
type TileCache struct {
	max   int
	tiles sync.Map // tileKey → *authTile

	logs    sync.Map // Prefix → uint64: each log's number in tileKey
	lastLog atomic.Uint64

	mu   sync.Mutex // guards ring and hand, and orders adds
	ring []tileKey  // every cached key, once; at most max
	hand int        // the next ring slot eviction looks at
}

// tileKey names a tile of one log: the log's number in the cache and the tile's
// place (what its object key is made of, without building the key). Numbers, not the
// log's prefix, so that a lookup hashes and compares four words, not a string.
type tileKey struct {
	log uint64
	l   int
	n   int64
	w   int
}

// logID returns the number of the log under p in the cache's keys, the same for
// every Reader of that log. Numbers are never reused; the cache holds one per log it
// has seen (a few dozen bytes each).
func (c *TileCache) logID(p Prefix) uint64 {
	if v, ok := c.logs.Load(p); ok {
		return v.(uint64)
	}
	v, _ := c.logs.LoadOrStore(p, c.lastLog.Add(1))
	return v.(uint64)
}

// tileKey returns the key of tile t of r's log; like TilePath, it ignores t.H and
// takes any width outside [1, TileWidth) as a full tile.
func (r *Reader) tileKey(t tlog.Tile) tileKey {
	w := t.W
	if w <= 0 || w >= TileWidth {
		w = TileWidth
	}
	return tileKey{log: r.cacheID, l: t.L, n: t.N, w: w}
}

// NewTileCache returns a cache of at most maxTiles tiles (a full tile is 8 KiB, 16 KiB
// once a proof has read its inner levels).
func NewTileCache(maxTiles int) (*TileCache, error) {
	if maxTiles <= 0 {
		return nil, fmt.Errorf("tiles: tile cache of %d tiles: must be positive", maxTiles)
	}
	return &TileCache{max: maxTiles, ring: make([]tileKey, 0, min(maxTiles, 1024))}, nil
}

// load returns the cached tile at key, if any.
func (c *TileCache) load(key tileKey) (*authTile, bool) {
	v, ok := c.tiles.Load(key)
	if !ok {
		return nil, false
	}
	return v.(*authTile), true
}

// get returns the cached tile at key, and marks it used.
func (c *TileCache) get(key tileKey) (*authTile, bool) {
	at, ok := c.load(key)
	if !ok {
		return nil, false
	}
	if !at.used.Load() {
		at.used.Store(true)
	}
	return at, true
}

// add caches at under key unless key is cached already (which keeps the entry
// that may have its inner levels computed), evicting the first entry not used
// since the clock hand last passed it when the cache is full.
func (c *TileCache) add(key tileKey, at *authTile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.load(key); ok {
		return
	}
	if len(c.ring) < c.max {
		c.ring = append(c.ring, key)
		c.tiles.Store(key, at)
		return
	}
	// At most two turns: the first clears every reference bit it passes.
	for {
		old := c.ring[c.hand]
		if e, ok := c.load(old); ok && e.used.Load() {
			e.used.Store(false)
			c.hand = (c.hand + 1) % len(c.ring)
			continue
		}
		c.tiles.Delete(old)
		c.ring[c.hand] = key
		c.tiles.Store(key, at)
		c.hand = (c.hand + 1) % len(c.ring)
		return
	}
}

// len returns the number of cached tiles.
func (c *TileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ring)
}
