package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// Seal takes the project-stream lock (waiting for it), reads the checkpoint (creating
// an empty one if absent), runs fn, and commits what fn returns in one write
// transaction: index rows, the batch row and the new checkpoint. The commit is the
// point at which the batch exists. It returns the checkpoint after the commit, or the
// one fn saw when fn committed nothing.
//
// A crash before the commit leaves nothing in the catalog (at most the empty checkpoint
// row and whatever fn wrote to object storage); a crash after it leaves the whole batch.
func (db *DB) Seal(ctx context.Context, log catalog.LogID, fn catalog.SealFunc) (catalog.Checkpoint, error) {
	res, err := db.sealGroup(ctx, []catalog.LogID{log}, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		b, err := fn(ctx, cps[0])
		return []*catalog.SealBatch{b}, nil, err
	}, true)
	if len(res) == 1 {
		return res[0].Checkpoint, err
	}
	return catalog.Checkpoint{}, err
}

// SealGroup is Seal for several project-streams in one transaction, taking only the
// locks that are free (in one process they are held only by a seal in progress); see
// catalog.Catalog. One commit, one WAL fsync, however many streams the group holds.
func (db *DB) SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error) {
	return db.sealGroup(ctx, logs, fn, false)
}

// sealWrite is one project-stream's part of a group's transaction.
type sealWrite struct {
	at       int   // index in the group's logs
	n        int64 // log number
	cp, next catalog.Checkpoint
	b        *catalog.SealBatch
	lastMS   *int64 // receive time of event cp.Size if cached (sealcache.go)
	direct   bool   // rows go to events and batches, not the recent tables (recent.go)
	pub      uint64 // the published size written with the checkpoint (published.go)
}

