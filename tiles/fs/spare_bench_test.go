//go:build linux

package fs

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// BenchmarkReplaceNote measures a publication round of 10 quiet streams among 1,000
// on the filesystem store (one CreateAllThenPutAll): for each stream a new partial
// tile and a new checkpoint note, the note through its spare (exchanged) or through
// a new temporary file each time (the spare never rests), cycling over the streams.
// Besides the time it reports the process's CPU time per stream publication
// (getrusage: the system time of creating inodes is what the spare saves; the round's
// three syncfs are shared by its streams). The data lives under
// $SEALTRAIL_BENCH_DIR if set.
func BenchmarkReplaceNote(b *testing.B) {
	const streams, perRound = 1000, 10
	for _, way := range []string{"spare", "temp"} {
		b.Run("note="+way, func(b *testing.B) {
			dir, err := os.MkdirTemp(os.Getenv("SEALTRAIL_BENCH_DIR"), "fs-note-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			s, err := New(dir)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			defer func() { clock = time.Now }()
			if way == "temp" {
				clock = func() time.Time { return time.Time{} } // no spare ever rests
			} else {
				clock = func() time.Time { return time.Now().Add(time.Hour) }
			}
			// round publishes streams n, n+1, ... n+perRound-1 (modulo streams).
			round := func(n int) {
				var objs, notes []tiles.Object
				for k := n; k < n+perRound; k++ {
					stream, pub := k%streams, k/streams
					objs = append(objs, tiles.Object{Key: fmt.Sprintf("p%04d/tile/0/%03d.p/%d", stream, pub/255, pub%255+1), Data: []byte("tile")})
					notes = append(notes, tiles.Object{Key: fmt.Sprintf("p%04d/checkpoint", stream), Data: fmt.Appendf(nil, "example.com/log\n%d\nroot\n", pub)})
				}
				if err := s.CreateAllThenPutAll(ctx, objs, tiles.ImmutableAttrs, notes, tiles.CheckpointAttrs); err != nil {
					b.Fatal(err)
				}
			}
			// Two publications of every stream first: its directories, note and spare.
			n := 0
			for ; n < 2*streams; n += perRound {
				round(n)
			}
			before := cpuTime()
			for b.Loop() {
				round(n)
				n += perRound
			}
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N*perRound), "cpu-µs/publication")
		})
	}
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
