package fs_test

import (
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/sealtrail/sealtrail/tiles"
)

// BenchmarkPublish measures one publication of a 256-leaf batch on the filesystem
// store (tiles, entry bundle, then the checkpoint note), through CreateAllThenPut and
// through CreateAll followed by Put, the way a store without CreateAllThenPut goes.
// The data lives under $SEALTRAIL_BENCH_DIR if set (a real disk; the default temporary
// directory may be memory), and every write is synced, so the numbers are the disk's.
func BenchmarkPublish(b *testing.B) {
	for _, way := range []string{"CreateAllThenPut", "CreateAll+Put"} {
		b.Run("way="+way, func(b *testing.B) {
			s := benchStore(b, "fs-publish-")
			var st tiles.Store = s
			if way == "CreateAll+Put" {
				st = struct {
					tiles.Store
					tiles.BatchCreator
				}{s, s} // hides CreateAllThenPut
			}
			w := tiles.NewWriter(st, "p/events", nil)
			rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
			rng := rf.NewEmptyRange(0)
			size := uint64(0)
			for b.Loop() {
				b.StopTimer()
				leaves := make([][]byte, 256)
				for i := range leaves {
					leaves[i] = fmt.Appendf(nil, `{"id":"evt_%d","sequence":%d}`, size+uint64(i), size+uint64(i)+1)
					if err := rng.Append(rfc6962.DefaultHasher.HashLeaf(leaves[i]), nil); err != nil {
						b.Fatal(err)
					}
				}
				raw, err := rng.GetRootHash(nil)
				if err != nil {
					b.Fatal(err)
				}
				var root tlog.Hash
				copy(root[:], raw)
				note := fmt.Appendf(nil, "example.com/log\n%d\n%x\n", size+256, raw)
				b.StartTimer()
				if err := w.Publish(b.Context(), size, leaves, root, note); err != nil {
					b.Fatal(err)
				}
				size += 256
			}
		})
	}
}
