package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

// eventSelect selects index rows as scanEvent reads them, from events as e.
const eventSelect = `SELECT e.k, e.event_id, e.received_ms, e.action, e.status, e.actor_type, e.actor_id,
	e.target_type, e.target_id, e.payload_hash, e.leaf_hash FROM `

func scanEvent(row interface{ Scan(...any) error }) (catalog.Event, error) {
	var (
		e       catalog.Event
		k, recv int64
		ph, lh  []byte
		err     error
	)
	if err = row.Scan(&k, &e.ID, &recv, &e.Action, &e.Status, &e.ActorType, &e.ActorID,
		&e.TargetType, &e.TargetID, &ph, &lh); err != nil {
		return e, err
	}
	e.Sequence, e.ReceivedAt = seqOf(k), catalog.FromUnixMS(recv)
	if e.PayloadHash, err = catalog.HashFrom(ph); err != nil {
		return e, err
	}
	e.LeafHash, err = catalog.HashFrom(lh)
	return e, err
}

// EventByID returns the index row of event id, or catalog.ErrNotFound.
func (db *DB) EventByID(ctx context.Context, log catalog.LogID, id string) (catalog.Event, error) {
	n, ok, err := db.logNum(ctx, log)
	if err != nil {
		return catalog.Event{}, err
	}
	if !ok {
		return catalog.Event{}, fmt.Errorf("sqlite: event %q in %s: %w", id, log, catalog.ErrNotFound)
	}
	// An id whose row is in events_recent is known in memory (recent.go); any other
	// committed id is in events, whose (log, event_id) index finds it.
	var e catalog.Event
	if s, ok := db.recent.seq(n, id); ok {
		e, err = scanEvent(db.queryRow(ctx, eventByKey, key(n, s)))
	} else {
		e, err = scanEvent(db.queryRow(ctx, eventSelect+`events e WHERE e.log = ? AND e.event_id = ?`, n, id))
	}
	if err != nil {
		return e, fmt.Errorf("sqlite: event %q in %s: %w", id, log, mapErr(err))
	}
	return e, nil
}

// eventByKey selects the index row of key ?1 from whichever table holds it.
const eventByKey = eventSelect + `events e WHERE e.k = ?1 UNION ALL ` + eventSelect + `events_recent e WHERE e.k = ?1`

// bothTables returns the statement selecting the index rows that where matches from
// events and from events_recent, ordered by key (descending if desc), at most limit
// of them, and its parameters: args (where's) for each table, then limit. SQLite
// merges the two ordered halves; neither is sorted whole.
func bothTables(where string, args []any, desc bool, limit int) (string, []any) {
	a := make([]any, 0, 2*len(args)+1)
	a = append(append(append(a, args...), args...), limit)
	return unionTables(eventSelect, where, desc), a
}

// unionTables returns the statement selecting sel (ending in FROM) from events and
// from events_recent, both as e, where where holds, ordered by the first column
// (descending if desc) and limited by the parameter after where's.
func unionTables(sel, where string, desc bool) string {
	return sel + `events e WHERE ` + where + ` UNION ALL ` + sel + `events_recent e WHERE ` + where + pageOrder(desc)
}

// EventsByID returns the index rows of those ids that exist, keyed by id: one query
// for a whole batch's idempotency check.
func (db *DB) EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error) {
	out := make(map[string]catalog.Event)
	n, ok, err := db.logNum(ctx, log)
	if err != nil || !ok {
		return out, err
	}
	// Ids whose rows are in events_recent by key (recent.go), the others through
	// events' (log, event_id) index.
	var keys []any
	rest := make([]string, 0, len(ids))
	for _, id := range ids {
		if s, ok := db.recent.seq(n, id); ok {
			keys = append(keys, key(n, s))
		} else {
			rest = append(rest, id)
		}
	}
	ids = rest
	const chunkLen = 500
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), chunkLen)]
		keys = keys[len(chunk):]
		in := `e.k IN (?` + strings.Repeat(",?", len(chunk)-1) + `)`
		q, args := bothTables(in, chunk, false, len(chunk))
		if err := db.queryEvents(ctx, db.r, q, args, func(e catalog.Event) { out[e.ID] = e }); err != nil {
			return nil, fmt.Errorf("sqlite: events by id in %s: %w", log, err)
		}
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), chunkLen)]
		ids = ids[len(chunk):]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, n)
		for _, id := range chunk {
			args = append(args, id)
		}
		q := eventSelect + `events e WHERE e.log = ? AND e.event_id IN (?` + strings.Repeat(",?", len(chunk)-1) + `)`
		if err := db.queryEvents(ctx, db.r, q, args, func(e catalog.Event) { out[e.ID] = e }); err != nil {
			return nil, fmt.Errorf("sqlite: events by id in %s: %w", log, err)
		}
	}
	return out, nil
}

