package sequencer

import (
	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

// leafMemo keeps, per project-stream, the leaf data of the events this process
// committed and has not yet published (seqruns.go), so publication (and entry bundles
// served from the unpublished edge) take them from memory instead of reading the batch
// rows from the catalog and the payload bundles back from the payload cache or the
// store. With many quiet streams each publication carries a batch or two, and those
// reads (a catalog query per stream, then a bundle the payload cache had often already
// evicted) were a tenth of the server's CPU. The leaves are copies of the committed
// batch's own, taken after the commit; memory is bounded by leafMemoBytes over all
// streams.
type leafMemo struct{ seqRuns[[]byte] }

// leafMemoBytes bounds the leaf data the memo holds over all project-streams.
const leafMemoBytes = 64 << 20

func newLeafMemo() *leafMemo {
	return &leafMemo{newSeqRuns(func(d []byte) int { return len(d) }, leafMemoBytes, maxEdge)}
}

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
	buf := make([]byte, 0, size)
	leaves := make([][]byte, len(b.Records))
	for i := range b.Records {
		d := b.Records[i].LeafData
		buf = append(buf, d...)
		leaves[i] = buf[len(buf)-len(d) : len(buf) : len(buf)]
	}
	m.put(log, b.First, leaves)
}