// sealGroup is SealGroup; with wait it waits for every lock instead of skipping the
// ones that are taken.
func (db *DB) sealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc, wait bool) ([]catalog.Sealed, error) {
	if err := catalog.CheckGroup(logs); err != nil {
		return nil, err
	}
	order := slices.Clone(logs)
	catalog.SortLogs(order)
	locked := make(map[catalog.LogID]bool, len(logs))
	var releases []func()
	defer func() {
		for _, release := range releases {
			release()
		}
	}()
	for _, log := range order {
		var release func()
		if wait {
			var err error
			if release, err = db.locks.acquire(ctx, log); err != nil {
				return nil, err
			}
		} else if release = db.locks.tryAcquire(log); release == nil {
			continue
		}
		releases = append(releases, release)
		locked[log] = true
	}
	out := make([]catalog.Sealed, len(logs))
	var (
		cps    []catalog.Checkpoint
		writes []sealWrite
	)
	reload := false
	if len(releases) > 0 {
		var err error
		if reload, err = db.seals.sync(ctx, db); err != nil {
			return out, err
		}
	}
	// The streams this handle has sealed start from the seal cache; the others from
	// their checkpoints, read (and, for streams never sealed, created) together.
	cached := make(map[catalog.LogID]sealState, len(releases))
	var uncached []catalog.LogID
	for _, log := range logs {
		if !locked[log] {
			continue
		}
		if s, ok := db.seals.get(log); ok {
			cached[log] = s
		} else {
			uncached = append(uncached, log)
		}
	}
	fresh, err := db.freshStreams(ctx, uncached)
	if err != nil {
		return out, err
	}
	for i, log := range logs {
		if !locked[log] {
			continue
		}
		w := sealWrite{at: i}
		if s, ok := cached[log]; ok {
			w.cp = s.cp
			db.pub.overlay(&w.cp)
			if s.cp.Size > 0 {
				w.lastMS = &s.lastMS
			}
		} else {
			w.cp = fresh[log]
		}
		out[i] = catalog.Sealed{Locked: true, Checkpoint: w.cp}
		numbered := false
		if w.n, numbered, err = db.logNum(ctx, log); err == nil && !numbered {
			// A checkpoint row without a number (a crash between the two commits
			// of a version that made them apart): give it one.
			if err = db.createStreams(ctx, []catalog.LogID{log}); err == nil {
				w.n, numbered, err = db.logNum(ctx, log)
			}
			if err == nil && !numbered {
				err = fmt.Errorf("sqlite: %s has no number after its creation", log)
			}
		}
		if err != nil {
			return out, err
		}
		cps = append(cps, w.cp)
		writes = append(writes, w)
	}
	if len(cps) == 0 {
		return out, nil
	}
	batches, durable, err := catalog.RunGroup(ctx, fn, cps)
	if err != nil {
		return out, err
	}
	now := catalog.MS(db.now())
	todo := writes[:0]
	for k, b := range batches {
		w := writes[k]
		log := logs[w.at]
		if b == nil || len(b.Events) == 0 {
			continue
		}
		if err := catalog.ValidateSeal(w.cp, b); err != nil {
			return out, fmt.Errorf("sqlite: seal %s: %w", log, err)
		}
		if w.cp.Size+uint64(len(b.Events)) > maxSeq {
			return out, fmt.Errorf("%w: sqlite: seal %s: a project-stream holds at most %d events in the embedded catalog", catalog.ErrInvalid, log, uint64(maxSeq))
		}
		w.b, w.next = b, w.cp.After(b, now)
		todo = append(todo, w)
	}
	if len(todo) == 0 {
		return out, nil
	}
	rr := &db.recent
	rr.write.Lock()
	defer rr.write.Unlock()
	if reload {
		if err := db.reloadRecent(ctx); err != nil {
			return out, err
		}
	}
	var direct, small []sealWrite
	for i := range todo {
		w := &todo[i]
		w.pub = min(db.pub.size(logs[w.at]), w.cp.Size)
		w.direct = (len(todo) <= rr.directStreams || len(w.b.Events) >= rr.directRows) && !rr.has(w.n)
		if w.direct {
			direct = append(direct, *w)
		} else {
			small = append(small, *w)
		}
	}
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		if err := db.checkIDs(ctx, tx, logs, todo); err != nil {
			return err
		}
		if err := db.writeSeals(ctx, tx, logs, todo, now); err != nil {
			return err
		}
		// Every stream's index rows together: a tick of many streams of one event
		// each fills multi-row INSERTs instead of running one per stream.
		for _, part := range []struct {
			ws    []sealWrite
			stmts *insertStmts
		}{{direct, &db.ins}, {small, &db.insRecent}} {
			if err := insertEvents(ctx, tx, part.stmts, part.ws); err != nil {
				if len(todo) == 1 {
					return fmt.Errorf("%s: %w", logs[todo[0].at], err)
				}
				return err
			}
		}
		for _, w := range todo {
			if w.b.Durable != nil {
				if err := w.b.Durable(); err != nil {
					return fmt.Errorf("payload object of %s: %w", logs[w.at], err)
				}
			}
		}
		if durable != nil {
			if err := durable(); err != nil {
				return fmt.Errorf("payload objects: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		db.seals.drop(logs, todo)
		if len(todo) == 1 {
			return out, fmt.Errorf("sqlite: seal %s at size %d: %w", logs[todo[0].at], todo[0].cp.Size, err)
		}
		return out, fmt.Errorf("sqlite: seal group of %d project-streams: %w", len(todo), err)
	}
	for _, w := range todo {
		db.pub.written(logs[w.at], w.pub)
		if !w.direct {
			rr.add(w.n, w.b.Events, db.now())
		}
		db.terms.sealed(w.n, w.next.Size, w.b.Events)
		db.seals.put(logs[w.at], sealState{cp: w.next, lastMS: ms(w.b.Events[len(w.b.Events)-1].ReceivedAt)})
		db.pub.overlay(&w.next)
		out[w.at].Checkpoint = w.next
	}
	return out, nil
}

// freshStreams returns the checkpoints of logs (locked project-streams this handle
// has not sealed yet), read in one query; those never sealed before get their
// checkpoint row and number first, all in one write transaction. Created one by one,
// each was two commits with their fsyncs on the seal path: a tick holding the first
// events of a thousand new projects took seconds, and so did every other stream's
// events in it.
func (db *DB) freshStreams(ctx context.Context, logs []catalog.LogID) (map[catalog.LogID]catalog.Checkpoint, error) {
	if len(logs) == 0 {
		return nil, nil
	}
	cps, found, err := db.checkpoints(ctx, logs)
	if err != nil {
		return nil, err
	}
	var create []catalog.LogID
	for i, log := range logs {
		if !found[i] {
			create = append(create, log)
		}
	}
	if len(create) > 0 {
		if err := db.createStreams(ctx, create); err != nil {
			return nil, err
		}
		if cps, found, err = db.checkpoints(ctx, logs); err != nil {
			return nil, err
		}
	}
	out := make(map[catalog.LogID]catalog.Checkpoint, len(logs))
	for i, log := range logs {
		if !found[i] {
			return nil, fmt.Errorf("sqlite: checkpoint of %s missing after its creation", log)
		}
		out[log] = cps[i]
	}
	return out, nil
}

// createStreams gives each of logs its checkpoint row (empty) and number unless it
// has them, in one write transaction.
func (db *DB) createStreams(ctx context.Context, logs []catalog.LogID) error {
	now := ms(db.now())
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		num, err := tx.PrepareContext(ctx, `INSERT INTO logs(project_id, stream) VALUES (?, ?) ON CONFLICT DO NOTHING`)
		if err != nil {
			return err
		}
		defer num.Close()
		cp, err := tx.PrepareContext(ctx, `INSERT INTO checkpoints(log, size, root, compact_range, published_size, created_ms, updated_ms)
			SELECT id, 0, NULL, x'', 0, ?3, ?3 FROM logs WHERE project_id = ?1 AND stream = ?2 ON CONFLICT DO NOTHING`)
		if err != nil {
			return err
		}
		defer cp.Close()
		for _, log := range logs {
			if _, err := num.ExecContext(ctx, log.ProjectID, string(log.Stream)); err != nil {
				return fmt.Errorf("number %s: %w", log, err)
			}
			if _, err := cp.ExecContext(ctx, log.ProjectID, string(log.Stream), now); err != nil {
				return fmt.Errorf("checkpoint %s: %w", log, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: create %d project-streams: %w", len(logs), err)
	}
	return nil
}

// eventCols is the number of columns insertEvents writes per row; SQLite allows 32766
// parameters per statement, so a statement inserts at most insertRows rows.
const (
	eventCols  = 12
	insertRows = 1000
)

// insertSizes are the row counts of the prepared INSERT statements, largest first,
// each dividing the one before: a batch of n rows is written as n/1000 statements of
// 1,000 rows, then the remainder digit by digit (at most 27 more statements).
var insertSizes = [...]int{insertRows, 100, 10, 1}

// insertStmts are the event-index INSERTs prepared once on the writer connection, so a
// seal never parses (or plans) its INSERT text again.
type insertStmts [len(insertSizes)]*sql.Stmt

func (st *insertStmts) prepare(ctx context.Context, w *sql.DB, table string) error {
	for i, rows := range insertSizes {
		s, err := w.PrepareContext(ctx, insertStatement(table, rows))
		if err != nil {
			st.close()
			return fmt.Errorf("sqlite: prepare %d-row insert: %w", rows, err)
		}
		st[i] = s
	}
	return nil
}

func (st *insertStmts) close() {
	for i, s := range st {
		if s != nil {
			s.Close()
			st[i] = nil
		}
	}
}

func insertStatement(table string, rows int) string {
	var sb strings.Builder
	// OR ROLLBACK: a refused row (a re-used event id) ends the whole seal transaction,
	// which is what the seal wants anyway. SQLite still keeps a statement journal (a
	// copy of every page the statement touches, in memory here): the explicit rowid
	// gets a type check that may abort the statement (docs/catalog.md).
	sb.WriteString(`INSERT OR ROLLBACK INTO ` + table + `(k, log, event_id, received_ms, action, status,
		actor_type, actor_id, target_type, target_id, payload_hash, leaf_hash) VALUES `)
	for i := 0; i < rows; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?)")
	}
	return sb.String()
}

// insertEvents writes the index rows of every seal of writes, in order, with the
// prepared multi-row INSERTs ins (into events or events_recent).
func insertEvents(ctx context.Context, tx *sql.Tx, ins *insertStmts, writes []sealWrite) error {
	type row struct {
		n int64
		e *catalog.Event
	}
	var all []row
	for _, w := range writes {
		for j := range w.b.Events {
			all = append(all, row{w.n, &w.b.Events[j]})
		}
	}
	args := make([]any, 0, eventCols*min(len(all), insertRows))
	// A value that repeats from row to row (the receive time and project-stream of a
	// batch, actions, statuses, types) is boxed into an interface once, not per row.
	var ints [2]reboxed[int64]
	var strs [5]reboxed[string]
	for i, rows := range insertSizes {
		if len(all) < rows {
			continue
		}
		stmt := tx.StmtContext(ctx, ins[i])
		for len(all) >= rows {
			chunk := all[:rows]
			all = all[rows:]
			args = args[:0]
			for _, r := range chunk {
				e := r.e
				args = append(args, key(r.n, e.Sequence), ints[0].of(r.n), e.ID, ints[1].of(ms(e.ReceivedAt)),
					strs[0].of(e.Action), strs[1].of(e.Status), strs[2].of(e.ActorType), e.ActorID,
					strs[3].of(e.TargetType), strs[4].of(e.TargetID), e.PayloadHash[:], e.LeafHash[:])
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				if isConstraint(err) {
					err = fmt.Errorf("%w (%w)", mapErr(err), errRolledBack)
				}
				return fmt.Errorf("insert %d index rows: %w", rows, err)
			}
		}
	}
	return nil
}

// checkpointCols are the columns scanCheckpoint reads, from checkpointTables: a
// checkpoint row is keyed by its project-stream's number (migrations/0019).
const (
	checkpointCols   = `l.project_id, l.stream, c.size, c.root, c.compact_range, c.published_size, c.created_ms, c.updated_ms`
	checkpointTables = `checkpoints c JOIN logs l ON l.id = c.log`
)

func scanCheckpoint(row interface{ Scan(...any) error }) (catalog.Checkpoint, error) {
	var (
		cp                  catalog.Checkpoint
		stream              string
		size, pub, cms, ums int64
		root, rng           []byte
	)
	if err := row.Scan(&cp.Log.ProjectID, &stream, &size, &root, &rng, &pub, &cms, &ums); err != nil {
		return cp, err
	}
	cp.Log.Stream = catalog.Stream(stream)
	cp.Size, cp.PublishedSize = uint64(size), uint64(pub)
	cp.CreatedAt, cp.UpdatedAt = catalog.FromUnixMS(cms), catalog.FromUnixMS(ums)
	var err error
	if cp.Root, err = catalog.HashFrom(root); err != nil {
		return cp, err
	}
	if cp.Range, err = catalog.SplitHashes(rng); err != nil {
		return cp, err
	}
	return cp, nil
}

// Checkpoint returns the committed checkpoint of log, or catalog.ErrNotFound if the
// project-stream has never been sealed.
func (db *DB) Checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error) {
	cp, err := scanCheckpoint(db.queryRow(ctx, `SELECT `+checkpointCols+` FROM `+checkpointTables+`
		WHERE l.project_id = ? AND l.stream = ?`, log.ProjectID, string(log.Stream)))
	if err != nil {
		return cp, fmt.Errorf("sqlite: checkpoint %s: %w", log, mapErr(err))
	}
	db.pub.overlay(&cp)
	return cp, nil
}

// AdvancePublished raises published_size to size if it is lower; it never lowers it, so
// racing publishers are harmless. size beyond the committed size is catalog.ErrConflict.
// It returns the checkpoint after the update. The new size is visible at once and
// reaches the file shortly after (published.go).
func (db *DB) AdvancePublished(ctx context.Context, log catalog.LogID, size uint64) (catalog.Checkpoint, error) {
	cp, err := db.Checkpoint(ctx, log)
	if err != nil {
		return cp, err
	}
	if cp.Size < size {
		return cp, fmt.Errorf("%w: publish %s to %d beyond committed size %d", catalog.ErrConflict, log, size, cp.Size)
	}
	db.pub.set(log, size)
	cp.PublishedSize = max(cp.PublishedSize, size)
	return cp, nil
}

// Publish runs fn under the publish lock of log (an in-process lock, apart from the
// seal lock, so publishing never waits for a seal), with the checkpoint read under
// that lock. If fn returns nil, published_size becomes cp.Size before the lock is
// released (in memory, where every read sees it, and in the file shortly after:
// published.go); if it fails, nothing changes and its error is returned. It returns the
// checkpoint as left after, and catalog.ErrNotFound for a project-stream never sealed.
func (db *DB) Publish(ctx context.Context, log catalog.LogID, fn func(ctx context.Context, cp catalog.Checkpoint) error) (catalog.Checkpoint, error) {
	if err := log.Validate(); err != nil {
		return catalog.Checkpoint{}, err
	}
	release, err := db.publocks.acquire(ctx, log)
	if err != nil {
		return catalog.Checkpoint{}, err
	}
	defer release()
	cp, err := db.Checkpoint(ctx, log)
	if err != nil {
		return cp, err
	}
	if err := fn(ctx, cp); err != nil {
		return cp, err
	}
	if cp.PublishedSize >= cp.Size {
		return cp, nil
	}
	db.pub.set(log, cp.Size)
	cp.PublishedSize = cp.Size
	return cp, nil
}

// ListUnpublished returns every checkpoint whose published size is behind its size, for
// recovery at start-up. It reads every checkpoint row: an index of the unpublished
// ones cost a page write per stream and seal (migrations/0020).
func (db *DB) ListUnpublished(ctx context.Context) ([]catalog.Checkpoint, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+checkpointCols+` FROM `+checkpointTables+`
		WHERE c.published_size < c.size ORDER BY l.project_id, l.stream`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list unpublished: %w", err)
	}
	defer rows.Close()
	var out []catalog.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list unpublished: %w", err)
		}
		if db.pub.overlay(&cp); cp.PublishedSize < cp.Size {
			out = append(out, cp)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list unpublished: %w", err)
	}
	return out, nil
}

