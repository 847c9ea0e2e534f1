// Package sqlite is the embedded catalog driver, Sealtrail's zero-setup default: one
// SQLite file, pure Go (modernc.org/sqlite, no cgo), WAL journal with synchronous=FULL
// so a committed seal survives a power loss (docs/catalog.md says why not NORMAL). Only
// the published_size hint is written with NORMAL, behind the publications
// (published.go), whose commit the next seal's fsync makes durable.
//
// Writes go through a single connection (SQLite has one writer anyway); reads use a small
// pool, which WAL lets run beside the writer. WAL checkpoints run on a connection of
// their own (walcheckpoint.go). Events are keyed by a small per-project-stream number
// and their sequence (logs.go); the actor and target indexes live in a second file
// filled in the background (terms.go). The project-stream lock of a seal is an
// in-process lock per project-stream; the commit re-checks the checkpoint size in its
// UPDATE, so even a second process on the same file could not commit a fork, only fail
// with catalog.ErrConflict. Publishing has its own in-process lock per project-stream.
// Run one process per database file.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/internal/private"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DB is an open SQLite catalog. Its methods may be called concurrently.
type DB struct {
	closeOnce sync.Once   // Close runs once; a second call does nothing
	w         *sql.DB     // one connection: the single writer
	r         *sql.DB     // readers
	ins       insertStmts // into events
	insRecent insertStmts // into events_recent (recent.go)
	recent    recentRows
	tick      tickStmts
	seals     sealCache // sealcache.go
	stmts     readStmts // readstmt.go
	locks     lockTable // seal locks
	publocks  lockTable // publish locks
	nums      logNums
	terms     *termIndex
	pub       published
	walc      *walCheckpointer
	log       *slog.Logger
	now       func() time.Time
}

var _ catalog.Catalog = (*DB)(nil)

// Options tune Open; the zero value is the production setting.
type Options struct {
	// Readers is the size of the read pool (default 4).
	Readers int
	// Logger receives operational messages (default slog.Default()).
	Logger *slog.Logger

	// Tests: the smallest batch written to events directly, the most streams of a
	// tick written to events directly (negative: none) and the rows in
	// events_recent that start a merge (recent.go; 0 is the default).
	directRows, directStreams, mergeRows int
}

