package sequencer

import (
	"sync"

	"github.com/sealtrail/sealtrail/catalog"
)

// seqRuns keeps, per project-stream, one value per sequence for a run of consecutive
// sequences this process committed and has not yet published: the leaf hashes proofs
// are computed over (edgeCache) and the leaf data publication writes (leafMemo). It
// only saves reading what the catalog and the payload objects hold too, so a range it
// does not hold whole is simply a miss. Memory is bounded by maxBytes over all
// streams and maxPerLog values per stream: an addition past either drops the
// stream's run (a run with a gap would be of no use) and keeps nothing until the
// stream's next batch; publication trims what it has published.
type seqRuns[T any] struct {
	cost      func(T) int // bytes of one value
	maxBytes  int
	maxPerLog int

	mu    sync.Mutex
	runs  map[catalog.LogID]*seqRun[T]
	bytes int // cost of the values held, over all streams
}

// seqRun holds the values of sequences first, first+1, ...
type seqRun[T any] struct {
	first uint64
	vals  []T
	bytes int
}

func newSeqRuns[T any](cost func(T) int, maxBytes, maxPerLog int) seqRuns[T] {
	return seqRuns[T]{cost: cost, maxBytes: maxBytes, maxPerLog: maxPerLog, runs: map[catalog.LogID]*seqRun[T]{}}
}

// put records vals, the values of the committed sequences first, first+1, ... of log.
func (c *seqRuns[T]) put(log catalog.LogID, first uint64, vals []T) {
	if len(vals) == 0 {
		return
	}
	size := 0
	for _, v := range vals {
		size += c.cost(v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[log]
	if r != nil && r.first+uint64(len(r.vals)) != first {
		c.dropLocked(log, r) // a gap: another replica committed in between
		r = nil
	}
	held := 0
	if r != nil {
		held = len(r.vals)
	}
	if c.bytes+size > c.maxBytes || held+len(vals) > c.maxPerLog {
		if r != nil {
			c.dropLocked(log, r)
		}
		return
	}
	if r == nil {
		r = &seqRun[T]{first: first}
		c.runs[log] = r
	}
	r.vals = append(r.vals, vals...)
	r.bytes += size
	c.bytes += size
}

func (c *seqRuns[T]) dropLocked(log catalog.LogID, r *seqRun[T]) {
	c.bytes -= r.bytes
	delete(c.runs, log)
}

// trim forgets the values of sequences up to published.
func (c *seqRuns[T]) trim(log catalog.LogID, published uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[log]
	if r == nil || published < r.first {
		return
	}
	if published+1 >= r.first+uint64(len(r.vals)) {
		c.dropLocked(log, r)
		return
	}
	k := published + 1 - r.first
	for _, v := range r.vals[:k] {
		n := c.cost(v)
		r.bytes -= n
		c.bytes -= n
	}
	r.vals = append([]T(nil), r.vals[k:]...)
	r.first = published + 1
}

// get returns the values of sequences [from, to] if it holds all of them, in a new
// slice.
func (c *seqRuns[T]) get(log catalog.LogID, from, to uint64) ([]T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[log]
	if r == nil || from > to || from < r.first || to >= r.first+uint64(len(r.vals)) {
		return nil, false
	}
	return append([]T(nil), r.vals[from-r.first:to+1-r.first]...), true
}
