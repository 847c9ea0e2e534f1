package sequencer

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/sealtrail/sealtrail/tiles"
)

// payloadCacheBytes bounds the memory of the decoded payload bundles the cache keeps.
// A bound by count alone let a busy batch ingest keep 256 bundles of 1,000 events
// (about 400 MB), and with the collector's target (cmd/sealtraild) a heap of several
// times that. The cache serves reads of recent events (a query's pages, mostly within
// one bundle) and publication's fallback for leaves the memo no longer holds; an export
// or a SIEM stream reads through it too, one bundle after the other, and with 32 MiB
// grew the server's memory by more than the export's own size
// (integration.TestAPIExportScale). A few megabytes hold the bundles a reader is on.
const payloadCacheBytes = 4 << 20

// Per-bundle and per-record overheads charged besides the bytes of leaves and
// ciphertexts (slice headers, the map entry, the list element), so that many tiny
// bundles are bounded too.
const (
	payloadCacheBundleOverhead = 256
	payloadCacheRecordOverhead = 48
)

// payloadCache keeps decoded payload bundles by tiles.PayloadRef.String(), the least
// recently used dropped first once they hold more than limit bytes (bundleSize). Bundles
// of committed batches never change, so entries never go stale.
type payloadCache struct {
	mu    sync.Mutex
	c     *simplelru.LRU[string, *tiles.PayloadBundle]
	bytes int // the bundleSize of the entries held
	limit int
}

func newPayloadCache(limit int) *payloadCache {
	pc := &payloadCache{limit: limit}
	// No count bound of its own: limit bytes bound the count too (the overheads).
	c, _ := simplelru.NewLRU(limit/payloadCacheBundleOverhead+1, func(_ string, b *tiles.PayloadBundle) {
		pc.bytes -= bundleSize(b)
	}) // only fails for a size <= 0
	pc.c = c
	return pc
}

// bundleSize is what b is charged in the cache: its leaves, its ciphertexts (in a
// bundle the sequencer built they alias one encoding of about that size) and the
// overheads.
func bundleSize(b *tiles.PayloadBundle) int {
	n := payloadCacheBundleOverhead
	for i := range b.Records {
		n += payloadCacheRecordOverhead + len(b.Records[i].LeafData) + len(b.Records[i].Ciphertext)
	}
	return n
}

func (c *payloadCache) get(key string) (*tiles.PayloadBundle, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Get(key)
}

// add keeps b under key unless b alone is larger than the bound, and drops the least
// recently used bundles until the cache is within it.
func (c *payloadCache) add(key string, b *tiles.PayloadBundle) {
	size := bundleSize(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Remove(key) // an entry replaced is charged anew; an over-large one is not kept
	if size > c.limit {
		return
	}
	c.c.Add(key, b)
	c.bytes += size
	for c.bytes > c.limit {
		if _, _, ok := c.c.RemoveOldest(); !ok {
			break
		}
	}
}
