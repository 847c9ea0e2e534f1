package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// DeleteRetention removes log's policy: the stream keeps its payloads forever again.
// A stream without a policy is catalog.ErrNotFound.
func (db *DB) DeleteRetention(ctx context.Context, log catalog.LogID) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM retention_policies WHERE project_id = ? AND stream = ?`,
		log.ProjectID, string(log.Stream))
	if err != nil {
		return fmt.Errorf("sqlite: delete retention %s: %w", log, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: retention %s: %w", log, catalog.ErrNotFound)
	}
	return nil
}

// ListAllRetention returns every policy of every project, by project and stream.
func (db *DB) ListAllRetention(ctx context.Context) ([]catalog.Retention, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT project_id, stream, days, updated_ms FROM retention_policies
		ORDER BY project_id, stream`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list all retention: %w", err)
	}
	return collect(rows, scanRetention)
}

// SetMinRetention sets the project's minimum retention in days; 0 removes it.
func (db *DB) SetMinRetention(ctx context.Context, projectID string, days int) error {
	var err error
	if days == 0 {
		_, err = db.w.ExecContext(ctx, `DELETE FROM retention_minimums WHERE project_id = ?`, projectID)
	} else {
		_, err = db.w.ExecContext(ctx, `INSERT INTO retention_minimums(project_id, days) VALUES (?, ?)
			ON CONFLICT (project_id) DO UPDATE SET days = excluded.days`, projectID, days)
	}
	if err != nil {
		return fmt.Errorf("sqlite: set minimum retention of %s: %w", projectID, mapErr(err))
	}
	return nil
}

// MinRetention returns the project's minimum retention in days, 0 when none is set.
func (db *DB) MinRetention(ctx context.Context, projectID string) (int, error) {
	var days int
	err := db.r.QueryRowContext(ctx, `SELECT days FROM retention_minimums WHERE project_id = ?`, projectID).Scan(&days)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: minimum retention of %s: %w", projectID, err)
	}
	return days, nil
}

// Suspend records a billing suspension of the project, replacing any earlier one.
func (db *DB) Suspend(ctx context.Context, s catalog.Suspension) (catalog.Suspension, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	s.Since = db.stamp(s.Since)
	if _, err := db.w.ExecContext(ctx, `INSERT INTO project_suspensions(project_id, reason, since_ms) VALUES (?, ?, ?)
		ON CONFLICT (project_id) DO UPDATE SET reason = excluded.reason, since_ms = excluded.since_ms`,
		s.ProjectID, s.Reason, ms(s.Since)); err != nil {
		return s, fmt.Errorf("sqlite: suspend %s: %w", s.ProjectID, mapErr(err))
	}
	return s, nil
}

