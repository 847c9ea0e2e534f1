package postgres

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// A tick of the group commit used to start with a round trip: BEGIN and a SELECT …
// FOR UPDATE SKIP LOCKED of every stream's checkpoint, whose result the sequencer
// needs before it can build anything. sealCache keeps the checkpoint each stream's
// last seal through this handle committed (or read under the lock), so SealGroup can
// run the tick's function at once and send BEGIN, the checkpoint UPDATE and the rows
// in one pipeline (group.go).
//
// A cached checkpoint is only ever a guess the commit checks: the UPDATE is
// conditional on the size the tick started from and on taking the row's lock without
// waiting, and fails the transaction unless it moved every checkpoint
// (sealtrail_expect_rows, migration 0013). Another replica that sealed the stream
// since, or holds its lock, therefore costs a rolled-back attempt and a second one
// from the checkpoints read under the lock, never a fork. The published size of a
// cached checkpoint may be behind: it is a lower bound, as any read of it is while
// publication runs.
//
// A stream whose guess was wrong goes without one for chillFor: with two replicas
// writing one stream, each one's cached checkpoint is stale after every tick of the
// other, and guessing would build each of its ticks twice (and leave an orphan payload
// object each time).
type sealCache struct {
	mu       sync.Mutex
	m        map[catalog.LogID]catalog.Checkpoint
	cold     map[catalog.LogID]time.Time // streams not to guess until then
	chillFor time.Duration               // 0: chillFor
}

// chillFor is how long a stream whose guess was wrong is sealed from checkpoints read
// under the lock.
const chillFor = 2 * time.Second

// sealCacheMax bounds the project-streams the cache keeps (a checkpoint with its
// compact range is at most about 2 KB); past it, an arbitrary entry makes room.
const sealCacheMax = 16384

// get returns the cached checkpoint of log, with a copy of its compact range: the
// seal hands it to code that could change it.
func (c *sealCache) get(log catalog.LogID) (catalog.Checkpoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until, ok := c.cold[log]; ok {
		if time.Now().Before(until) {
			return catalog.Checkpoint{}, false
		}
		delete(c.cold, log)
	}
	cp, ok := c.m[log]
	cp.Range = slices.Clone(cp.Range)
	return cp, ok
}

// put records cp, committed or read under the lock, unless the cache holds a larger
// one of its stream already (sizes only grow; a put can arrive after a later one's).
func (c *sealCache) put(cp catalog.Checkpoint) {
	cp.Range = slices.Clone(cp.Range)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[catalog.LogID]catalog.Checkpoint)
	}
	old, ok := c.m[cp.Log]
	switch {
	case ok && old.Size > cp.Size:
		return
	case !ok && len(c.m) >= sealCacheMax:
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[cp.Log] = cp
}

// drop forgets the checkpoints of logs (a seal whose guess was wrong, or whose commit
// has an unknown outcome).
func (c *sealCache) drop(logs ...catalog.LogID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		delete(c.m, l)
	}
}

// chill makes the cache give no guess for logs during chillFor.
func (c *sealCache) chill(logs ...catalog.LogID) {
	if len(logs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	until := time.Now().Add(cmp.Or(c.chillFor, chillFor))
	if c.cold == nil || len(c.cold) >= sealCacheMax {
		c.cold = make(map[catalog.LogID]time.Time) // forgetting only costs guesses
	}
	for _, l := range logs {
		c.cold[l] = until
	}
}
