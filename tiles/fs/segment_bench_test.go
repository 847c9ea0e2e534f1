package fs_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/loadtest"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
)

// BenchmarkTickPayload measures the durable write of one commit tick's group payload
// (40 KB: about 30 events of 1 KB) on the filesystem store: an object of its own per
// tick (Create: a new file, its fsync, a rename, its folder's fsync) against an
// append to the open segment file (one write, one fdatasync). Besides the time it
// reports the process's CPU time (user and system) per tick, which is what a tick
// costs the server. The data lives under $SEALTRAIL_BENCH_DIR if set (a real disk).
func BenchmarkTickPayload(b *testing.B) {
	data := make([]byte, 40<<10)
	for _, way := range []string{"object", "append"} {
		b.Run("way="+way, func(b *testing.B) {
			s := benchStore(b, "fs-tick-")
			ctx := b.Context()
			i := 0
			cpu0 := selfCPU(b)
			for b.Loop() {
				if way == "object" {
					key, err := tiles.GroupPayloadKey(time.Now(), fmt.Sprintf("tick%d", i))
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Create(ctx, key, data, tiles.PrivateAttrs); err != nil {
						b.Fatal(err)
					}
				} else {
					slot, err := s.ReservePayload(ctx, int64(len(data)))
					if err != nil {
						b.Fatal(err)
					}
					if err := slot.Write(ctx, data); err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
			b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func selfCPU(b *testing.B) time.Duration {
	d, err := loadtest.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// benchStore is a store in a new directory under $SEALTRAIL_BENCH_DIR (a real disk; the
// default temporary directory may be memory), removed at the end of the benchmark.
func benchStore(b *testing.B, pattern string) *fs.Store {
	dir, err := os.MkdirTemp(os.Getenv("SEALTRAIL_BENCH_DIR"), pattern)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	s, err := fs.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
