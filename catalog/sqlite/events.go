package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

const eventSelect = `SELECT seq, event_id, received_ms, action, status, actor_type, actor_id,
	target_type, target_id, payload_hash, leaf_hash FROM events `

func scanEvent(row interface{ Scan(...any) error }) (catalog.Event, error) {
	var (
		e         catalog.Event
		seq, recv int64
		ph, lh    []byte
		err       error
	)
	if err = row.Scan(&seq, &e.ID, &recv, &e.Action, &e.Status, &e.ActorType, &e.ActorID,
		&e.TargetType, &e.TargetID, &ph, &lh); err != nil {
		return e, err
	}
	e.Sequence, e.ReceivedAt = uint64(seq), catalog.FromUnixMS(recv)
	if e.PayloadHash, err = catalog.HashFrom(ph); err != nil {
		return e, err
	}
	e.LeafHash, err = catalog.HashFrom(lh)
	return e, err
}

// EventByID returns the index row of event id, or catalog.ErrNotFound.
func (db *DB) EventByID(ctx context.Context, log catalog.LogID, id string) (catalog.Event, error) {
	e, err := scanEvent(db.r.QueryRowContext(ctx, eventSelect+`WHERE project_id = ? AND stream = ? AND event_id = ?`,
		log.ProjectID, string(log.Stream), id))
	if err != nil {
		return e, fmt.Errorf("sqlite: event %q in %s: %w", id, log, mapErr(err))
	}
	return e, nil
}

// EventsByID returns the index rows of those ids that exist, keyed by id: one query
// for a whole batch's idempotency check.
func (db *DB) EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error) {
	out := make(map[string]catalog.Event)
	const chunkLen = 500
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), chunkLen)]
		ids = ids[len(chunk):]
		args := make([]any, 0, len(chunk)+2)
		args = append(args, log.ProjectID, string(log.Stream))
		for _, id := range chunk {
			args = append(args, id)
		}
		q := eventSelect + `WHERE project_id = ? AND stream = ? AND event_id IN (?` + strings.Repeat(",?", len(chunk)-1) + `)`
		if err := db.queryEvents(ctx, q, args, func(e catalog.Event) { out[e.ID] = e }); err != nil {
			return nil, fmt.Errorf("sqlite: events by id in %s: %w", log, err)
		}
	}
	return out, nil
}

// QueryEvents returns one page of index rows matching q, ordered by sequence.
func (db *DB) QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var (
		where = []string{"project_id = ?", "stream = ?"}
		args  = []any{q.Log.ProjectID, string(q.Log.Stream)}
	)
	add := func(cond string, vals ...any) {
		where = append(where, cond)
		args = append(args, vals...)
	}
	if q.Action != "" {
		add("action = ?", q.Action)
	}
	if q.Status != "" {
		add("status = ?", q.Status)
	}
	if q.ActorID != "" {
		add("actor_id = ?", q.ActorID)
	}
	if q.TargetID != "" {
		add("target_id = ?", q.TargetID)
	}
	if !q.From.IsZero() {
		add("received_ms >= ?", q.From.UnixMilli())
	}
	if !q.To.IsZero() {
		add("received_ms < ?", q.To.UnixMilli())
	}
	if q.Entity != nil {
		switch q.Direction {
		case catalog.DirectionOutgoing:
			add("actor_id = ? AND actor_type = ?", q.Entity.ID, q.Entity.Type)
		case catalog.DirectionIncoming:
			add("target_id = ? AND target_type = ?", q.Entity.ID, q.Entity.Type)
		default:
			add("((actor_id = ? AND actor_type = ?) OR (target_id = ? AND target_type = ?))",
				q.Entity.ID, q.Entity.Type, q.Entity.ID, q.Entity.Type)
		}
	}
	order := "ASC"
	if q.Descending {
		order = "DESC"
		if q.Cursor > 0 {
			add("seq < ?", int64(q.Cursor))
		}
	} else if q.Cursor > 0 {
		add("seq > ?", int64(q.Cursor))
	}
	limit := catalog.ClampLimit(q.Limit)
	stmt := eventSelect + "WHERE " + strings.Join(where, " AND ") + " ORDER BY seq " + order + " LIMIT ?"
	args = append(args, limit)
	out := make([]catalog.Event, 0, min(limit, 64))
	if err := db.queryEvents(ctx, stmt, args, func(e catalog.Event) { out = append(out, e) }); err != nil {
		return nil, fmt.Errorf("sqlite: query events of %s: %w", q.Log, err)
	}
	return out, nil
}

func (db *DB) queryEvents(ctx context.Context, q string, args []any, each func(catalog.Event)) error {
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return err
		}
		each(e)
	}
	return rows.Err()
}