// BatchesCovering returns, in order, the committed batches holding any sequence in
// [first, last], both inclusive: BatchesCovering(log, s, s) is the batch of sequence s.
//
// A batch row is in batches or in batches_recent (recent.go). Each table gives its
// rows from its last batch starting at or before first up to last, in one read
// transaction; the batch holding first is the later of the two tables' first rows,
// and the earlier one, ending before first, is dropped.
func (db *DB) BatchesCovering(ctx context.Context, log catalog.LogID, first, last uint64) ([]catalog.Batch, error) {
	if first > last {
		return nil, nil
	}
	n, ok, err := db.logNum(ctx, log)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	if first > maxSeq {
		return nil, nil
	}
	// Both tables' rows carry the batch's key, logs.id << seqBits | first_seq (logs.go).
	rows, err := db.query(ctx, `SELECT b.k, b.count, b.batch_id, b.created_ms, o.name, b.payload_offset, b.payload_length
		FROM batches b LEFT JOIN payload_objects o ON o.id = b.object
		WHERE b.k <= ?2 AND b.k >= coalesce((SELECT max(k) FROM batches WHERE k BETWEEN ?3 AND ?1), ?1)
		UNION ALL SELECT `+sqlKey("b.log", "b.first_seq")+`, b.count, b.batch_id, b.created_ms, o.name, b.payload_offset, b.payload_length
		FROM batches_recent b LEFT JOIN payload_objects o ON o.id = b.object
		WHERE b.log = ?4 AND b.first_seq <= ?6 AND b.first_seq >= coalesce(
			(SELECT max(first_seq) FROM batches_recent WHERE log = ?4 AND first_seq <= ?5), ?5)
		ORDER BY 1`, key(n, first), key(n, min(last, maxSeq)), key(n, 0), n, int64(first), int64(min(last, maxSeq)))
	if err != nil {
		return nil, fmt.Errorf("sqlite: batches of %s [%d, %d]: %w", log, first, last, err)
	}
	defer rows.Close()
	var out []catalog.Batch
	for rows.Next() {
		var (
			k, count, created int64
			obj               *string
			off, siz          *int64
		)
		b := catalog.Batch{Log: log}
		if err := rows.Scan(&k, &count, &b.BatchID, &created, &obj, &off, &siz); err != nil {
			return nil, fmt.Errorf("sqlite: batches of %s: %w", log, err)
		}
		b.SetPayloadColumns(obj, off, siz)
		b.First, b.Count, b.CreatedAt = seqOf(k), uint64(count), catalog.FromUnixMS(created)
		if b.End() > first {
			out = append(out, b)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: batches of %s: %w", log, err)
	}
	return out, nil
}

// execUnsynced runs one transaction, fn, on the writer with synchronous=NORMAL, then
// puts the connection back to FULL. It is for published sizes alone, a hint for crash
// repair: the commit reaches the WAL (a process crash keeps it) but is not fsynced
// itself, so a power loss can lose it, and the next fsynced commit (every seal) makes
// it durable along with everything before it in the WAL. Losing it is harmless: it
// only ever rises after the objects it covers are durable, Recover and Tree
// re-publish from the lower value, and publishing is idempotent (docs/catalog.md).
//
// A connection that cannot be put back to FULL is discarded, never reused for a seal.
func (db *DB) execUnsynced(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return db.restoreFull(conn, err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err == nil {
		if err = fn(tx); err != nil {
			_ = tx.Rollback()
		} else {
			err = tx.Commit()
		}
	}
	return db.restoreFull(conn, err)
}

// restoreFull sets conn back to synchronous=FULL, or discards it, and returns err.
func (db *DB) restoreFull(conn *sql.Conn, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, rerr := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); rerr != nil {
		db.log.Error("sqlite: restoring synchronous=FULL; discarding the writer connection", slog.Any("err", rerr))
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		if err == nil {
			err = fmt.Errorf("sqlite: restore synchronous=FULL: %w", rerr)
		}
	}
	return err
}