// term is an actor or target id, action or status a query looks up in the term index.
type term struct {
	kind  int
	value string
}

// eventLeaves selects the keys and leaf hashes of both tables' rows with keys in
// (?1, ?2), in key order, at most ?3 of them.
var eventLeaves = unionTables(`SELECT e.k, e.leaf_hash FROM `, `e.k > ?1 AND e.k < ?2`, false)

// EventLeaves returns the sequences and leaf hashes of log's index rows after
// sequence after: the walk of QueryEvents without a filter, reading two columns of
// the eleven (a rebuild of 10^6 events spent two thirds of its reading goroutine
// fetching the others).
func (db *DB) EventLeaves(ctx context.Context, log catalog.LogID, after uint64, limit int) ([]catalog.EventLeaf, error) {
	limit = catalog.ClampLimit(limit)
	n, ok, err := db.logNum(ctx, log)
	if err != nil || !ok || after >= maxSeq {
		return nil, err
	}
	out := make([]catalog.EventLeaf, 0, min(limit, 1024))
	rows, err := db.query(ctx, eventLeaves, key(n, after), key(n+1, 0), limit)
	err = forRows(rows, err, func(rows *sql.Rows) error {
		var (
			k  int64
			lh sql.RawBytes
		)
		if err := rows.Scan(&k, &lh); err != nil {
			return err
		}
		h, err := catalog.HashFrom(lh)
		out = append(out, catalog.EventLeaf{Sequence: seqOf(k), LeafHash: h})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: leaves of %s after %d: %w", log, after, err)
	}
	return out, nil
}

// QueryEvents returns one page of index rows matching q, ordered by sequence.
//
// Every filter is a condition on the events row. A query with an actor, target,
// entity, action or status filter also walks the term index for one of them
// (terms.go; an id before an action, an action before a status, as ids are the most
// selective and statuses the least): up to the indexed sequence through the index,
// and the events after it, which the indexer has not reached, by scanning their key
// range; the two parts are merged by sequence.
func (db *DB) QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	limit := catalog.ClampLimit(q.Limit)
	out := make([]catalog.Event, 0, min(limit, 64))
	n, ok, err := db.logNum(ctx, q.Log)
	if err != nil || !ok {
		return out, err
	}
	// Keys in (lo, hi) are the candidates.
	lo, hi := key(n, 0), key(n+1, 0)
	if q.Cursor > 0 {
		if q.Descending {
			hi = key(n, min(q.Cursor, maxSeq+1))
		} else if q.Cursor >= maxSeq {
			return out, nil
		} else {
			lo = key(n, q.Cursor)
		}
	}
	var (
		where []string
		args  []any
		terms []term
	)
	add := func(cond string, vals ...any) {
		where = append(where, cond)
		args = append(args, vals...)
	}
	if q.Action != "" {
		add("e.action = ?", q.Action)
	}
	if q.Status != "" {
		add("e.status = ?", q.Status)
	}
	// The term index holds no empty ids, so an empty id is matched on the rows alone.
	if q.ActorID != "" {
		add("e.actor_id = ?", q.ActorID)
		terms = []term{{termActor, q.ActorID}}
	}
	if q.TargetID != "" {
		add("e.target_id = ?", q.TargetID)
		if terms == nil {
			terms = []term{{termTarget, q.TargetID}}
		}
	}
	if !q.From.IsZero() {
		add("e.received_ms >= ?", q.From.UnixMilli())
	}
	if !q.To.IsZero() {
		add("e.received_ms < ?", q.To.UnixMilli())
	}
	if q.Entity != nil {
		id, typ := q.Entity.ID, q.Entity.Type
		var byEntity []term
		switch q.Direction {
		case catalog.DirectionOutgoing:
			add("e.actor_id = ? AND e.actor_type = ?", id, typ)
			byEntity = []term{{termActor, id}}
		case catalog.DirectionIncoming:
			add("e.target_id = ? AND e.target_type = ?", id, typ)
			byEntity = []term{{termTarget, id}}
		default:
			add("((e.actor_id = ? AND e.actor_type = ?) OR (e.target_id = ? AND e.target_type = ?))", id, typ, id, typ)
			byEntity = []term{{termActor, id}, {termTarget, id}}
		}
		// Every filter is ANDed, so driving by any one of them is exact.
		if id != "" {
			terms = byEntity
		}
	}
	switch {
	case terms != nil:
	case q.Action != "":
		terms = []term{{termAction, q.Action}}
	case q.Status != "":
		terms = []term{{termStatus, q.Status}}
	}
	filter := ""
	if len(where) > 0 {
		filter = " AND " + strings.Join(where, " AND ")
	}
	// One read transaction: the time bounds, the term index's watermark and the rows
	// are read from one snapshot.
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query events of %s: %w", q.Log, err)
	}
	defer tx.Rollback()
	if !q.From.IsZero() || !q.To.IsZero() {
		if lo, hi, err = timeBounds(ctx, tx, n, lo, hi, q.From, q.To); err != nil {
			return nil, fmt.Errorf("sqlite: query events of %s: %w", q.Log, err)
		}
		if hi-lo < 2 {
			return out, nil
		}
	}
	collect := func(e catalog.Event) { out = append(out, e) }
	if len(terms) == 0 {
		// The page is a walk of the rowid range that stops after limit rows; an
		// equality on log would lead SQLite to an index and a sort of the whole log
		// instead.
		stmt, a := bothTables(`e.k > ? AND e.k < ?`+filter, append([]any{lo, hi}, args...), q.Descending, limit)
		if err := db.queryEvents(ctx, tx, stmt, a, collect); err != nil {
			return nil, fmt.Errorf("sqlite: query events of %s: %w", q.Log, err)
		}
		return out, nil
	}
	if err := db.queryTerms(ctx, tx, n, lo, hi, terms, filter, args, q.Descending, limit, collect); err != nil {
		return nil, fmt.Errorf("sqlite: query events of %s: %w", q.Log, err)
	}
	slices.SortFunc(out, func(a, b catalog.Event) int {
		if q.Descending {
			return cmp.Compare(b.Sequence, a.Sequence)
		}
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	out = slices.CompactFunc(out, func(a, b catalog.Event) bool { return a.Sequence == b.Sequence })
	return out[:min(len(out), limit)], nil
}

// queryTerms runs the parts of a query driven by terms, in the read transaction tx:
// one through the postings of each term, up to the indexed sequence, and one over the
// events after it. Each part returns at most limit rows in order; the caller merges.
func (db *DB) queryTerms(ctx context.Context, tx *sql.Tx, n, lo, hi int64, terms []term, filter string, args []any, desc bool, limit int, each func(catalog.Event)) error {
	var indexed int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(indexed_seq), 0) FROM terms.term_state WHERE log = ?`, n).Scan(&indexed); err != nil {
		return fmt.Errorf("term index watermark: %w", err)
	}
	edge := key(n, uint64(indexed))
	if lo < edge {
		base := key(n, 0)
		// Sequences in (from, to] are the candidates below the watermark.
		from, to := uint64(lo-base), uint64(min(edge, hi-1)-base)
		for _, t := range terms {
			if err := db.termPart(ctx, tx, n, t, from, to, filter, args, desc, limit, each); err != nil {
				return err
			}
		}
	}
	if edge < hi-1 {
		stmt, a := bothTables(`e.k > ? AND e.k < ?`+filter, append([]any{max(lo, edge), hi}, args...), desc, limit)
		if err := db.queryEvents(ctx, tx, stmt, a, each); err != nil {
			return err
		}
	}
	return nil
}

// Postings are read postingRows at a time, and their events looked up termLookup
// sequences at a time. Variables so that tests can shrink them.
var (
	postingRows = 16
	termLookup  = 256
)

// termPart passes to each, in sequence order (descending if desc), the events of log
// n whose sequence is in (from, to] and which term t names and filter matches, at
// most limit of them. It walks the segments of the term index that overlap the range
// (terms_segments.go), in order, and in each t's postings from the end of the range
// it starts at, so a page deep into a long history reads only the postings it
// returns from.
func (db *DB) termPart(ctx context.Context, tx *sql.Tx, n int64, t term, from, to uint64, filter string, args []any, desc bool, limit int, each func(catalog.Event)) error {
	found := 0
	return eachSegment(ctx, tx, n, from, to, desc, func(s termSeg) (bool, error) {
		got, err := db.segmentPart(ctx, tx, n, s.lo, t, max(from, s.lo), min(to, s.hi), filter, args, desc, limit-found, each)
		found += got
		return found < limit, err
	})
}

// segmentRows is how many segments eachSegment reads at a time; a variable so that
// tests can shrink it.
var segmentRows = 64

// eachSegment calls fn with the segments of log n's term index that hold sequences in
// (from, to], in order (descending if desc), until fn returns false or an error.
func eachSegment(ctx context.Context, tx *sql.Tx, n int64, from, to uint64, desc bool, fn func(termSeg) (bool, error)) error {
	var cursor int64 // ascending: the least lo still to read; descending: the lo the next are below
	if desc {
		cursor = int64(to)
	} else if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(lo), 0) FROM terms.term_segments WHERE log = ? AND lo <= ?`,
		n, int64(from)).Scan(&cursor); err != nil {
		return fmt.Errorf("segments of the term index: %w", err)
	}
	for {
		q := `SELECT lo, hi FROM terms.term_segments WHERE log = ? AND lo >= ? AND lo < ? ORDER BY lo LIMIT ?`
		a := []any{n, cursor, int64(to), segmentRows}
		if desc {
			q = `SELECT lo, hi FROM terms.term_segments WHERE log = ? AND lo < ? ORDER BY lo DESC LIMIT ?`
			a = []any{n, cursor, segmentRows}
		}
		var segs []termSeg
		if err := eachRow(ctx, tx, q, a, func(r *sql.Rows) error {
			var lo, hi int64
			err := r.Scan(&lo, &hi)
			segs = append(segs, termSeg{lo: uint64(lo), hi: uint64(hi)})
			return err
		}); err != nil {
			return fmt.Errorf("segments of the term index: %w", err)
		}
		for _, s := range segs {
			if s.hi <= from {
				if desc {
					return nil
				}
				continue
			}
			if more, err := fn(s); err != nil || !more {
				return err
			}
		}
		if len(segs) < segmentRows {
			return nil
		}
		if cursor = int64(segs[len(segs)-1].lo); !desc {
			cursor++
		}
	}
}

