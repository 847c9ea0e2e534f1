package control

import (
	"sync"
	"time"
)

// ttlCache keeps looked-up catalog values for at most ttl, so that a change made by any
// replica is honoured everywhere within ttl.
type ttlCache[V any] struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v  V
	at time.Time
}

func newTTLCache[V any](ttl time.Duration) *ttlCache[V] {
	return &ttlCache[V]{ttl: ttl, m: map[string]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key string, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 100_000 {
		for k, e := range c.m { // drop expired entries; the map stays bounded by live keys
			if now.Sub(e.at) >= c.ttl {
				delete(c.m, k)
			}
		}
	}
	c.m[key] = ttlEntry[V]{v: v, at: now}
}

func (c *ttlCache[V]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}
