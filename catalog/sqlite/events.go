package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
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
	n, ok, err := db.logNum(ctx, log, false)
	if err != nil {
		return catalog.Event{}, err
	}
	if !ok {
		return catalog.Event{}, fmt.Errorf("sqlite: event %q in %s: %w", id, log, catalog.ErrNotFound)
	}
	e, err := scanEvent(db.r.QueryRowContext(ctx, eventSelect+`events e WHERE e.log = ? AND e.event_id = ?`, n, id))
	if err != nil {
		return e, fmt.Errorf("sqlite: event %q in %s: %w", id, log, mapErr(err))
	}
	return e, nil
}

// EventsByID returns the index rows of those ids that exist, keyed by id: one query
// for a whole batch's idempotency check.
func (db *DB) EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error) {
	out := make(map[string]catalog.Event)
	n, ok, err := db.logNum(ctx, log, false)
	if err != nil || !ok {
		return out, err
	}
	const chunkLen = 500
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

// term is an actor or target id a query looks up in the term index.
type term struct {
	kind  int
	value string
}

// QueryEvents returns one page of index rows matching q, ordered by sequence.
//
// Every filter is a condition on the events row. A query with an actor, target or
// entity filter also walks the term index for it (terms.go): up to the indexed
// sequence through the index, and the events after it, which the indexer has not
// reached, by scanning their key range; the two parts are merged by sequence.
func (db *DB) QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	limit := catalog.ClampLimit(q.Limit)
	out := make([]catalog.Event, 0, min(limit, 64))
	n, ok, err := db.logNum(ctx, q.Log, false)
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
	filter := ""
	if len(where) > 0 {
		filter = " AND " + strings.Join(where, " AND ")
	}
	order := " ORDER BY e.k ASC LIMIT ?"
	if q.Descending {
		order = " ORDER BY e.k DESC LIMIT ?"
	}
	collect := func(e catalog.Event) { out = append(out, e) }
	if len(terms) == 0 {
		// With no filter, the page is a walk of the rowid range that stops after limit
		// rows; an equality on log would lead SQLite to an index and a sort of the
		// whole log instead. With a filter, log leads that filter's index.
		stmt := eventSelect + `events e WHERE e.k > ? AND e.k < ?` + filter + order
		a := append([]any{lo, hi}, args...)
		if filter != "" {
			stmt = eventSelect + `events e WHERE e.log = ? AND e.k > ? AND e.k < ?` + filter + order
			a = append([]any{n, lo, hi}, args...)
		}
		if err := db.queryEvents(ctx, db.r, stmt, append(a, limit), collect); err != nil {
			return nil, fmt.Errorf("sqlite: query events of %s: %w", q.Log, err)
		}
		return out, nil
	}
	if err := db.queryTerms(ctx, n, lo, hi, terms, filter, args, order, limit, collect); err != nil {
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

// queryTerms runs the parts of a query driven by terms, in one read transaction: one
// through the term index for each term, up to the indexed sequence, and one over the
// events after it. Each part returns at most limit rows in order; the caller merges.
func (db *DB) queryTerms(ctx context.Context, n, lo, hi int64, terms []term, filter string, args []any, order string, limit int, each func(catalog.Event)) error {
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var indexed int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(indexed_seq), 0) FROM terms.term_state WHERE log = ?`, n).Scan(&indexed); err != nil {
		return fmt.Errorf("term index watermark: %w", err)
	}
	edge := key(n, uint64(indexed))
	if lo < edge {
		for _, t := range terms {
			// CROSS JOIN: walk the term's entries in key order, then look each row up.
			stmt := eventSelect + `terms.event_terms t CROSS JOIN events e ON e.k = t.k
				WHERE t.log = ? AND t.kind = ? AND t.value = ? AND t.k > ? AND t.k <= ? AND t.k < ?` +
				filter + strings.Replace(order, "e.k", "t.k", 1)
			a := append(append([]any{n, t.kind, t.value, lo, edge, hi}, args...), limit)
			if err := db.queryEvents(ctx, tx, stmt, a, each); err != nil {
				return err
			}
		}
	}
	if edge < hi-1 {
		stmt := eventSelect + `events e WHERE e.k > ? AND e.k < ?` + filter + order
		if err := db.queryEvents(ctx, tx, stmt, append(append([]any{max(lo, edge), hi}, args...), limit), each); err != nil {
			return err
		}
	}
	return nil
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
