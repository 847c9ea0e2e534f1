package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Segments of the term index. Each chunk the indexer writes for a project-stream is a
// segment of its own, term_segments (log, lo, hi) with the postings of its events
// lo+1..hi, keyed (log, seg, kind, value, last): the chunk's postings go to the right
// edge of the stream's postings, a few contiguous pages, wherever their values sort.
// A stream's segments are contiguous, and the last one ends at term_state's watermark.
//
// So that a query seeks a value in a few segments rather than one per chunk, the
// indexer merges a stream's segments as they gather, size-tiered: a segment's tier is
// a power of termFanout in events, and once the newest termFanout segments are all of
// the newest one's tier or below, they become one segment (the rows of a value from
// consecutive chunks joined while they hold at most postingMax sequences), in the
// transaction that wrote the chunk. Every posting is so rewritten about once per tier
// it climbs, in sorted runs, instead of dirtying a leaf of its own among the stream's
// earlier postings at every chunk. A segment of termSegmentFinal events or more is not
// merged again: a busy stream's chunks (termChunk events) are final as written, and a
// merge rewrites at most termFanout segments just short of that. A stream of n events
// then has at most n/termSegmentFinal final segments, plus at most termFanout-1 per
// tier below.
const (
	termFanout       = 8
	termSegmentFinal = termChunk
	postingMax       = 4096 // sequences in one row of a merged segment
)

// termSeg is a segment: the postings of a log's events lo+1..hi.
type termSeg struct{ lo, hi uint64 }

// tier returns the tier of a segment of size events: 0 below termFanout, 1 below
// termFanout², and so on.
func tier(size uint64) int {
	return (bits.Len64(size) - 1) / bits.Len(termFanout-1)
}

// mergeable returns how many of the newest segments of tail (oldest first) are to be
// merged: termFanout if the newest termFanout are all below termSegmentFinal and of the
// newest one's tier or below, else 0.
func mergeable(tail []termSeg) int {
	if len(tail) < termFanout {
		return 0
	}
	top := tier(tail[len(tail)-1].hi - tail[len(tail)-1].lo)
	for _, s := range tail[len(tail)-termFanout:] {
		if size := s.hi - s.lo; size >= termSegmentFinal || tier(size) > top {
			return 0
		}
	}
	return termFanout
}

// tail returns, in tx, the newest segments of log number n (at most termFanout, oldest
// first), whose last ends at its watermark from: from memory if what it holds ends
// there, else from the file.
func (ti *termIndex) tail(ctx context.Context, tx *sql.Tx, n int64, from uint64) ([]termSeg, error) {
	if from == 0 {
		return nil, nil
	}
	ti.mu.Lock()
	t := ti.tails[n]
	ti.mu.Unlock()
	if len(t) > 0 && t[len(t)-1].hi == from {
		return slices.Clone(t), nil
	}
	t, err := ti.older(ctx, tx, n, maxSeq+1, termFanout)
	if err != nil {
		return nil, err
	}
	if len(t) == 0 || t[len(t)-1].hi != from {
		return nil, fmt.Errorf("the segments of log %d do not end at its watermark %d", n, from)
	}
	return t, nil
}

