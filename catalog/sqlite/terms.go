package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/sealtrail/sealtrail/catalog"
)

// The term index maps each actor id, target id, action and status to the sequences
// of its events. It is the one index a seal does not write: actor and target ids are
// spread across the whole key space, so inserting a batch's entries dirtied about one
// page of each index per event, and SQLite writes whole pages to its WAL; actions and
// statuses are few, but each project-stream's entries for one of them are a run of
// their own in the middle of an index, so a merge of many streams' rows (recent.go)
// dirtied a leaf, its siblings and parent of the events_action and events_status
// indexes per stream and value, more as the catalog grew (migrations/0017). Instead a
// background indexer indexes committed events in chunks, on its own connection to
// its own file, "<catalog>-terms", so it never holds the catalog's write lock.
//
// The index is a set of postings: for each chunk of a project-stream's events the
// indexer groups them by value and writes one row per (kind, value), holding every
// sequence of that value in the chunk. A value that recurs (a user, a service
// account, an action) costs one row per chunk, not one per event: a B-tree insert per
// event was most of the indexer's cost. A chunk covers a range of sequences that no
// other chunk covers, so the postings of one value never overlap and their order by
// last sequence is their order.
//
// The postings are laid out by segment (terms_segments.go): a chunk's postings form a
// new segment at the right edge of its stream's postings, sorted by value within it,
// and the indexer merges a stream's small segments into larger ones, so a chunk
// writes a few contiguous pages wherever its values fall. Keyed by value alone, each
// posting of a value the stream had not named went to a leaf of its own among the
// stream's earlier postings, one 1 KiB WAL frame and one 4 KiB block at the file's
// checkpoint per new actor or target, more as the stream grew (docs/performance.md,
// "round14"). A query seeks the value in each segment its range overlaps, in order.
//
// It is derived data: every sequence in it is copied from an events row. Per
// project-stream, term_state.indexed_seq says up to which sequence the index is
// complete; it commits in the same transaction as the postings. A query drives its
// actor, target, action or status filter through the postings up to that sequence
// and scans the few events after it (QueryEvents), so a lagging indexer makes
// queries slower, never wrong. The file is written with synchronous=NORMAL: a power
// loss can lose its last commits, watermark and postings together, and the indexer
// redoes them. A term file left by another catalog (term_meta.catalog_id), in
// another format, or ahead of this catalog (restored from an older backup) is
// emptied at open and rebuilt.
const (
	termActor  = 1 // term_postings.kind of an actor id
	termTarget = 2 // term_postings.kind of a target id
	termAction = 3 // term_postings.kind of an action
	termStatus = 4 // term_postings.kind of a status

	// termsFormat is term_meta.format; another value empties the file at open.
	// Format 1 kept one event_terms row per event and id; format 2 had no actions
	// and statuses, which the catalog's own indexes held; format 3 keyed postings by
	// value alone, without segments.
	termsFormat = "4"

	// termChunk is the events one indexer transaction indexes, and, by default
	// (termMinChunk), how many of a project-stream's events must wait before it is
	// indexed at all: each chunk is then a final segment as written, and every
	// posting is written once. Indexing whatever had gathered every two seconds made
	// a quiet stream's chunks a few events each, which the size-tiered merges
	// (terms_segments.go) then rewrote once per tier on their way to a final
	// segment: with a thousand tenants the indexer's CPU grew with every round of
	// the load test (docs/performance.md, "round20"). A query drives through the
	// postings up to the watermark and scans the events after it, so that scan stays
	// bounded by termChunk events (at most about 4 ms, BenchmarkQueryTail), and a
	// stream that never gathers termChunk events is never indexed and never needs to
	// be. With recurring ids (users, documents) a chunk's pages grow with its ids,
	// not its events (BenchmarkTermWrites).
	//
	// termInterval is how often the indexer looks for due work, and termMaxDelay
	// how long the oldest due work waits at most: it indexes at once when termChunk
	// events of a stream wait (the seal wakes it), and otherwise, for work a wake
	// did not take (a failed pass, or a smaller minChunk), once no seal came for
	// termInterval or the oldest has waited termMaxDelay.
	termInterval = 500 * time.Millisecond
	termMaxDelay = 2 * time.Second
	termChunk    = 16384

	// termAutocheckpoint is the term file's wal_autocheckpoint, in pages. SQLite
	// checkpoints the WAL inside the commit that takes it past that size, on the
	// indexer's goroutine (the term file has no checkpointer of its own). At the
	// default 1,000 pages a busy stream's chunk (one page per id it holds) crossed it
	// every time, and the checkpoint wrote back pages the next chunks dirtied again:
	// each id's newest posting page takes its next chunks' postings too. Larger, a
	// page is written back once for the several chunks that change it
	// (BenchmarkTermCheckpoints); the WAL then grows to about 8 MiB at 1 KiB pages.
	termAutocheckpoint = 8192
)