// Unsuspend lifts the project's suspension; a project not suspended is
// catalog.ErrNotFound.
func (db *DB) Unsuspend(ctx context.Context, projectID string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM project_suspensions WHERE project_id = ?`, projectID)
	if err != nil {
		return fmt.Errorf("sqlite: unsuspend %s: %w", projectID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite: suspension of %s: %w", projectID, catalog.ErrNotFound)
	}
	return nil
}

// Suspension returns the project's suspension or catalog.ErrNotFound.
func (db *DB) Suspension(ctx context.Context, projectID string) (catalog.Suspension, error) {
	s := catalog.Suspension{ProjectID: projectID}
	var since int64
	err := db.queryRow(ctx, `SELECT reason, since_ms FROM project_suspensions WHERE project_id = ?`, projectID).
		Scan(&s.Reason, &since)
	if err != nil {
		return s, fmt.Errorf("sqlite: suspension of %s: %w", projectID, mapErr(err))
	}
	s.Since = catalog.FromUnixMS(since)
	return s, nil
}

// TryLease takes or renews the lease name for holder until now+ttl, and reports
// whether holder has it: a lease held by another holder is taken only once expired.
func (db *DB) TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if err := catalog.ValidLease(name, holder, ttl); err != nil {
		return false, err
	}
	res, err := db.w.ExecContext(ctx, `INSERT INTO leases(name, holder, expires_ms) VALUES (?1, ?2, ?3)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms
		WHERE leases.holder = excluded.holder OR leases.expires_ms <= ?4`,
		name, holder, now.Add(ttl).UnixMilli(), now.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("sqlite: lease %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseLease gives up holder's lease name (nothing if another holder has it).
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return fmt.Errorf("sqlite: release lease %s: %w", name, err)
	}
	return nil
}

// EventSpan returns the sequences of log's events received in [from, to).
func (db *DB) EventSpan(ctx context.Context, log catalog.LogID, from, to time.Time) (catalog.Span, error) {
	n, ok, err := db.logNum(ctx, log)
	if err != nil || !ok {
		return catalog.Span{}, err
	}
	var lo, hi sql.NullInt64
	var count uint64
	if err := db.r.QueryRowContext(ctx, `SELECT min(k), max(k), count(*) FROM (
		SELECT k FROM events WHERE k > ?1 AND k < ?2 AND received_ms >= ?3 AND received_ms < ?4
		UNION ALL SELECT k FROM events_recent WHERE k > ?1 AND k < ?2 AND received_ms >= ?3 AND received_ms < ?4)`,
		key(n, 0), key(n+1, 0), from.UnixMilli(), to.UnixMilli()).Scan(&lo, &hi, &count); err != nil {
		return catalog.Span{}, fmt.Errorf("sqlite: event span of %s: %w", log, err)
	}
	if count == 0 {
		return catalog.Span{}, nil
	}
	return catalog.Span{First: seqOf(lo.Int64), Last: seqOf(hi.Int64), Count: count}, nil
}

// ScrubEvents blanks the action, actor and target of log's index rows first..last,
// except the sequences in keep, and removes them from the term index: what retention
// leaves of a shredded event is its sequence, id, time, status and hashes. It returns
// the rows changed; scrubbing again changes nothing.
func (db *DB) ScrubEvents(ctx context.Context, log catalog.LogID, first, last uint64, keep []uint64) (int64, error) {
	if first == 0 || last < first {
		return 0, nil
	}
	// Runs of sequences between the kept ones (keep may be unsorted, repeat, or
	// name sequences outside first..last).
	var runs []seqRun
	from := first
	for _, to := range append(slices.Sorted(slices.Values(keep)), last+1) {
		if to < from || to > last+1 {
			continue
		}
		if from < to {
			runs = append(runs, seqRun{from, to - 1})
		}
		from = to + 1
	}
	return db.scrub(ctx, log, runs, fmt.Sprintf("%d-%d", first, last))
}

// ScrubEventSeqs is ScrubEvents for the rows of seqs alone (ascending), in one pass
// whatever their number: the retention job lets go of a released hold's copies with
// it.
func (db *DB) ScrubEventSeqs(ctx context.Context, log catalog.LogID, seqs []uint64) (int64, error) {
	if err := catalog.CheckSeqs(seqs); err != nil {
		return 0, fmt.Errorf("sqlite: scrub %s: %w", log, err)
	}
	var runs []seqRun
	for _, s := range seqs {
		if n := len(runs); n > 0 && s == runs[n-1].last+1 {
			runs[n-1].last = s
		} else {
			runs = append(runs, seqRun{s, s})
		}
	}
	return db.scrub(ctx, log, runs, fmt.Sprintf("%d sequences", len(seqs)))
}

// seqRun is the sequences first..last.
type seqRun struct{ first, last uint64 }

// scrub blanks the index values of the rows in runs (ascending, disjoint) and removes
// them from the term index; what names them in errors.
func (db *DB) scrub(ctx context.Context, log catalog.LogID, runs []seqRun, what string) (int64, error) {
	n, ok, err := db.logNum(ctx, log)
	if err != nil || !ok || len(runs) == 0 {
		return 0, err
	}
	// The rows to scrub are committed: after a merge they are all in events (recent.go).
	if err := db.mergeRecent(ctx); err != nil {
		return 0, fmt.Errorf("sqlite: scrub %s %s: %w", log, what, err)
	}
	var changed int64
	err = db.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE events SET action = '', actor_type = '', actor_id = '',
			target_type = '', target_id = '' WHERE k >= ? AND k <= ? AND (action <> '' OR actor_id <> '' OR
			actor_type <> '' OR target_type <> '' OR target_id <> '')`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range runs {
			res, err := stmt.ExecContext(ctx, key(n, r.first), key(n, r.last))
			if err != nil {
				return err
			}
			m, _ := res.RowsAffected()
			changed += m
		}
		return nil
	})
	if err != nil {
		return changed, fmt.Errorf("sqlite: scrub %s %s: %w", log, what, err)
	}
	if err := db.scrubFreePages(ctx); err != nil {
		return changed, fmt.Errorf("sqlite: scrub %s %s: %w", log, what, err)
	}
	if err := db.terms.purge(ctx, n, runs); err != nil {
		return changed, fmt.Errorf("sqlite: scrub %s %s from the term index: %w", log, what, err)
	}
	// Old page images in the WALs go as a destroyed data key's do (keys.go).
	for _, c := range []*sql.DB{db.w, db.terms.w} {
		if _, err := c.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			db.log.Warn("sqlite: WAL checkpoint after scrubbing events", slog.Any("err", err))
		}
	}
	return changed, nil
}

