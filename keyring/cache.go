package keyring

import (
	"container/list"
	"crypto/cipher"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// cacheKey names one data key.
type cacheKey struct {
	log   catalog.LogID
	epoch string
}

// cached is an unwrapped data key and when it stops being trusted, the Sealer
// NewSealer last made from it (see sealerMessages) and the message cipher Decrypt
// last derived from it (see opener), which leave the cache with it.
type cached struct {
	key     cacheKey
	keyID   string
	secret  []byte
	expires time.Time
	sealer  atomic.Pointer[Sealer]
	opener  atomic.Pointer[opener]
}

// An opener is the message cipher of one salt of a data key. A Sealer's messages (a
// batch's payloads) share a salt, so a reader of a batch's records, in order,
// derives its key once instead of once per record: the derivation (HKDF, the AES key
// schedule, GCM's tables) was about an eighth of the CPU of a rebuild of 10^6 events
// (BenchmarkRebuildMillion).
type opener struct {
	salt [saltSize]byte
	aead cipher.AEAD
}

// lru is a bounded, expiring map of unwrapped data keys. The expiry bounds how long a
// replica keeps using a key another replica destroyed. All fields are guarded by mu.
type lru struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	order *list.List // front: most recently used; values are *cached
	m     map[cacheKey]*list.Element
}

func newLRU(max int, ttl time.Duration) *lru {
	return &lru{max: max, ttl: ttl, order: list.New(), m: make(map[cacheKey]*list.Element)}
}

func (c *lru) get(k cacheKey, now time.Time) (*cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return nil, false
	}
	v := el.Value.(*cached)
	if !now.Before(v.expires) {
		c.removeLocked(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return v, true
}

func (c *lru) put(v *cached, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v.expires = now.Add(c.ttl)
	if el, ok := c.m[v.key]; ok {
		c.removeLocked(el)
	}
	c.m[v.key] = c.order.PushFront(v)
	for c.order.Len() > c.max {
		c.removeLocked(c.order.Back())
	}
}

func (c *lru) remove(k cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.removeLocked(el)
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// removeLocked drops el. The secret is not wiped: a caller that got it from get may
// still be using it.
func (c *lru) removeLocked(el *list.Element) {
	v := c.order.Remove(el).(*cached)
	delete(c.m, v.key)
}