// TermChunk is termChunk, for benchmarks outside the package that wait for the term
// index: it lags a project-stream by fewer events than this once it has caught up.
const TermChunk = termChunk

// termMinChunk is minChunk of each term index opened: how many of a project-stream's
// events must wait before the indexer indexes it (see termChunk). A variable so that
// tests of the postings can index every event (IndexEveryEvent).
var termMinChunk uint64 = termChunk

const termsSchema = `
CREATE TABLE IF NOT EXISTS term_meta (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS term_state (
  log         INTEGER PRIMARY KEY, -- logs.id in the catalog
  indexed_seq INTEGER NOT NULL     -- events 1..indexed_seq have their entries
);
CREATE TABLE IF NOT EXISTS term_segments (
  log INTEGER NOT NULL,
  lo  INTEGER NOT NULL, -- the segment indexes the events lo+1..hi of the log
  hi  INTEGER NOT NULL,
  PRIMARY KEY (log, lo)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS term_postings (
  log   INTEGER NOT NULL,
  seg   INTEGER NOT NULL, -- term_segments.lo of the segment that holds it
  kind  INTEGER NOT NULL, -- 1 actor id, 2 target id, 3 action, 4 status
  value TEXT NOT NULL,    -- the id, action or status
  last  INTEGER NOT NULL, -- the highest sequence in seqs
  seqs  TEXT NOT NULL,    -- the sequences of events with this id, in decimal, comma-separated
  PRIMARY KEY (log, seg, kind, value, last)
) WITHOUT ROWID;`

// postingInserts write the postings of one chunk, one statement per kind: each groups
// the events with keys in (?1, ?2] of log ?3 (in events or events_recent, recent.go)
// by the kind's column, their sequences counted from ?4 (the sequence of key ?1, and
// the chunk's segment). One
// statement per kind: with UNION ALL over all, SQLite materialized the union before
// grouping it.
var postingInserts = [...]string{postingInsert(termActor, "actor_id"), postingInsert(termTarget, "target_id"),
	postingInsert(termAction, "action"), postingInsert(termStatus, "status")}

func postingInsert(kind int, col string) string {
	return fmt.Sprintf(`INSERT INTO term_postings(log, seg, kind, value, last, seqs)
		SELECT ?3, ?4, %d, %s, max(k) - ?1 + ?4, group_concat(k - ?1 + ?4) FROM (
			SELECT k, %[2]s FROM cat.events WHERE k > ?1 AND k <= ?2
			UNION ALL SELECT k, %[2]s FROM cat.events_recent WHERE k > ?1 AND k <= ?2)
		WHERE %[2]s <> '' GROUP BY %[2]s`, kind, col)
}