// scrubFreePages overwrites every page on the catalog's free list, where the merge
// left the recent rows' bytes (mergeStatements): in one transaction it fills a
// scratch table with a row of zeros per free page, one row to a page (SQLite takes
// pages from the free list before it grows the file), and drops it, which zeroes
// them (secure_delete). It does nothing if no merge ran since its last pass.
func (db *DB) scrubFreePages(ctx context.Context) error {
	if db.recent.clean.Swap(true) {
		return nil
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		var free, size int64
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_size FROM pragma_page_size)`).Scan(&free, &size); err != nil {
			return fmt.Errorf("free pages: %w", err)
		}
		if free == 0 {
			return nil
		}
		// Rows of three quarters of a page: two never share a leaf page, so the rows
		// take at least as many pages as the free list holds, and none spills into an
		// overflow page.
		if _, err := tx.ExecContext(ctx, `CREATE TABLE scrub_free(b BLOB NOT NULL)`); err != nil {
			return fmt.Errorf("overwrite %d free pages: %w", free, err)
		}
		if _, err := tx.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
			INSERT INTO scrub_free(b) SELECT zeroblob(?2) FROM n`, free, size*3/4); err != nil {
			return fmt.Errorf("overwrite %d free pages: %w", free, err)
		}
		if _, err := tx.ExecContext(ctx, `DROP TABLE scrub_free`); err != nil {
			return fmt.Errorf("overwrite %d free pages: %w", free, err)
		}
		return nil
	})
	if err != nil {
		db.recent.clean.Store(false)
	}
	return err
}