// segmentPart is termPart within the segment seg, whose sequences (from, to] are
// within: it returns how many events it passed to each.
func (db *DB) segmentPart(ctx context.Context, tx *sql.Tx, n int64, seg uint64, t term, from, to uint64, filter string, args []any, desc bool, limit int, each func(catalog.Event)) (int, error) {
	// A posting holds sequences from first to last, and no other posting of t
	// overlaps it: ascending, the postings to read are those with last > from, in
	// order of last; descending, the one with the least last >= to and those below.
	var bound uint64
	if desc {
		var b sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT min(last) FROM terms.term_postings
			WHERE log = ? AND seg = ? AND kind = ? AND value = ? AND last >= ?`, n, int64(seg), t.kind, t.value, int64(to)).Scan(&b); err != nil {
			return 0, fmt.Errorf("postings of %d %q: %w", t.kind, t.value, err)
		}
		bound = maxSeq
		if b.Valid {
			bound = uint64(b.Int64)
		}
	} else {
		bound = from
	}
	found := 0
	for found < limit {
		// Read postings until they hold as many candidates as the page still needs
		// (a posting of a frequent id holds thousands), at most postingRows of them.
		var seqs []uint64
		rows, enough := 0, false
		q := `SELECT last, seqs FROM terms.term_postings WHERE log = ? AND seg = ? AND kind = ? AND value = ? AND last > ? ORDER BY last LIMIT ?`
		a := []any{n, int64(seg), t.kind, t.value, int64(bound), postingRows}
		if desc {
			q = `SELECT last, seqs FROM terms.term_postings WHERE log = ? AND seg = ? AND kind = ? AND value = ? AND last <= ? AND last > ? ORDER BY last DESC LIMIT ?`
			a = []any{n, int64(seg), t.kind, t.value, int64(bound), int64(from), postingRows}
		}
		err := eachRow(ctx, tx, q, a, func(r *sql.Rows) error {
			var last int64
			var list string
			if err := r.Scan(&last, &list); err != nil {
				return err
			}
			rows++
			got, err := parseSeqs(list)
			if err != nil {
				return fmt.Errorf("posting of %d %q ending at %d: %w", t.kind, t.value, last, err)
			}
			if desc {
				slices.Reverse(got)
				bound = uint64(last) - 1
			} else {
				bound = uint64(last)
			}
			for _, s := range got {
				if s > from && s <= to {
					seqs = append(seqs, s)
				}
			}
			if len(seqs) >= limit-found {
				enough = true
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return found, err
		}
		for len(seqs) > 0 && found < limit {
			chunk := seqs[:min(len(seqs), termLookup)]
			seqs = seqs[len(chunk):]
			if err := db.lookupSeqs(ctx, tx, n, chunk, filter, args, desc, limit-found, func(e catalog.Event) {
				found++
				each(e)
			}); err != nil {
				return found, err
			}
		}
		if (!enough && rows < postingRows) || (desc && bound <= from) {
			return found, nil
		}
	}
	return found, nil
}

// pageOrder is the end of a page's statement: rows in key order (the first column,
// as a compound SELECT names it), up to a limit.
func pageOrder(desc bool) string {
	if desc {
		return " ORDER BY 1 DESC LIMIT ?"
	}
	return " ORDER BY 1 ASC LIMIT ?"
}

// errEnough stops a read of postings that found enough candidates.
var errEnough = errors.New("enough postings")

// lookupSeqs passes to each, in the order of seqs, the events of log n at seqs that
// filter matches, at most limit of them.
func (db *DB) lookupSeqs(ctx context.Context, tx *sql.Tx, n int64, seqs []uint64, filter string, args []any, desc bool, limit int, each func(catalog.Event)) error {
	a := make([]any, 0, len(seqs)+len(args)+1)
	for _, s := range seqs {
		a = append(a, key(n, s))
	}
	stmt, all := bothTables(`e.k IN (?`+strings.Repeat(",?", len(seqs)-1)+`)`+filter, append(a, args...), desc, limit)
	return db.queryEvents(ctx, tx, stmt, all, each)
}

// parseSeqs parses a posting's list of sequences, and sorts it if it is not sorted
// (group_concat does not promise an order).
func parseSeqs(list string) ([]uint64, error) {
	out := make([]uint64, 0, strings.Count(list, ",")+1)
	for f := range strings.SplitSeq(list, ",") {
		s, err := strconv.ParseUint(f, 10, 64)
		if err != nil || s == 0 || s > maxSeq {
			return nil, fmt.Errorf("bad sequence %q", f)
		}
		out = append(out, s)
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return out, nil
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func (db *DB) queryEvents(ctx context.Context, r querier, q string, args []any, each func(catalog.Event)) error {
	return eachRow(ctx, r, q, args, func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		if err == nil {
			each(e)
		}
		return err
	})
}