// termIndex owns the term file's writer connection and the indexer goroutine.
type termIndex struct {
	w    *sql.DB // one connection: the term file as main, the catalog attached as cat
	st   termStmts
	log  *slog.Logger
	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	mu        sync.Mutex
	committed map[int64]uint64    // by log number: committed size, as this handle knows it
	indexed   map[int64]uint64    // by log number: term_state.indexed_seq
	recent    map[int64]*recent   // by log number: ids of committed events not yet indexed
	keptTotal int                 // events in recent, over all logs (at most keptMax)
	minChunk  uint64              // a log is indexed once this many of its events wait (termMinChunk)
	tails     map[int64][]termSeg // by log number: its newest segments, as committed (terms_segments.go)
	held      bool                // tests: the indexer indexes nothing while set
	waiting   time.Time           // when the oldest event not yet indexed was sealed, as far as known; zero: none
	lastSeal  time.Time           // when sealed was last called
	vacuumAt  time.Time           // when the file's vacuum after a purge is due; zero: none (terms_vacuum.go)
	vacuumBy  time.Time           // when it is due at the latest
}

// openTerms opens (creating or emptying as needed) the term file at path for the
// catalog file catalogPath, whose meta.catalog_id is id, and starts the indexer.
func openTerms(ctx context.Context, path, catalogPath, id string, log *slog.Logger) (*termIndex, error) {
	// A new term file gets the catalog's small pages (pageSize): a chunk inserts one
	// posting per id it holds, each next to that id's earlier postings, so it dirties
	// about one leaf page per id, and SQLite logs each whole (BenchmarkTermWrites).
	if err := setPageSize(ctx, path); err != nil {
		return nil, fmt.Errorf("sqlite: page size of %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "cache_size(-"+strconv.Itoa(termCacheKiB)+")")
	q.Add("_pragma", "temp_store(MEMORY)")
	// As the catalog's: the postings ScrubEvents removes leave no bytes in the file.
	q.Add("_pragma", "secure_delete(1)")
	q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(termAutocheckpoint)+")")
	// Transactions begin deferred: BEGIN IMMEDIATE would take the write lock of the
	// attached catalog too, and the seals would wait for the indexer.
	w := sql.OpenDB(&attachConnector{dsn: "file:" + path + "?" + q.Encode(), name: "cat", path: catalogPath,
		cacheKiB: termCatalogCacheKiB})
	singleConn(w)
	ti := &termIndex{w: w, log: log, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		committed: make(map[int64]uint64), indexed: make(map[int64]uint64), recent: make(map[int64]*recent),
		tails: make(map[int64][]termSeg), minChunk: termMinChunk,
		waiting: time.Now()} // whatever is committed but not indexed at open
	if err := ti.load(ctx, id); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: term index %s: %w", path, err)
	}
	if err := ti.st.prepare(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: term index %s: %w", path, err)
	}
	go ti.run()
	return ti, nil
}