// older returns, in tx, the newest k segments of log number n that start below lo,
// oldest first.
func (ti *termIndex) older(ctx context.Context, tx *sql.Tx, n int64, lo uint64, k int) ([]termSeg, error) {
	var out []termSeg
	err := stmtRows(ctx, tx, ti.st.segs.older, []any{n, int64(lo), k}, func(r *sql.Rows) error {
		var lo, hi int64
		err := r.Scan(&lo, &hi)
		out = append(out, termSeg{lo: uint64(lo), hi: uint64(hi)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("segments of log %d: %w", n, err)
	}
	slices.Reverse(out)
	return out, nil
}

// compact merges, in tx, the newest segments of log number n while mergeable says so,
// and returns its new tail: its newest termFanout segments, or all of them if it has
// fewer.
func (ti *termIndex) compact(ctx context.Context, tx *sql.Tx, n int64, tail []termSeg) ([]termSeg, error) {
	for {
		if len(tail) < termFanout && tail[0].lo > 0 {
			// A merge left fewer than the tail holds: the older segments may now be
			// mergeable with the merged one.
			older, err := ti.older(ctx, tx, n, tail[0].lo, termFanout-len(tail))
			if err != nil {
				return nil, err
			}
			if len(older) == 0 || older[len(older)-1].hi != tail[0].lo {
				return nil, fmt.Errorf("the segments of log %d are not contiguous at %d", n, tail[0].lo)
			}
			tail = append(older, tail...)
		}
		k := mergeable(tail)
		if k == 0 {
			break
		}
		segs := tail[len(tail)-k:]
		if err := ti.merge(ctx, tx, n, segs); err != nil {
			return nil, err
		}
		tail = append(tail[:len(tail)-k], termSeg{lo: segs[0].lo, hi: segs[k-1].hi})
	}
	return tail[max(0, len(tail)-termFanout):], nil
}

// merge replaces, in tx, the contiguous segments segs of log number n by one, its rows
// those of segs in key order, a value's rows from consecutive segments joined while
// they hold at most postingMax sequences.
func (ti *termIndex) merge(ctx context.Context, tx *sql.Tx, n int64, segs []termSeg) error {
	if err := ti.mergeRows(ctx, tx, n, segs); err != nil {
		return fmt.Errorf("merge segments %d..%d of log %d: %w", segs[0].lo, segs[len(segs)-1].hi, n, err)
	}
	return nil
}

// mergeRows is merge without the context of its errors.
func (ti *termIndex) mergeRows(ctx context.Context, tx *sql.Tx, n int64, segs []termSeg) error {
	lo, last := int64(segs[0].lo), int64(segs[len(segs)-1].lo)
	var ps []logPosting
	err := stmtRows(ctx, tx, ti.st.segs.rows, []any{n, lo, last}, func(r *sql.Rows) error {
		var p logPosting
		var end int64
		var list string
		if err := r.Scan(&p.kind, &p.value, &end, &list); err != nil {
			return err
		}
		p.n, p.seg, p.last, p.seqs = n, uint64(lo), uint64(end), []byte(list)
		ps = append(ps, p)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(ps, func(a, b logPosting) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(a.value, b.value), cmp.Compare(a.last, b.last))
	})
	joined := ps[:0]
	count := 0 // sequences in joined's last row
	for _, p := range ps {
		c := 1 + bytes.Count(p.seqs, []byte{','})
		if j := len(joined) - 1; j >= 0 && joined[j].kind == p.kind && joined[j].value == p.value && count+c <= postingMax {
			joined[j].seqs = append(append(joined[j].seqs, ','), p.seqs...)
			joined[j].last = p.last
			count += c
			continue
		}
		joined = append(joined, p)
		count = c
	}
	for _, stmt := range []*sql.Stmt{ti.st.segs.dropRows, ti.st.segs.drop} {
		if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, n, lo, last); err != nil {
			return err
		}
	}
	if err := ti.insertPostings(ctx, tx, joined); err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, ti.st.segs.add).ExecContext(ctx, n, lo, int64(segs[len(segs)-1].hi))
	return err
}

// insertPostings inserts ps, in the order of the primary key.
func (ti *termIndex) insertPostings(ctx context.Context, tx *sql.Tx, ps []logPosting) error {
	slices.SortFunc(ps, func(a, b logPosting) int {
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.seg, b.seg), cmp.Compare(a.kind, b.kind),
			strings.Compare(a.value, b.value), cmp.Compare(a.last, b.last))
	})
	_, err := ti.st.postings.exec(ctx, tx, len(ps), func(i int, to []any) []any {
		p := &ps[i]
		return append(to, p.n, int64(p.seg), p.kind, p.value, int64(p.last), string(p.seqs))
	})
	return err
}

// segStmts are the statements of the segments' upkeep, prepared once on the indexer's
// connection.
type segStmts struct {
	older    *sql.Stmt // the newest ?3 segments of log ?1 below lo ?2, newest first
	rows     *sql.Stmt // the postings of log ?1 in segments ?2..?3
	dropRows *sql.Stmt // deletes the postings of log ?1 in segments ?2..?3
	drop     *sql.Stmt // deletes the segments ?2..?3 of log ?1
	add      *sql.Stmt // inserts segment (?1, ?2, ?3)
}

func (st *segStmts) prepare(ctx context.Context, w *sql.DB) error {
	for _, s := range []struct {
		to   **sql.Stmt
		text string
	}{
		{&st.older, `SELECT lo, hi FROM term_segments WHERE log = ? AND lo < ? ORDER BY lo DESC LIMIT ?`},
		{&st.rows, `SELECT kind, value, last, seqs FROM term_postings WHERE log = ? AND seg >= ? AND seg <= ?`},
		{&st.dropRows, `DELETE FROM term_postings WHERE log = ? AND seg >= ? AND seg <= ?`},
		{&st.drop, `DELETE FROM term_segments WHERE log = ? AND lo >= ? AND lo <= ?`},
		{&st.add, `INSERT INTO term_segments(log, lo, hi) VALUES (?, ?, ?)`},
	} {
		var err error
		if *s.to, err = w.PrepareContext(ctx, s.text); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	return nil
}

func (st *segStmts) all() []*sql.Stmt {
	return []*sql.Stmt{st.older, st.rows, st.dropRows, st.drop, st.add}
}

// stmtRows runs the prepared statement s in tx with args and calls fn for each row.
func stmtRows(ctx context.Context, tx *sql.Tx, s *sql.Stmt, args []any, fn func(*sql.Rows) error) error {
	rows, err := tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	return forRows(rows, err, fn)
}
