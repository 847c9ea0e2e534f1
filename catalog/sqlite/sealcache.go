package sqlite

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sealtrail/sealtrail/catalog"
)

// A seal starts from the committed checkpoint of each of its project-streams, and with
// many quiet streams in a tick, reading each one back (a query per stream) was a
// visible part of the tick. sealCache keeps the checkpoint each stream's last seal on
// this handle committed, with the receive time of its last event (what noteTimes
// compares the next batch with), so the next seal of the stream reads neither.
//
// A cached checkpoint is only ever a guess the commit checks: the seal's UPDATE is
// conditional on the size it started from, so a checkpoint moved by anything else
// makes the commit fail with catalog.ErrConflict (and drop the group's entries),
// never commit over it. Every write of this handle goes through its one writer
// connection, and SQLite's data_version of that connection changes only when another
// connection (another process on the same file) commits: a seal reads it first and
// empties the cache when it moved, so such a change costs no failed seal unless it
// lands during one. The published size is not taken from the cache: every read
// overlays the one in memory (published.go).
type sealCache struct {
	mu      sync.Mutex
	m       map[catalog.LogID]sealState
	version int64 // data_version of the writer when m was last known current
	known   bool  // version was read
}

// sealState is what the cache keeps of one project-stream.
type sealState struct {
	cp     catalog.Checkpoint
	lastMS int64 // receive time of event cp.Size, in ms (when cp.Size > 0)
}

// sealCacheMax bounds the project-streams the cache keeps (a checkpoint with its
// compact range is at most about 1.4 KB); past it, an arbitrary entry makes room.
const sealCacheMax = 16384

// sync empties the cache if another connection committed to the catalog since it was
// last known current, and then reports true (the first time too): what else the
// handle keeps of the file (recent.go) must be read again.
func (c *sealCache) sync(ctx context.Context, db *DB) (bool, error) {
	var v int64
	if err := db.tick.version.QueryRowContext(ctx).Scan(&v); err != nil {
		return false, fmt.Errorf("sqlite: data_version: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || v != c.version {
		clear(c.m)
		c.version, c.known = v, true
		return true, nil
	}
	return false, nil
}

// get returns the cached state of log. Its compact range is a copy: the seal hands
// the checkpoint to code that could change it.
func (c *sealCache) get(log catalog.LogID) (sealState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[log]
	s.cp.Range = slices.Clone(s.cp.Range)
	return s, ok
}

// put records the state of log after a committed seal (a copy of its compact range).
func (c *sealCache) put(log catalog.LogID, s sealState) {
	s.cp.Range = slices.Clone(s.cp.Range)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[catalog.LogID]sealState)
	}
	if _, ok := c.m[log]; !ok && len(c.m) >= sealCacheMax {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[log] = s
}

// drop forgets the states of the project-streams of writes (a seal that failed, maybe
// because one of them moved).
func (c *sealCache) drop(logs []catalog.LogID, writes []sealWrite) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range writes {
		delete(c.m, logs[w.at])
	}
}