// load creates the schema, empties the file if it belongs to another catalog, another
// format, or runs ahead of the catalog, and reads the sizes to index up to.
func (ti *termIndex) load(ctx context.Context, id string) error {
	if _, err := ti.w.ExecContext(ctx, termsSchema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	meta := map[string]string{}
	if err := eachRow(ctx, ti.w, `SELECT name, value FROM term_meta`, nil, func(r *sql.Rows) error {
		var k, v string
		err := r.Scan(&k, &v)
		meta[k] = v
		return err
	}); err != nil {
		return err
	}
	if err := eachRow(ctx, ti.w, `SELECT c.log, c.size FROM cat.checkpoints c`, nil, func(r *sql.Rows) error {
		var n, size int64
		err := r.Scan(&n, &size)
		ti.committed[n] = uint64(size)
		return err
	}); err != nil {
		return err
	}
	if err := eachRow(ctx, ti.w, `SELECT log, indexed_seq FROM term_state`, nil, func(r *sql.Rows) error {
		var n, seq int64
		err := r.Scan(&n, &seq)
		ti.indexed[n] = uint64(seq)
		return err
	}); err != nil {
		return err
	}
	if meta["vacuum_due"] != "" { // a purge's vacuum a crash or a close left undone
		ti.vacuumAt, ti.vacuumBy = time.Now(), time.Now()
	}
	reason := ""
	switch {
	case meta["catalog_id"] != id:
		reason = "it belongs to another catalog"
	case meta["format"] != termsFormat:
		reason = "its format is " + meta["format"]
	}
	for n, seq := range ti.indexed {
		if seq > ti.committed[n] {
			reason = fmt.Sprintf("it indexes %d events of log %d, which has %d", seq, n, ti.committed[n])
		}
	}
	if reason == "" {
		return nil
	}
	if len(meta) > 0 {
		ti.log.Warn("sqlite: emptying the term index to rebuild it", slog.String("reason", reason))
	}
	tx, err := ti.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range []string{`DROP TABLE IF EXISTS event_terms`, `DROP TABLE term_postings`, `DROP TABLE term_segments`,
		`DROP TABLE term_state`, `DROP TABLE term_meta`, termsSchema} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("empty: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO term_meta(name, value) VALUES ('catalog_id', ?), ('format', ?)`, id, termsFormat); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	clear(ti.indexed)
	clear(ti.tails)
	return nil
}

// close stops the indexer and closes the connection; the index stays as committed.
func (ti *termIndex) close() error {
	close(ti.quit)
	<-ti.done
	ti.st.close()
	return ti.w.Close()
}

// sealed records that log number n has committed size size, the last events being
// events (terms_recent.go).
func (ti *termIndex) sealed(n int64, size uint64, events []catalog.Event) {
	now := time.Now()
	ti.mu.Lock()
	ti.committed[n] = max(ti.committed[n], size)
	ti.keep(n, events)
	lag := size - min(size, ti.indexed[n])
	ti.lastSeal = now
	if ti.waiting.IsZero() && lag >= ti.minChunk {
		ti.waiting = now
	}
	ti.mu.Unlock()
	if lag >= termChunk {
		select {
		case ti.wake <- struct{}{}:
		default:
		}
	}
}

// hold stops (true) or resumes (false) indexing; for tests.
func (ti *termIndex) hold(h bool) {
	ti.mu.Lock()
	ti.held = h
	ti.mu.Unlock()
}

// untilClose returns a context that ends when the index closes (or cancel is called).
func (ti *termIndex) untilClose() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-ti.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (ti *termIndex) run() {
	defer close(ti.done)
	tick := time.NewTicker(termInterval)
	defer tick.Stop()
	// A vacuum in progress stops when the index closes; its record stays.
	ctx, cancel := ti.untilClose()
	defer cancel()
	for {
		select {
		case <-ti.quit:
			return
		case <-tick.C:
			if ok, err := ti.vacuumIfDue(ctx, time.Now()); err != nil && ctx.Err() == nil {
				ti.log.Error("sqlite: term index vacuum", slog.Any("err", err))
			} else if ok {
				ti.log.Info("sqlite: term index vacuumed after a scrub")
			}
			if !ti.due(time.Now()) {
				continue
			}
		case <-ti.wake:
		}
		if err := ti.catchUp(); err != nil {
			select {
			case <-ti.quit: // closing: the work left is redone at the next open
			default:
				ti.log.Error("sqlite: term index", slog.Any("err", err))
			}
		}
	}
}

// catchUp indexes every committed event not yet indexed, up to termChunk events of
// any number of project-streams per transaction: a tick of many quiet project-streams
// leaves a few events in each, and a transaction per project-stream rewrote the
// term_state page and a postings leaf once per stream (BenchmarkTickWrites).
func (ti *termIndex) catchUp() (err error) {
	ti.mu.Lock()
	if ti.held {
		ti.mu.Unlock()
		return nil
	}
	since := ti.waiting
	ti.waiting = time.Time{} // seals from now on start the next wait
	ti.mu.Unlock()
	defer func() {
		if err != nil { // what is left waits since then
			ti.mu.Lock()
			if ti.waiting.IsZero() || since.Before(ti.waiting) {
				ti.waiting = since
			}
			ti.mu.Unlock()
		}
	}()
	ctx, cancel := ti.untilClose()
	defer cancel()
	for {
		work := ti.pending()
		if len(work) == 0 {
			return nil
		}
		if err := ti.indexAll(ctx, work); err != nil {
			if len(work) == 1 || ctx.Err() != nil {
				return err
			}
			// One project-stream's failure must not hold back the others': each
			// alone, as before the transactions were shared.
			for i := range work {
				if err := ti.indexAll(ctx, work[i:i+1]); err != nil {
					return err
				}
			}
		}
	}
}

// due reports whether the indexer should index at now (see termInterval): something
// waits, and either no seal came for termInterval or it has waited termMaxDelay.
func (ti *termIndex) due(now time.Time) bool {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	return !ti.waiting.IsZero() && (now.Sub(ti.lastSeal) >= termInterval || now.Sub(ti.waiting) >= termMaxDelay)
}

// termWork is one project-stream's part of an indexer transaction: index log number n
// up to sequence to.
type termWork struct {
	n  int64
	to uint64
}

// pending returns logs with at least minChunk events to index and the sizes to index
// them up to, at most termChunk events in all: at the default minChunk, one log's next
// whole chunk.
func (ti *termIndex) pending() []termWork {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.held {
		return nil
	}
	var work []termWork
	left := uint64(termChunk)
	for n, size := range ti.committed {
		if left == 0 {
			break
		}
		if from := ti.indexed[n]; from < size && size-from >= ti.minChunk {
			to := min(size, from+left)
			work = append(work, termWork{n: n, to: to})
			left -= to - from
		}
	}
	return work
}

// index adds the entries of log number n's events up to sequence to, from where
// term_state says the index ends, in one transaction with the new watermark.
func (ti *termIndex) index(ctx context.Context, n int64, to uint64) error {
	return ti.indexAll(ctx, []termWork{{n: n, to: to}})
}

// indexAll indexes every part of work in one transaction with their new watermarks.
// The postings and watermarks of all its project-streams go into multi-row
// statements prepared once (termStmts): a tick of many quiet streams hands the
// indexer one or two events per stream, and a statement or two per row, each parsed
// anew, was most of the indexer's cost.
func (ti *termIndex) indexAll(ctx context.Context, work []termWork) error {
	tx, err := ti.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	done := make([]uint64, len(work))
	var (
		ps     []logPosting
		states []termWork
		tails  [][]termSeg // by states: the log's newest segments, the chunk's last
	)
	froms, err := ti.watermarks(ctx, tx, work)
	if err != nil {
		return err
	}
	if err := ti.checkSeen(ctx, tx, work, froms); err != nil {
		return err
	}
	for i, w := range work {
		from := froms[i]
		done[i] = max(from, w.to)
		if from >= w.to {
			continue
		}
		tail, err := ti.tail(ctx, tx, w.n, from)
		if err != nil {
			return err
		}
		kept, err := ti.indexLog(ctx, tx, w.n, from, w.to)
		if err != nil {
			return err
		}
		ps = append(ps, kept...)
		states = append(states, w)
		tails = append(tails, append(tail, termSeg{lo: from, hi: w.to}))
	}
	if len(states) > 0 {
		if err := ti.insertPostings(ctx, tx, ps); err != nil {
			return fmt.Errorf("index %d postings of %d logs: %w", len(ps), len(states), err)
		}
		if _, err := ti.st.segments.exec(ctx, tx, len(states), func(i int, to []any) []any {
			seg := tails[i][len(tails[i])-1]
			return append(to, states[i].n, int64(seg.lo), int64(seg.hi))
		}); err != nil {
			return fmt.Errorf("segments of %d logs: %w", len(states), err)
		}
		if _, err := ti.st.state.exec(ctx, tx, len(states), func(i int, to []any) []any {
			return append(to, states[i].n, int64(states[i].to))
		}); err != nil {
			return fmt.Errorf("watermarks of %d logs: %w", len(states), err)
		}
		for i, w := range states {
			if tails[i], err = ti.compact(ctx, tx, w.n, tails[i]); err != nil {
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	ti.mu.Lock()
	for i, w := range work {
		ti.indexed[w.n] = max(ti.indexed[w.n], done[i])
		ti.forget(w.n, ti.indexed[w.n])
	}
	for i, w := range states {
		ti.tails[w.n] = tails[i]
	}
	ti.mu.Unlock()
	return nil
}

// logPosting is a posting of log number n of one of the kinds (termActor, ...), in
// its segment seg.
type logPosting struct {
	n    int64
	seg  uint64
	kind int
	posting
}

// watermarks returns, in tx, term_state's watermark of each log of work (0 for a log
// it has none of), in one statement.
func (ti *termIndex) watermarks(ctx context.Context, tx *sql.Tx, work []termWork) ([]uint64, error) {
	ns := make([]int64, len(work))
	for i, w := range work {
		ns[i] = w.n
	}
	got := make(map[int64]uint64, len(work))
	rows, err := tx.StmtContext(ctx, ti.st.watermarks).QueryContext(ctx, jsonInts(ns))
	if err != nil {
		return nil, fmt.Errorf("watermarks of %d logs: %w", len(work), err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, seq int64
		if err := rows.Scan(&n, &seq); err != nil {
			return nil, fmt.Errorf("watermarks of %d logs: %w", len(work), err)
		}
		got[n] = uint64(seq)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("watermarks of %d logs: %w", len(work), err)
	}
	out := make([]uint64, len(work))
	for i, w := range work {
		out[i] = got[w.n]
	}
	return out, nil
}

// checkSeen checks, in one statement, that tx sees the event each log of work is to be
// indexed up to (where that is past its watermark, froms). Seals commit whole batches
// of contiguous sequences, so if this transaction sees event to, it sees every event
// before it: the watermark never passes an event the index lacks.
func (ti *termIndex) checkSeen(ctx context.Context, tx *sql.Tx, work []termWork, froms []uint64) error {
	var keys []int64
	for i, w := range work {
		if froms[i] < w.to {
			keys = append(keys, key(w.n, w.to))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var seen int
	if err := tx.StmtContext(ctx, ti.st.seen).QueryRowContext(ctx, jsonInts(keys)).Scan(&seen); err != nil {
		return fmt.Errorf("last events of %d logs: %w", len(keys), err)
	}
	if seen == len(keys) {
		return nil
	}
	if len(keys) == 1 {
		return fmt.Errorf("log %d has no event %d to index up to", keys[0]>>seqBits, seqOf(keys[0]))
	}
	return fmt.Errorf("the catalog has %d of the %d events to index %d logs up to", seen, len(keys), len(keys))
}

// jsonInts returns ns as a JSON array, for json_each.
func jsonInts(ns []int64) string {
	b := make([]byte, 0, 1+12*len(ns))
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return string(append(b, ']'))
}

// indexLog returns, for log number n's events from its watermark from up to sequence
// to, their postings from the ids the seals handed over if they are all kept; if they
// are not, it writes the postings from the catalog itself, in tx. The caller writes
// the kept postings and the new watermark.
func (ti *termIndex) indexLog(ctx context.Context, tx *sql.Tx, n int64, from, to uint64) ([]logPosting, error) {
	// One posting per (kind, id) of the chunk, from the ids the seals handed over
	// if they are all kept, else from the catalog. Plain INSERT: the chunk starts
	// at the watermark, so a posting already there would be a bug, not a retry.
	if ps, ok := ti.keptPostings(n, from+1, to); ok {
		return ps, nil
	}
	lo, hi := key(n, from), key(n, to)
	for _, stmt := range postingInserts {
		if _, err := tx.ExecContext(ctx, stmt, lo, hi, n, int64(from)); err != nil {
			return nil, fmt.Errorf("index events of log %d in (%d, %d]: %w", n, from, to, err)
		}
	}
	return nil, nil
}

// seenQuery counts the keys of the JSON array ?1 that the catalog holds, in events or
// in events_recent (recent.go).
const seenQuery = `SELECT (SELECT count(*) FROM cat.events WHERE k IN (SELECT value FROM json_each(?1)))
	+ (SELECT count(*) FROM cat.events_recent WHERE k IN (SELECT value FROM json_each(?1)))`

// termStmts are the indexer's statements, prepared once on its connection.
type termStmts struct {
	watermarks *sql.Stmt // term_state rows of the logs in the JSON array ?
	segs       segStmts  // terms_segments.go
	seen       *sql.Stmt // how many of the keys in the JSON array ? the catalog holds
	postings   *rowStmts // INSERTs of term_postings rows
	segments   *rowStmts // INSERTs of term_segments rows
	state      *rowStmts // upserts of term_state rows
}

func (st *termStmts) prepare(ctx context.Context, w *sql.DB) error {
	var err error
	if st.watermarks, err = w.PrepareContext(ctx, `SELECT log, indexed_seq FROM term_state WHERE log IN (SELECT value FROM json_each(?))`); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if st.seen, err = w.PrepareContext(ctx, seenQuery); err != nil {
		st.close()
		return fmt.Errorf("prepare: %w", err)
	}
	if err = st.segs.prepare(ctx, w); err != nil {
		st.close()
		return err
	}
	if st.postings, err = prepareRows(ctx, w, 6, func(rows int) string {
		return `INSERT INTO term_postings(log, seg, kind, value, last, seqs) VALUES ` + valuesRows(rows, 6)
	}); err != nil {
		st.close()
		return err
	}
	if st.segments, err = prepareRows(ctx, w, 3, func(rows int) string {
		return `INSERT INTO term_segments(log, lo, hi) VALUES ` + valuesRows(rows, 3)
	}); err != nil {
		st.close()
		return err
	}
	if st.state, err = prepareRows(ctx, w, 2, func(rows int) string {
		return `INSERT INTO term_state(log, indexed_seq) VALUES ` + valuesRows(rows, 2) + `
			ON CONFLICT(log) DO UPDATE SET indexed_seq = excluded.indexed_seq`
	}); err != nil {
		st.close()
		return err
	}
	return nil
}

func (st *termStmts) close() {
	for _, s := range append([]*sql.Stmt{st.watermarks, st.seen}, st.segs.all()...) {
		if s != nil {
			s.Close()
		}
	}
	st.postings.close()
	st.segments.close()
	st.state.close()
}

// The indexer's page caches, in KiB: its own file's, and the attached catalog's.
// Every chunk of a tick of many project-streams inserts at the right edge of each
// stream's postings and reads each stream's last event (checkSeen), a page or two
// per stream in each file wherever the stream's rows lie. Once tenants had posted
// large batches the term file outgrew 32 MiB and the attached catalog ran on
// SQLite's default 2 MB, so those pages were read back from the files, one pread of
// 1 KiB each: the indexer's CPU per event grew eightfold between the first and the
// third round of the load test (docs/performance.md, "round19").
const (
	termCacheKiB        = 65536
	termCatalogCacheKiB = 16384
)

// attachConnector opens connections to dsn with the file at path attached under name,
// with a page cache of cacheKiB for it (0: SQLite's default).
type attachConnector struct {
	dsn, name, path string
	cacheKiB        int
	d               sqlite.Driver
}

func (c *attachConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite: connection cannot execute ATTACH")
	}
	if _, err := ex.ExecContext(ctx, `ATTACH DATABASE ? AS `+c.name, []driver.NamedValue{{Ordinal: 1, Value: c.path}}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite: attach %s: %w", c.path, err)
	}
	if c.cacheKiB > 0 {
		if _, err := ex.ExecContext(ctx, `PRAGMA `+c.name+`.cache_size = -`+strconv.Itoa(c.cacheKiB), nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("sqlite: cache size of %s: %w", c.path, err)
		}
	}
	return conn, nil
}

func (c *attachConnector) Driver() driver.Driver { return &c.d }

// eachRow runs query on q and calls fn for each row.
func eachRow(ctx context.Context, q querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	return forRows(rows, err, fn)
}

// forRows calls fn for each of rows, the result of a query that failed if err is set,
// and closes them.
func forRows(rows *sql.Rows, err error, fn func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
