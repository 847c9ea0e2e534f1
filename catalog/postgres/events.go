package postgres

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

const eventCols = `e.seq, e.event_id, e.received_at, e.action, e.status, e.actor_type, e.actor_id,
	e.target_type, e.target_id, e.payload_hash, e.leaf_hash`

func scanEvent(row scanner) (catalog.Event, error) {
	var (
		e      catalog.Event
		seq    int64
		ph, lh []byte
		err    error
	)
	if err = row.Scan(&seq, &e.ID, &e.ReceivedAt, &e.Action, &e.Status, &e.ActorType, &e.ActorID,
		&e.TargetType, &e.TargetID, &ph, &lh); err != nil {
		return e, err
	}
	e.Sequence, e.ReceivedAt = uint64(seq), e.ReceivedAt.UTC()
	if e.PayloadHash, err = catalog.HashFrom(ph); err != nil {
		return e, err
	}
	e.LeafHash, err = catalog.HashFrom(lh)
	return e, err
}

// byID joins the id table to the index row; the join on received_at lets PostgreSQL
// prune to the one partition holding the row.
const byID = `SELECT ` + eventCols + byIDFrom

// byIDFrom is what follows the columns of byID (EventSequence reads one).
const byIDFrom = ` FROM event_ids i JOIN events e
	ON e.project_id = i.project_id AND e.stream = i.stream AND e.received_at = i.received_at AND e.seq = i.seq
	WHERE i.project_id = $1 AND i.stream = $2 AND `

// EventByID returns the index row of event id, or catalog.ErrNotFound.
func (db *DB) EventByID(ctx context.Context, log catalog.LogID, id string) (catalog.Event, error) {
	e, err := scanEvent(db.pool.QueryRow(ctx, byID+`i.event_id = $3`, log.ProjectID, string(log.Stream), id))
	if err != nil {
		return e, fmt.Errorf("postgres: event %q in %s: %w", id, log, mapErr(err))
	}
	return e, nil
}

// EventsByID returns the index rows of those ids that exist, keyed by id: one query
// for a whole batch's idempotency check.
func (db *DB) EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error) {
	out := make(map[string]catalog.Event, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, byID+`i.event_id = ANY($3)`, log.ProjectID, string(log.Stream), ids)
	evs, err := collect(rows, err, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("postgres: events by id in %s: %w", log, err)
	}
	for _, e := range evs {
		out[e.ID] = e
	}
	return out, nil
}

// EventLeaves returns the sequences and leaf hashes of log's index rows after
// sequence after: the walk of QueryEvents without a filter, reading two columns.
func (db *DB) EventLeaves(ctx context.Context, log catalog.LogID, after uint64, limit int) ([]catalog.EventLeaf, error) {
	if after > math.MaxInt64 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT e.seq, e.leaf_hash FROM events e
		WHERE e.project_id = $1 AND e.stream = $2 AND e.seq > $3 ORDER BY e.seq LIMIT $4`,
		log.ProjectID, string(log.Stream), int64(after), catalog.ClampLimit(limit))
	out, err := collect(rows, err, func(row scanner) (catalog.EventLeaf, error) {
		var (
			seq int64
			lh  []byte
		)
		if err := row.Scan(&seq, &lh); err != nil {
			return catalog.EventLeaf{}, err
		}
		h, err := catalog.HashFrom(lh)
		return catalog.EventLeaf{Sequence: uint64(seq), LeafHash: h}, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: leaves of %s after %d: %w", log, after, err)
	}
	return out, nil
}

// QueryEvents returns one page of index rows matching q, ordered by sequence.
func (db *DB) QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where = append(where, "e.project_id = "+arg(q.Log.ProjectID), "e.stream = "+arg(string(q.Log.Stream)))
	if q.Action != "" {
		where = append(where, "e.action = "+arg(q.Action))
	}
	if q.Status != "" {
		where = append(where, "e.status = "+arg(q.Status))
	}
	if q.ActorID != "" {
		where = append(where, "e.actor_id = "+arg(q.ActorID))
	}
	if q.TargetID != "" {
		where = append(where, "e.target_id = "+arg(q.TargetID))
	}
	if !q.From.IsZero() {
		where = append(where, "e.received_at >= "+arg(catalog.MS(q.From)))
	}
	if !q.To.IsZero() {
		where = append(where, "e.received_at < "+arg(catalog.MS(q.To)))
	}
	if q.Entity != nil {
		id, typ := arg(q.Entity.ID), arg(q.Entity.Type)
		actor := "(e.actor_id = " + id + " AND e.actor_type = " + typ + ")"
		target := "(e.target_id = " + id + " AND e.target_type = " + typ + ")"
		switch q.Direction {
		case catalog.DirectionOutgoing:
			where = append(where, actor)
		case catalog.DirectionIncoming:
			where = append(where, target)
		default:
			where = append(where, "("+actor+" OR "+target+")")
		}
	}
	order := "ASC"
	if q.Descending {
		order = "DESC"
		if q.Cursor > 0 {
			where = append(where, "e.seq < "+arg(int64(q.Cursor)))
		}
	} else if q.Cursor > 0 {
		where = append(where, "e.seq > "+arg(int64(q.Cursor)))
	}
	stmt := `SELECT ` + eventCols + ` FROM events e WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY e.seq ` + order + ` LIMIT ` + arg(catalog.ClampLimit(q.Limit))
	rows, err := db.pool.Query(ctx, stmt, args...)
	evs, err := collect(rows, err, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("postgres: query events of %s: %w", q.Log, err)
	}
	return evs, nil
}