// Open opens (creating if needed) the catalog in the file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("%w: sqlite path %q", catalog.ErrInvalid, path)
	}
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	// FULL: fsync the WAL at every commit. NORMAL would lose the last commits on power
	// loss, and a seal's commit is an acknowledgement (invariant 4).
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Overwrite deleted content, so a destroyed data key leaves no bytes in the file.
	q.Add("_pragma", "secure_delete(1)")
	// The WAL file is cut back to this length when the writer starts it over
	// (walcheckpoint.go).
	q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walLimitBytes)+")")
	wq := url.Values{}
	for k, v := range q {
		wq[k] = slices.Clone(v)
	}
	wq.Set("_txlock", "immediate")
	// The writer's page cache holds the hot pages of every index a seal inserts into
	// (16 MiB; the default 2 MiB made large batches read index pages back from the
	// file), and statement journals (a multi-row INSERT can fail half-way on a unique
	// index and must be undone alone) stay in memory rather than in a temporary file.
	// Not larger: a B-tree split that reorders its new pages parks one under the
	// lock-byte page's number (page 1,048,577 with 1 KiB pages), and the commit that
	// follows then walks the cache's whole hash table to drop pages past the end of
	// the file, which it has none of. That walk grows with the cache: at 64 MiB it was
	// 6% of the CPU with 1,000 projects and 2.4% with one (docs/catalog.md).
	wq.Add("_pragma", "cache_size(-"+strconv.Itoa(writerCacheKiB)+")")
	wq.Add("_pragma", "temp_store(MEMORY)")
	// Checkpoints run on their own connection (walcheckpoint.go), not in a seal.
	wq.Add("_pragma", "wal_autocheckpoint(0)")
	// SQLite would create the files 0644 less the umask; created here first, they are
	// 0600, and SQLite gives each WAL, shared-memory and journal file the mode of its
	// database file.
	for _, p := range []string{path, path + termsSuffix} {
		if err := createPrivate(p); err != nil {
			return nil, fmt.Errorf("sqlite: create %s: %w", p, err)
		}
	}
	if err := setPageSize(ctx, path); err != nil {
		return nil, fmt.Errorf("sqlite: page size of %s: %w", path, err)
	}
	w, err := sql.Open("sqlite", "file:"+path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	singleConn(w)
	db := &DB{w: w, log: opts.Logger, now: time.Now}
	db.recent.directRows, db.recent.mergeRows = cmp.Or(opts.directRows, directRows), cmp.Or(opts.mergeRows, recentMergeRows)
	db.recent.directStreams = cmp.Or(opts.directStreams, directStreams)
	db.locks.m = make(map[catalog.LogID]*lockEntry)
	db.publocks.m = make(map[catalog.LogID]*lockEntry)
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := db.ins.prepare(ctx, w, "events"); err != nil {
		w.Close()
		return nil, err
	}
	if err := db.insRecent.prepare(ctx, w, "events_recent"); err != nil {
		db.ins.close()
		w.Close()
		return nil, err
	}
	if err := db.tick.prepare(ctx, w); err != nil {
		db.ins.close()
		db.insRecent.close()
		w.Close()
		return nil, err
	}
	// Rows a crash or the last close left in the recent tables join the others first.
	if err := db.mergeRecent(ctx); err != nil {
		db.ins.close()
		db.insRecent.close()
		db.tick.close()
		w.Close()
		return nil, err
	}
	var id string
	if err := w.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = 'catalog_id'`).Scan(&id); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: catalog id: %w", err)
	}
	termsPath := path + termsSuffix
	if db.terms, err = openTerms(ctx, termsPath, path, id, opts.Logger); err != nil {
		w.Close()
		return nil, err
	}
	base := url.Values{}
	for k, v := range q {
		base[k] = slices.Clone(v)
	}
	q.Add("_pragma", "query_only(1)")
	r := sql.OpenDB(&attachConnector{dsn: "file:" + path + "?" + q.Encode(), name: "terms", path: termsPath})
	r.SetMaxOpenConns(opts.Readers)
	r.SetMaxIdleConns(opts.Readers)
	db.r = r
	c, err := sql.Open("sqlite", "file:"+path+"?"+base.Encode())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open checkpointer %s: %w", path, err)
	}
	singleConn(c)
	db.walc = startWALCheckpointer(c, path, opts.Logger)
	db.pub.start(db)
	db.startMerger()
	return db, nil
}

// termsSuffix names the term index file after the catalog file.
const termsSuffix = "-terms"

// createPrivate creates an empty file at path with mode 0600 unless a file is there,
// whose mode it leaves as it is.
func createPrivate(path string) error {
	f, err := private.Create(path)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// pageSize is the page size of a new catalog file. A seal appends to the right edge of
// the events table and of each of its indexes, once per project-stream of the tick, and
// SQLite logs every page it dirties whole to the WAL (then writes it back at the
// checkpoint): with 4 KiB pages most of a frame is bytes that did not change.
// BenchmarkTickWrites (200 events a tick): 751 -> 400 WAL bytes per event with one
// project-stream, 11,925 -> 6,159 with 100; the fsyncs are the same (one per commit).
// An existing file keeps the page size it was created with (changing it needs a
// VACUUM outside WAL mode; docs/catalog.md).
const pageSize = 1024

// writerCacheKiB is the writer connection's page cache, in KiB (see Open).
const writerCacheKiB = 16384

// setPageSize gives a new, empty catalog file pageSize, before the writer's DSN
// pragmas run: modernc.org/sqlite runs them in lexical order, so journal_mode(WAL)
// would fix the default page size first.
func setPageSize(ctx context.Context, path string) error {
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		return err
	}
	c, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, p := range []string{fmt.Sprintf("PRAGMA page_size = %d", pageSize), "PRAGMA journal_mode = WAL"} {
		if _, err := c.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// Close closes the database. Seals in progress fail. The recent rows are merged
// first, so a closed catalog holds every event in events (tools that edit the file
// offline, such as the tamper tests, see one table). Closing again does nothing.
func (db *DB) Close() { db.closeOnce.Do(db.close) }

func (db *DB) close() {
	db.stopMerger()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if err := db.mergeRecent(ctx); err != nil {
		db.log.Warn("sqlite: closing", slog.Any("err", err))
	}
	cancel()
	if db.walc != nil {
		if err := db.walc.stop(); err != nil {
			db.log.Warn("sqlite: closing the checkpointer", slog.Any("err", err))
		}
	}
	db.pub.stop()
	if err := db.terms.close(); err != nil {
		db.log.Warn("sqlite: closing the term index", slog.Any("err", err))
	}
	db.ins.close()
	db.insRecent.close()
	db.tick.close()
	db.stmts.close()
	if err := db.r.Close(); err != nil {
		db.log.Warn("sqlite: closing readers", slog.Any("err", err))
	}
	if err := db.w.Close(); err != nil {
		db.log.Warn("sqlite: closing writer", slog.Any("err", err))
	}
}

func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_ms INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		body, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("sqlite: read migration %s: %w", name, err)
		}
		err = db.writeTx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied_ms) VALUES (?, ?)`, version, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", version, err)
		}
	}
	return nil
}

