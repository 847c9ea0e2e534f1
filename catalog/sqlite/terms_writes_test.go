package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// BenchmarkTermWrites measures what the term indexer writes per event in the steady
// state of one busy project-stream whose events name recurring ids (actors ids out of
// 1,000 and target ids out of 3,000, as the load test's events and a real tenant's
// users and documents do): each chunk inserts one posting per id it holds next to that
// id's earlier postings, so once the index is larger than the ids of a chunk, every
// chunk dirties about one leaf page per id however few events it holds. chunk is the
// events indexed per transaction (termInterval's worth of events at the load test's
// rate, or termChunk, the size of a busy stream's chunks). Reported: the term file's WAL bytes and checkpoint write-back
// bytes per event, measured over the chunks after warm ones that grow the index
// first.
func BenchmarkTermWrites(b *testing.B) {
	const (
		tick  = 200
		warm  = 30
		ticks = 3
	)
	for _, chunk := range []int{2000, termChunk} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "catalog.db")
			db := openMeasured(b, path, Options{})
			logs := []catalog.LogID{{ProjectID: "prj_terms", Stream: catalog.StreamEvents}}
			fn := recurringIDs(tick)
			index := func() (walBytes, backBytes int) {
				for range chunk / tick {
					if _, err := db.SealGroup(ctx, logs, fn); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					b.Fatal(err)
				}
				db.terms.hold(false)
				if err := db.terms.catchUp(); err != nil {
					b.Fatal(err)
				}
				db.terms.hold(true)
				frames, pages, size := walPages(b, path+termsSuffix+"-wal")
				if _, err := db.terms.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					b.Fatal(err)
				}
				return frames * (size + 24), pages * size
			}
			for range warm {
				index()
			}
			var wal, back int
			b.ResetTimer()
			for range b.N {
				for range ticks {
					w, bb := index()
					wal, back = wal+w, back+bb
				}
			}
			b.StopTimer()
			events := float64(b.N * ticks * chunk)
			b.ReportMetric(float64(wal)/events, "terms-wal-B/event")
			b.ReportMetric(float64(back)/events, "terms-writeback-B/event")
		})
	}
}

// TestTermIndexSchedule: the indexer indexes once the seals pause for termInterval or
// the oldest waiting event has waited termMaxDelay, never while nothing waits; a seal
// starts a wait and indexing everything ends it. A new term file has pageSize pages.
func TestTermIndexSchedule(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	ti := &termIndex{}
	if ti.due(t0) {
		t.Fatal("due with nothing waiting")
	}
	ti.waiting, ti.lastSeal = t0, t0
	for _, c := range []struct {
		lastSeal, now time.Duration
		want          bool
	}{
		{0, termInterval / 2, false},                             // seals just came
		{0, termInterval, true},                                  // a pause
		{termMaxDelay - termInterval/2, termMaxDelay - 1, false}, // steady seals, not long enough
		{termMaxDelay - termInterval/2, termMaxDelay, true},      // steady seals, waited long enough
	} {
		ti.lastSeal = t0.Add(c.lastSeal)
		if got := ti.due(t0.Add(c.now)); got != c.want {
			t.Errorf("last seal at +%s, at +%s: due %v, want %v", c.lastSeal, c.now, got, c.want)
		}
	}

	db := openMeasured(t, filepath.Join(t.TempDir(), "catalog.db"), Options{})
	var size int
	if err := db.terms.w.QueryRowContext(context.Background(), `PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size != pageSize {
		t.Errorf("a new term file has %d-byte pages, want %d", size, pageSize)
	}
	catalogtest.Seal(t, db, catalog.LogID{ProjectID: "prj_sched", Stream: catalog.StreamEvents}, "s-", 3)
	db.terms.mu.Lock()
	waiting := db.terms.waiting
	db.terms.mu.Unlock()
	if waiting.IsZero() {
		t.Fatal("a seal left nothing waiting")
	}
	db.terms.hold(false)
	if err := db.terms.catchUp(); err != nil {
		t.Fatal(err)
	}
	if db.terms.due(time.Now().Add(time.Hour)) {
		t.Fatal("due after everything was indexed")
	}
}

// BenchmarkTermCheckpoints measures what the term file writes per event, the write-back
// of its WAL checkpoints included, while the indexer indexes chunk after chunk of one
// busy stream (BenchmarkTermWrites's events), with SQLite checkpointing the term WAL
// inside the commit that crosses wal_autocheckpoint pages: the default's 1,000 pages
// against the term file's own setting (termAutocheckpoint). Reported: the process's
// write_bytes (4 KiB page-cache pages dirtied, the load tool's measure) per event over
// the indexing of the measured chunks and a final checkpoint, and the term WAL's
// write-back per event.
func BenchmarkTermCheckpoints(b *testing.B) {
	const (
		tick  = 256
		warm  = 8
		ticks = 12
	)
	for _, pages := range []int{1000, termAutocheckpoint} {
		b.Run(fmt.Sprintf("autocheckpoint=%d", pages), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "catalog.db")
			db := openMeasured(b, path, Options{})
			if _, err := db.terms.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, pages)); err != nil {
				b.Fatal(err)
			}
			logs := []catalog.LogID{{ProjectID: "prj_terms", Stream: catalog.StreamEvents}}
			fn := recurringIDs(tick)
			// index seals chunks chunks of events, then indexes them (one transaction
			// per termChunk events) and returns the write_bytes of the indexing alone.
			index := func(chunks int, final bool) int64 {
				for range chunks * termChunk / tick {
					if _, err := db.SealGroup(ctx, logs, fn); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					b.Fatal(err)
				}
				before := processWriteBytes(b)
				db.terms.hold(false)
				if err := db.terms.catchUp(); err != nil {
					b.Fatal(err)
				}
				db.terms.hold(true)
				if final {
					if _, err := db.terms.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
						b.Fatal(err)
					}
				}
				return processWriteBytes(b) - before
			}
			index(warm, true)
			var written int64
			b.ResetTimer()
			for range b.N {
				written += index(ticks, true)
			}
			b.StopTimer()
			b.ReportMetric(float64(written)/float64(b.N*ticks*termChunk), "terms-io-B/event")
		})
	}
}

// recurringIDs seals tick events in one project-stream, naming actor ids out of 1,000
// and target ids out of 3,000 in turn.
func recurringIDs(tick int) catalog.SealGroupFunc {
	return func(_ context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		evs := catalogtest.MakeEvents("t-", cps[0].Size+1, tick)
		for i := range evs {
			s := evs[i].Sequence
			evs[i].ActorID = fmt.Sprintf("usr_%04d", s*7%1000)
			evs[i].TargetType, evs[i].TargetID = "doc", fmt.Sprintf("doc_%05d", s*13%3000)
		}
		return []*catalog.SealBatch{{BatchID: fmt.Sprint("b", cps[0].Size+1), Events: evs,
			Root: catalogtest.H(fmt.Sprint(cps[0].Size)), Range: []catalog.Hash{catalogtest.H("r")}}}, nil, nil
	}
}
