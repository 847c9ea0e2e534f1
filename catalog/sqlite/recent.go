package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// Log-structured tick rows (migrations/0015). A tick of many project-streams seals a
// few events in each, and their rows went straight into events (and its indexes:
// events_id, and before migrations/0017 events_action and events_status) and batches,
// where each stream's rows sit on leaf pages of their own: a tick of 1,000 streams
// dirtied about four 1 KiB pages per event, each logged to the WAL and written back by
// the checkpoint (BenchmarkManyStreamTicks). A small batch's rows now go to
// events_recent and batches_recent, whose rowids rise in commit order, so a tick's rows
// fill a few consecutive pages there; the merger moves them into events and batches in
// one transaction, in key order, when recentMergeRows rows have gathered, the oldest is
// recentMergeAge old or no seal came for recentQuiet, so each stream's pages are
// touched once per merge instead of once per tick. A batch of at least directRows
// events fills pages of its own and is written to events and batches directly, and so
// is every batch of a tick of at most directStreams project-streams: such a tick
// dirties a few pages of each tree wherever its rows go, and one busy stream's small
// ticks would otherwise pay for merges (and their pauses) that save it nothing.
//
// Every read takes both tables (a row is in exactly one of them in any snapshot: the
// merge is one transaction). Event ids are unique per project-stream across both:
// the seal checks a small batch's ids against the ids of events_recent, kept in
// memory here, and against events' (log, event_id) index, and a direct batch's ids
// against the same memory (events' unique index checks the rest). The memory is
// exact for a handle that is the file's only writer (SoleWriter); a seal that finds
// another connection committed (sealcache.go) reloads it from events_recent. A crash
// at any point leaves each row in one table: the merge commits whole or not at all,
// and Open merges whatever a crash or a close left.
//
// A catalog that went quiet (no seal for recentQuiet) merges at once: idle streams
// then cost no writes a few hundred milliseconds after their last seal
// (TestIdleStreamsCostNothing), and its rows rest in events.
//
// Merges of 8,192 rows: a merge holds the writer, and the ticks behind it wait, for
// about 90 ms at that size on this machine; and a larger recent table costs more per
// tick (the inserts into events_recent_k spread over more pages). With 1,000 streams
// of one event a tick, merging every 8 ticks cost 0.91 WAL frames per event for the
// event and batch rows, every 32 ticks 1.23. On a catalog of 800 events per stream
// the order reverses (2.53 against 1.76 frames per event, every tree counted), but
// merges of 16,384 rows raised the p99 latency by a fifth or more, so the size stays
// (docs/performance.md, "round10").
const (
	recentMergeRows = 8192
	recentMergeAge  = 2 * time.Second
	recentQuiet     = 150 * time.Millisecond
	recentInterval  = 50 * time.Millisecond
	directRows      = 32
	directStreams   = 4
)

// recentRows is what the handle knows of events_recent.
type recentRows struct {
	// write is held by a seal from its id checks until its ids are recorded, and by
	// a merge from its transaction until the ids are forgotten, so a seal never
	// checks ids against a half-updated memory.
	write sync.Mutex

	directRows    int // the smallest batch written to events directly
	directStreams int // the most streams of a tick whose batches all go to events directly (< 0: none)
	mergeRows     int // rows in events_recent that start a merge
	// fault, if set, runs after each merge statement; an error fails the merge (tests).
	fault func(step int) error
	// clean is set once scrubFreePages has overwritten the free list, and cleared by
	// every merge (whose freed pages keep their bytes): false at open, as nothing is
	// known of the file's free pages then.
	clean atomic.Bool

	mu     sync.Mutex
	ids    map[int64]map[string]uint64 // by log number: event id -> sequence
	rows   int                         // events in events_recent
	oldest time.Time                   // when the first of them was committed
	last   time.Time                   // when the last of them was committed

	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

// seq returns the sequence of event id of log number n if its row is in events_recent.
func (rr *recentRows) seq(n int64, id string) (uint64, bool) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	s, ok := rr.ids[n][id]
	return s, ok
}

// add records the events of a committed seal of log number n as in events_recent.
func (rr *recentRows) add(n int64, events []catalog.Event, now time.Time) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.ids == nil {
		rr.ids = make(map[int64]map[string]uint64)
	}
	m := rr.ids[n]
	if m == nil {
		m = make(map[string]uint64, len(events))
		rr.ids[n] = m
	}
	for i := range events {
		m[events[i].ID] = events[i].Sequence
	}
	if rr.rows == 0 {
		rr.oldest = now
	}
	rr.last = now
	rr.rows += len(events)
	if rr.rows >= rr.mergeRows {
		select {
		case rr.wake <- struct{}{}:
		default:
		}
	}
}

// has reports whether log number n has rows in events_recent.
func (rr *recentRows) has(n int64) bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return len(rr.ids[n]) > 0
}

// due reports whether a merge is due at now.
func (rr *recentRows) due(now time.Time) bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.rows >= rr.mergeRows || rr.rows > 0 && (now.Sub(rr.oldest) >= recentMergeAge || now.Sub(rr.last) >= recentQuiet)
}

// reset forgets every id: events_recent is empty.
func (rr *recentRows) reset() {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	clear(rr.ids)
	rr.rows = 0
}