// singleConn makes the pool c one connection, kept open for good: the writer, the
// term indexer and the checkpointer each own theirs.
func singleConn(c *sql.DB) {
	c.SetMaxOpenConns(1)
	c.SetMaxIdleConns(1)
	c.SetConnMaxLifetime(0)
	c.SetConnMaxIdleTime(0)
}

// writeTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (db *DB) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		// After errRolledBack SQLite has ended the transaction itself; Rollback only
		// releases the connection and its "no transaction is active" is expected.
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) && !errors.Is(err, errRolledBack) {
			db.log.Warn("sqlite: rollback", slog.Any("err", rerr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// errRolledBack marks an error of an OR ROLLBACK statement: SQLite rolled the whole
// transaction back.
var errRolledBack = errors.New("transaction rolled back")

// isConstraint reports whether err is a constraint violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// mapErr turns constraint violations into the catalog's errors.
func mapErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", catalog.ErrExists, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w: unknown project: %w", catalog.ErrNotFound, err)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", catalog.ErrNotFound, err)
	}
	return err
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// lockTable holds one lock per project-stream that has a seal in progress or waiting;
// entries are dropped when unused, so idle streams cost no memory.
type lockTable struct {
	mu sync.Mutex
	m  map[catalog.LogID]*lockEntry
}

type lockEntry struct {
	ch   chan struct{} // holds a token while the lock is taken
	refs int           // holders and waiters; guarded by lockTable.mu
}

// acquire takes the lock of log, or fails when ctx ends first.
func (lt *lockTable) acquire(ctx context.Context, log catalog.LogID) (release func(), err error) {
	e, drop := lt.ref(log)
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, fmt.Errorf("sqlite: waiting for the lock of %s: %w", log, ctx.Err())
	}
}

// tryAcquire takes the lock of log if it is free, and returns nil if it is not.
func (lt *lockTable) tryAcquire(log catalog.LogID) (release func()) {
	e, drop := lt.ref(log)
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; drop() }
	default:
		drop()
		return nil
	}
}

// ref returns log's entry, counting the caller in, and the function that counts it
// out (dropping the entry when no one holds or waits for it).
func (lt *lockTable) ref(log catalog.LogID) (*lockEntry, func()) {
	lt.mu.Lock()
	e := lt.m[log]
	if e == nil {
		e = &lockEntry{ch: make(chan struct{}, 1)}
		lt.m[log] = e
	}
	e.refs++
	lt.mu.Unlock()
	return e, func() {
		lt.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(lt.m, log)
		}
		lt.mu.Unlock()
	}
}