// purge removes the sequences of runs (ascending, disjoint) of log number n from every
// posting of the terms ScrubEvents blanks (all but statuses, which it keeps), after
// indexing whatever is committed (so the indexer cannot add them back from terms it
// kept in memory). A posting's sequences lie in its segment, so only the postings of
// the segments that overlap the runs' span can hold one.
func (ti *termIndex) purge(ctx context.Context, n int64, runs []seqRun) error {
	if len(runs) == 0 {
		return nil
	}
	if err := ti.catchUp(); err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	// The catch-up indexes whole chunks only (termMinChunk): the events after the
	// watermark wait, and the terms the seals handed over for them still hold what
	// the scrub blanked. Drop them, so that their chunk is read from the catalog.
	ti.mu.Lock()
	ti.drop(n)
	ti.mu.Unlock()
	tx, err := ti.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	type posting struct {
		seg   int64
		kind  int
		value string
		last  int64
		kept  []uint64
	}
	first, last := runs[0].first, runs[len(runs)-1].last
	scrubbed := func(s uint64) bool {
		i, _ := slices.BinarySearchFunc(runs, s, func(r seqRun, s uint64) int { return cmp.Compare(r.last, s) })
		return i < len(runs) && runs[i].first <= s
	}
	var ps []posting
	err = eachRow(ctx, tx, `SELECT p.seg, p.kind, p.value, p.last, p.seqs FROM term_segments s
		JOIN term_postings p ON p.log = s.log AND p.seg = s.lo
		WHERE s.log = ?1 AND s.lo >= coalesce((SELECT max(lo) FROM term_segments WHERE log = ?1 AND lo < ?2), 0) AND s.lo < ?3 AND p.kind <> ?4`,
		[]any{n, int64(first), int64(last), termStatus}, func(r *sql.Rows) error {
			var p posting
			var list string
			if err := r.Scan(&p.seg, &p.kind, &p.value, &p.last, &list); err != nil {
				return err
			}
			seqs, err := parseSeqs(list)
			if err != nil {
				return err
			}
			for _, s := range seqs {
				if !scrubbed(s) {
					p.kept = append(p.kept, s)
				}
			}
			if len(p.kept) < len(seqs) {
				ps = append(ps, p)
			}
			return nil
		})
	if err != nil {
		return err
	}
	for _, p := range ps {
		if _, err := tx.ExecContext(ctx, `DELETE FROM term_postings WHERE log = ? AND seg = ? AND kind = ? AND value = ? AND last = ?`,
			n, p.seg, p.kind, p.value, p.last); err != nil {
			return err
		}
		if len(p.kept) == 0 {
			continue
		}
		list := make([]string, len(p.kept))
		for i, s := range p.kept {
			list[i] = strconv.FormatUint(s, 10)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO term_postings(log, seg, kind, value, last, seqs) VALUES (?, ?, ?, ?, ?, ?)`,
			n, p.seg, p.kind, p.value, int64(p.kept[len(p.kept)-1]), strings.Join(list, ",")); err != nil {
			return err
		}
	}
	if len(ps) == 0 {
		return tx.Commit()
	}
	// Copies of what it removed may remain in the unused space of live pages
	// (terms_vacuum.go): the file is rebuilt after the retention pass.
	if err := noteVacuum(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	ti.vacuumAfter(time.Now())
	return nil
}

// AddHeldPayloads records that the payloads of log's events seqs have a copy under
// the hold key (the objects <project>/<stream>/held/<seq>), in one transaction.
// Recording one again is a no-op.
func (db *DB) AddHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	return db.heldRows(ctx, log, seqs, `INSERT INTO held_payloads(project_id, stream, seq) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`)
}

// RemoveHeldPayloads forgets the hold-key copies of log's events seqs, in one
// transaction.
func (db *DB) RemoveHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	return db.heldRows(ctx, log, seqs, `DELETE FROM held_payloads WHERE project_id = ? AND stream = ? AND seq = ?`)
}

// heldRows runs query for each of seqs in one transaction.
func (db *DB) heldRows(ctx context.Context, log catalog.LogID, seqs []uint64, query string) error {
	if err := catalog.CheckSeqs(seqs); err != nil {
		return fmt.Errorf("sqlite: held payloads %s: %w", log, err)
	}
	if len(seqs) == 0 {
		return nil
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, seq := range seqs {
			if _, err := stmt.ExecContext(ctx, log.ProjectID, string(log.Stream), int64(seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: held payloads %s (%d): %w", log, len(seqs), err)
	}
	return nil
}

// HeldPayloads returns the sequences in [first, last] of log whose payload has a copy
// under the hold key, ascending.
func (db *DB) HeldPayloads(ctx context.Context, log catalog.LogID, first, last uint64) ([]uint64, error) {
	var out []uint64
	err := eachRow(ctx, db.r, `SELECT seq FROM held_payloads WHERE project_id = ? AND stream = ? AND seq >= ? AND seq <= ?
		ORDER BY seq`, []any{log.ProjectID, string(log.Stream), int64(first), int64(min(last, maxSeq))}, func(r *sql.Rows) error {
		var s int64
		err := r.Scan(&s)
		out = append(out, uint64(s))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: held payloads of %s: %w", log, err)
	}
	return out, nil
}