// reload reads the ids of events_recent again, after another connection committed.
// Called with rr.write held.
func (db *DB) reloadRecent(ctx context.Context) error {
	ids := make(map[int64]map[string]uint64)
	rows := 0
	if err := eachRow(ctx, db.w, `SELECT log, event_id, k FROM events_recent`, nil, func(r *sql.Rows) error {
		var n, k int64
		var id string
		if err := r.Scan(&n, &id, &k); err != nil {
			return err
		}
		if ids[n] == nil {
			ids[n] = make(map[string]uint64)
		}
		ids[n][id] = seqOf(k)
		rows++
		return nil
	}); err != nil {
		return fmt.Errorf("sqlite: ids of recent events: %w", err)
	}
	rr := &db.recent
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.ids, rr.rows = ids, rows
	if rows > 0 {
		rr.oldest, rr.last = db.now(), db.now()
	}
	return nil
}

// mergeRecent moves every row of events_recent and batches_recent into events and
// batches, in one transaction: a crash leaves them all in one table or all in the
// other, and merging again after it is the same merge.
func (db *DB) mergeRecent(ctx context.Context) error {
	rr := &db.recent
	rr.write.Lock()
	defer rr.write.Unlock()
	moved := int64(0)
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		moved = 0
		for i, s := range mergeStatements {
			res, err := tx.ExecContext(ctx, s)
			if err != nil {
				return fmt.Errorf("%.50s: %w", s, err)
			}
			if strings.HasPrefix(s, "DELETE") {
				n, _ := res.RowsAffected()
				moved += n
			}
			if rr.fault != nil {
				if err := rr.fault(i); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		// A failed merge may have stopped between the two secure_delete pragmas.
		if _, rerr := db.w.ExecContext(ctx, secureDeleteOn); rerr != nil {
			return fmt.Errorf("sqlite: merge recent rows: %w (and restoring secure_delete: %w)", err, rerr)
		}
		return fmt.Errorf("sqlite: merge recent rows: %w", err)
	}
	if moved > 0 { // an empty merge frees no pages
		rr.clean.Store(false)
	}
	rr.reset()
	return nil
}

// secureDeleteOn is the writer's setting (sqlite.go), which the merge relaxes for the
// pages it frees.
const secureDeleteOn = `PRAGMA secure_delete = ON`

// mergeStatements move the recent rows, in the order of each target's key. The
// emptied recent tables' pages go to the free list with their bytes (secure_delete
// FAST still zeroes deleted cells on pages it writes, but not the pages it frees):
// zeroing them had logged a page of zeros to the WAL for every page the recent rows
// had filled, 0.21 of the 1.44 WAL frames per event of a tick of 1,000 streams with
// its merge (TestManyStreamsWriteAmplification). Those bytes are copies of the rows
// just moved into events, and the next ticks reuse the pages; ScrubEvents, which must
// leave no copy of what it blanks, overwrites the whole free list (scrubFreePages).
var mergeStatements = []string{
	`INSERT INTO events(k, log, event_id, received_ms, action, status, actor_type, actor_id, target_type, target_id, payload_hash, leaf_hash)
		SELECT k, log, event_id, received_ms, action, status, actor_type, actor_id, target_type, target_id, payload_hash, leaf_hash
		FROM events_recent ORDER BY k`,
	`INSERT INTO batches(k, count, batch_id, created_ms, object, payload_offset, payload_length)
		SELECT ` + sqlKey("log", "first_seq") + `, count, batch_id, created_ms, object, payload_offset, payload_length
		FROM batches_recent ORDER BY 1`,
	`PRAGMA secure_delete = FAST`,
	`DELETE FROM events_recent`,
	`DELETE FROM batches_recent`,
	secureDeleteOn,
}

// startMerger starts the goroutine that merges the recent rows when due.
func (db *DB) startMerger() {
	rr := &db.recent
	rr.wake, rr.quit, rr.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(rr.done)
		tick := time.NewTicker(recentInterval)
		defer tick.Stop()
		for {
			select {
			case <-rr.quit:
				return
			case <-tick.C:
			case <-rr.wake:
			}
			if !rr.due(db.now()) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := db.mergeRecent(ctx); err != nil {
				db.log.Warn("sqlite: merging recent rows", slog.Any("err", err))
			}
			cancel()
		}
	}()
}

// stopMerger stops the merger goroutine, if started.
func (db *DB) stopMerger() {
	rr := &db.recent
	if rr.quit != nil {
		close(rr.quit)
		<-rr.done
		rr.quit = nil
	}
}

// checkIDs fails with catalog.ErrExists if an event of writes re-uses an event id of
// its project-stream: one in events_recent (the memory of them), one twice in a
// batch bound for events_recent, or, for those batches, one in events (one multi-row
// read of its unique index). A batch bound for events meets that index itself.
func (db *DB) checkIDs(ctx context.Context, tx *sql.Tx, logs []catalog.LogID, writes []sealWrite) error {
	type pair struct {
		n  int64
		id string
	}
	var small []pair
	for _, w := range writes {
		var seen map[string]bool
		if !w.direct {
			seen = make(map[string]bool, len(w.b.Events))
		}
		for i := range w.b.Events {
			id := w.b.Events[i].ID
			if _, ok := db.recent.seq(w.n, id); ok || seen[id] {
				return fmt.Errorf("%w: event id %q in %s", catalog.ErrExists, id, logs[w.at])
			}
			if seen != nil {
				seen[id] = true
				small = append(small, pair{w.n, id})
			}
		}
	}
	var found error
	err := db.tick.ids.query(ctx, tx, len(small), func(i int, to []any) []any {
		return append(to, small[i].n, small[i].id)
	}, func(r *sql.Rows) error {
		var n int64
		var id string
		if err := r.Scan(&n, &id); err != nil {
			return err
		}
		if found == nil {
			found = fmt.Errorf("%w: event id %q in project-stream %d", catalog.ErrExists, id, n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("look up event ids: %w", err)
	}
	return found
}
