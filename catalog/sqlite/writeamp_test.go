package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// walPages reads the WAL file at path and returns its valid frames (those carrying
// the header's salts) and the distinct pages they hold: what the commits appended and
// what a checkpoint writes back to the database file.
func walPages(tb testing.TB, path string) (frames, pages, pageSize int) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 32 {
		return 0, 0, 0
	}
	pageSize = int(binary.BigEndian.Uint32(b[8:12]))
	salt1, salt2 := binary.BigEndian.Uint32(b[16:20]), binary.BigEndian.Uint32(b[20:24])
	seen := map[uint32]bool{}
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		h := b[off : off+24]
		if binary.BigEndian.Uint32(h[8:12]) != salt1 || binary.BigEndian.Uint32(h[12:16]) != salt2 {
			break
		}
		frames++
		seen[binary.BigEndian.Uint32(h[0:4])] = true
	}
	return frames, len(seen), pageSize
}

// BenchmarkTickWrites measures where the bytes of a tick go on the default
// configuration, with the catalog's own files as the counters: each iteration seals
// ticksPerCheckpoint ticks of tickEvents events in one project-stream (one group commit
// each, as the sequencer does at c=200), then reads the WAL (frames appended by the
// commits, distinct pages a checkpoint writes back) and checkpoints it, as the
// background checkpointer does every 250 ms; the term indexer then indexes the same
// events and its WAL is read the same way. Reported per event: catalog WAL bytes,
// checkpoint write-back bytes, term-file WAL and write-back bytes, and WAL frames per
// tick (an fsync each: one commit per tick).
func BenchmarkTickWrites(b *testing.B) {
	const (
		tickEvents         = 200
		ticksPerCheckpoint = 10
	)
	for _, streams := range []int{1, 100} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "catalog.db")
			// The benchmark checkpoints itself, at known points.
			db := openMeasured(b, path, Options{})
			logs := make([]catalog.LogID, streams)
			for i := range logs {
				logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_amp%03d", i), Stream: catalog.StreamEvents}
			}
			per := tickEvents / streams
			fn := func(_ context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
				out := make([]*catalog.SealBatch, len(cps))
				for k, cp := range cps {
					out[k] = &catalog.SealBatch{BatchID: fmt.Sprintf("b%d-%d", k, cp.Size+1),
						Events: catalogtest.MakeEvents(fmt.Sprintf("s%d-", k), cp.Size+1, per),
						Root:   catalogtest.H(fmt.Sprint(cp.Size)), Range: []catalog.Hash{catalogtest.H("r")}}
				}
				return out, nil, nil
			}
			checkpoint := func(file string) (walBytes, backBytes int) {
				frames, pages, size := walPages(b, file+"-wal")
				c := db.w
				if file != path {
					c = db.terms.w
				}
				if _, err := c.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					b.Fatal(err)
				}
				return frames * (size + 24), pages * size
			}
			checkpoint(path)
			var catWAL, catBack, termWAL, termBack, frames int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for t := 0; t < ticksPerCheckpoint; t++ {
					if _, err := db.SealGroup(ctx, logs, fn); err != nil {
						b.Fatal(err)
					}
				}
				f, _, _ := walPages(b, path+"-wal")
				frames += f
				w, bb := checkpoint(path)
				catWAL, catBack = catWAL+w, catBack+bb
				db.terms.hold(false)
				if err := db.terms.catchUp(); err != nil {
					b.Fatal(err)
				}
				db.terms.hold(true)
				w, bb = checkpoint(path + termsSuffix)
				termWAL, termBack = termWAL+w, termBack+bb
			}
			b.StopTimer()
			events := float64(b.N * ticksPerCheckpoint * streams * per)
			b.ReportMetric(float64(catWAL)/events, "wal-B/event")
			b.ReportMetric(float64(catBack)/events, "writeback-B/event")
			b.ReportMetric(float64(termWAL)/events, "terms-wal-B/event")
			b.ReportMetric(float64(termBack)/events, "terms-writeback-B/event")
			b.ReportMetric(float64(frames)/float64(b.N*ticksPerCheckpoint), "frames/tick")
		})
	}
}

// openMeasured opens the catalog at path for a measurement of its writes: without
// the WAL checkpointer (the caller checkpoints, if at all, at known points) and with
// the term indexer held, so that only the seals write.
func openMeasured(tb testing.TB, path string, opts Options) *DB {
	tb.Helper()
	db, err := Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	if err := db.walc.stop(); err != nil {
		tb.Fatal(err)
	}
	db.walc = nil
	db.terms.hold(true)
	return db
}
