package control

import (
	"context"
	"sync"
	"time"
)

// maxCached bounds each cache's entries: past it, a put drops every entry that is no
// longer current, and all of them if that is not enough.
const maxCached = 100_000

// ttlCache keeps looked-up catalog values for the ingest path. With a catalog that
// keeps a control-plane generation (freshness), an entry stays current for as long as
// the generation has not moved since before it was read, however old it is; without
// one, for ttl. Either way a change made by any replica is honoured everywhere within
// ttl.
type ttlCache[V any] struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v     V
	at    time.Time
	epoch uint64
}

func newTTLCache[V any](ttl time.Duration) *ttlCache[V] {
	return &ttlCache[V]{ttl: ttl, m: map[string]ttlEntry[V]{}}
}

// current reports whether e is current in epoch ep at now. Epoch 0 means the catalog
// has no generation: entries then expire after ttl.
func (c *ttlCache[V]) current(e ttlEntry[V], ep uint64, now time.Time) bool {
	if e.epoch != ep {
		return false
	}
	return ep != 0 || (now.Sub(e.at) < c.ttl && !now.Before(e.at))
}

func (c *ttlCache[V]) get(key string, ep uint64, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.current(e, ep, now) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put caches v, read from the catalog after epoch ep began.
func (c *ttlCache[V]) put(key string, v V, ep uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		for k, e := range c.m {
			if !c.current(e, ep, now) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCached {
			clear(c.m)
		}
	}
	c.m[key] = ttlEntry[V]{v: v, at: now, epoch: ep}
}

func (c *ttlCache[V]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// generationReader is a catalog that keeps a control-plane generation: a number that
// rises with every change to projects, API keys, signing keys and suspensions, made by
// any process (both catalogs, by triggers).
type generationReader interface {
	ControlGeneration(ctx context.Context) (int64, error)
}

// freshness turns the catalog's control-plane generation into cache epochs: it reads
// the generation at most once per ttl and starts a new epoch whenever it moved. The
// caches then read one row a second in all, where a ttl alone would have them read one
// row per project and key a second: with a thousand active projects, that was most of
// the ingest path's catalog reads.
type freshness struct {
	ttl  time.Duration
	read func(ctx context.Context) (int64, error)

	mu      sync.Mutex // held while the generation is read: one read at a time
	checked time.Time  // when the generation last read was current (before the read)
	gen     int64
	epoch   uint64 // > 0 once a generation was read
	trusted bool   // false until a read succeeds, and after a failed one
}

// epoch returns the epoch current at now and whether the caches may be used at all:
// after a failed read of the generation they may not, and callers read the catalog.
// Without a generation (f nil) it returns 0, under which entries expire after their
// ttl.
func (f *freshness) current(ctx context.Context, now time.Time) (uint64, bool) {
	if f == nil {
		return 0, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trusted && now.Sub(f.checked) < f.ttl && !now.Before(f.checked) {
		return f.epoch, true
	}
	gen, err := f.read(ctx)
	if err != nil {
		f.trusted = false
		return 0, false
	}
	if !f.trusted || gen != f.gen || f.epoch == 0 {
		f.epoch++ // every entry of an earlier epoch is stale from here on
	}
	// now was taken before the read, so the state read is at least as new as now.
	f.gen, f.checked, f.trusted = gen, now, true
	return f.epoch, true
}

func newFreshness(cat any, ttl time.Duration) *freshness {
	g, ok := cat.(generationReader)
	if !ok {
		return nil
	}
	return &freshness{ttl: ttl, read: g.ControlGeneration}
}

// cached returns c's entry for key if it is current, and otherwise reads it with load
// and caches it (under the epoch that began before the read, so a change made during
// the read leaves the entry stale).
func cached[V any](ctx context.Context, s *Service, c *ttlCache[V], key string, load func() (V, error)) (V, error) {
	now := s.now()
	ep, ok := s.fresh.current(ctx, now)
	if ok {
		if v, hit := c.get(key, ep, now); hit {
			return v, nil
		}
	}
	v, err := load()
	if err == nil && ok {
		c.put(key, v, ep, now)
	}
	return v, err
}
