package sequencer

import (
	"sync"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

// leafMemo keeps, per project-stream, the leaf data of the events this process
// committed and has not yet published, so publication (and entry bundles served from
// the unpublished edge) take them from memory instead of reading the batch rows from
// the catalog and the payload bundles back from the payload cache or the store. With
// many quiet streams each publication carries a batch or two, and those reads (a
// catalog query per stream, then a bundle the payload cache had often already
// evicted) were a tenth of the server's CPU.
//
// It is an optimization only: the leaves are copies of the committed batch's own,
// taken after the commit, and a range it does not hold whole (events another replica
// committed, a restart, a stream past its share of the budget) is read as before.
// Memory is bounded by leafMemoBytes over all streams: past it, new leaves are not
// kept, and publication trims what it has published.
type leafMemo struct {
	mu    sync.Mutex
	runs  map[catalog.LogID]*leafRun
	bytes int // leaf bytes held in runs
}

// leafRun holds the leaf data of sequences first, first+1, ...
type leafRun struct {
	first  uint64
	leaves [][]byte
	bytes  int
}

// leafMemoBytes bounds the leaf data the memo holds over all project-streams.
const leafMemoBytes = 64 << 20

func newLeafMemo() *leafMemo { return &leafMemo{runs: map[catalog.LogID]*leafRun{}} }

// add records the leaves of the committed payload bundle b (sequences b.First...) of
// log, in one copy.
func (m *leafMemo) add(log catalog.LogID, b *tiles.PayloadBundle) {
	if b == nil || len(b.Records) == 0 {
		return
	}
	size := 0
	for i := range b.Records {
		size += len(b.Records[i].LeafData)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.runs[log]
	if r != nil && r.first+uint64(len(r.leaves)) != b.First {
		m.dropLocked(log, r)
		r = nil
	}
	if m.bytes+size > leafMemoBytes {
		if r != nil {
			m.dropLocked(log, r) // a run with a gap would be of no use
		}
		return
	}
	if r == nil {
		r = &leafRun{first: b.First}
		m.runs[log] = r
	}
	buf := make([]byte, 0, size)
	for i := range b.Records {
		d := b.Records[i].LeafData
		buf = append(buf, d...)
		r.leaves = append(r.leaves, buf[len(buf)-len(d):len(buf):len(buf)])
	}
	r.bytes += size
	m.bytes += size
}

func (m *leafMemo) dropLocked(log catalog.LogID, r *leafRun) {
	m.bytes -= r.bytes
	delete(m.runs, log)
}

// trim forgets the leaves of sequences up to published.
func (m *leafMemo) trim(log catalog.LogID, published uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.runs[log]
	if r == nil || published < r.first {
		return
	}
	if published+1 >= r.first+uint64(len(r.leaves)) {
		m.dropLocked(log, r)
		return
	}
	k := published + 1 - r.first
	for _, d := range r.leaves[:k] {
		r.bytes -= len(d)
		m.bytes -= len(d)
	}
	r.leaves = append([][]byte(nil), r.leaves[k:]...)
	r.first = published + 1
}

// get returns the leaf data of sequences [from, to] if it holds all of them. The
// slices are shared and must not be modified.
func (m *leafMemo) get(log catalog.LogID, from, to uint64) ([][]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.runs[log]
	if r == nil || from > to || from < r.first || to >= r.first+uint64(len(r.leaves)) {
		return nil, false
	}
	return append([][]byte(nil), r.leaves[from-r.first:to+1-r.first]...), true
}
