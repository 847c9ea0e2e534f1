package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sealtrail/sealtrail/catalog"
)

var _ catalog.SIEMCatalog = (*DB)(nil)

const destSelect = `SELECT id, project_id, stream, name, kind, format, config, state, cursor, attempts,
	last_error, failed_at, lease_owner, lease_until, created_at, updated_at FROM siem_destinations `

func scanDest(row scanner) (catalog.Destination, error) {
	var d catalog.Destination
	var stream, state string
	var cursor int64
	var failed, until *time.Time
	err := row.Scan(&d.ID, &d.ProjectID, &stream, &d.Name, &d.Kind, &d.Format, &d.Config, &state, &cursor,
		&d.Attempts, &d.LastError, &failed, &d.LeaseOwner, &until, &d.CreatedAt, &d.UpdatedAt)
	d.Stream, d.State, d.Cursor = catalog.Stream(stream), catalog.DestState(state), uint64(cursor)
	d.FailedAt, d.LeaseUntil = fromTZ(failed), fromTZ(until)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, err
}

// CreateDestination stores d with its cursor, failures and lease cleared; a duplicate
// id is catalog.ErrExists, an unknown project catalog.ErrNotFound.
func (db *DB) CreateDestination(ctx context.Context, d catalog.Destination) (catalog.Destination, error) {
	if err := d.Validate(); err != nil {
		return d, err
	}
	d.CreatedAt = db.stamp(d.CreatedAt)
	d.UpdatedAt, d.Attempts, d.LastError, d.FailedAt, d.LeaseOwner, d.LeaseUntil = d.CreatedAt, 0, "", time.Time{}, "", time.Time{}
	if _, err := db.pool.Exec(ctx, `INSERT INTO siem_destinations(id, project_id, stream, name, kind, format,
		config, state, cursor, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		d.ID, d.ProjectID, string(d.Stream), d.Name, d.Kind, d.Format, d.Config, string(d.State), int64(d.Cursor),
		d.CreatedAt, d.UpdatedAt); err != nil {
		return d, fmt.Errorf("postgres: create destination %s: %w", d.ID, mapErr(err))
	}
	return d, nil
}

// Destination returns one destination of a project.
func (db *DB) Destination(ctx context.Context, projectID, id string) (catalog.Destination, error) {
	d, err := scanDest(db.pool.QueryRow(ctx, destSelect+`WHERE project_id = $1 AND id = $2`, projectID, id))
	if err != nil {
		return d, fmt.Errorf("postgres: destination %s: %w", id, mapErr(err))
	}
	return d, nil
}

// ListDestinations lists a project's destinations in id order, or every project's
// when projectID is "".
func (db *DB) ListDestinations(ctx context.Context, projectID string) ([]catalog.Destination, error) {
	rows, err := db.pool.Query(ctx, destSelect+`WHERE $1 = '' OR project_id = $1 ORDER BY id`, projectID)
	ds, err := collect(rows, err, scanDest)
	if err != nil {
		return nil, fmt.Errorf("postgres: list destinations: %w", err)
	}
	return ds, nil
}

// DeleteDestination removes a destination; an unknown one is catalog.ErrNotFound.
func (db *DB) DeleteDestination(ctx context.Context, projectID, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM siem_destinations WHERE project_id = $1 AND id = $2`, projectID, id)
	return oneRow(tag, err, "delete destination "+id, catalog.ErrNotFound)
}

// SetDestinationState sets the state; resuming (active) clears the failures.
func (db *DB) SetDestinationState(ctx context.Context, projectID, id string, state catalog.DestState, at time.Time) (catalog.Destination, error) {
	if !state.Valid() {
		return catalog.Destination{}, fmt.Errorf("%w: destination state %q", catalog.ErrInvalid, state)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE siem_destinations SET state = $3, updated_at = $4,
		attempts = CASE WHEN $3 = 'active' THEN 0 ELSE attempts END,
		last_error = CASE WHEN $3 = 'active' THEN '' ELSE last_error END
		WHERE project_id = $1 AND id = $2`, projectID, id, string(state), db.stamp(at))
	if err := oneRow(tag, err, "set destination state "+id, catalog.ErrNotFound); err != nil {
		return catalog.Destination{}, err
	}
	return db.Destination(ctx, projectID, id)
}

// LeaseDestination takes or renews the delivery lease.
func (db *DB) LeaseDestination(ctx context.Context, id, owner string, now time.Time, ttl time.Duration) (catalog.Destination, error) {
	if owner == "" || ttl <= 0 {
		return catalog.Destination{}, fmt.Errorf("%w: a lease needs an owner and a positive ttl", catalog.ErrInvalid)
	}
	now = catalog.MS(now)
	d, err := scanDest(db.pool.QueryRow(ctx, `UPDATE siem_destinations SET lease_owner = $2, lease_until = $3
		WHERE id = $1 AND (lease_owner = $2 OR lease_owner = '' OR lease_until IS NULL OR lease_until <= $4)
		RETURNING id, project_id, stream, name, kind, format, config, state, cursor, attempts,
		last_error, failed_at, lease_owner, lease_until, created_at, updated_at`, id, owner, catalog.MS(now.Add(ttl)), now))
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			// Unknown, or leased by another runner: either way not this owner's.
			return d, fmt.Errorf("postgres: lease destination %s: %w", id, catalog.ErrConflict)
		}
		return d, fmt.Errorf("postgres: lease destination %s: %w", id, mapErr(err))
	}
	return d, nil
}

// AdvanceDestination moves the cursor under the lease (compare and set).
func (db *DB) AdvanceDestination(ctx context.Context, id, owner string, from, to uint64, now time.Time) error {
	if to <= from {
		return fmt.Errorf("%w: cursor must move forward (%d to %d)", catalog.ErrInvalid, from, to)
	}
	now = catalog.MS(now)
	tag, err := db.pool.Exec(ctx, `UPDATE siem_destinations SET cursor = $4, attempts = 0, last_error = '',
		updated_at = $5 WHERE id = $1 AND cursor = $3 AND lease_owner = $2 AND lease_until > $5`,
		id, owner, int64(from), int64(to), now)
	return oneRow(tag, err, "advance destination "+id, catalog.ErrConflict)
}

// FailDestination records a failed attempt under the lease.
func (db *DB) FailDestination(ctx context.Context, id, owner string, attempts int, lastErr string, dead bool, now time.Time) error {
	now = catalog.MS(now)
	tag, err := db.pool.Exec(ctx, `UPDATE siem_destinations SET attempts = $3, last_error = $4, failed_at = $5,
		updated_at = $5, state = CASE WHEN $6 THEN 'dead_letter' ELSE state END
		WHERE id = $1 AND lease_owner = $2 AND lease_until > $5`,
		id, owner, max(attempts, 0), catalog.TrimError(lastErr), now, dead)
	return oneRow(tag, err, "fail destination "+id, catalog.ErrConflict)
}

// oneRow turns an UPDATE or DELETE result into nil when it changed a row, and into
// none (wrapped) when it changed nothing.
func oneRow(tag pgconn.CommandTag, err error, what string, none error) error {
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", what, mapErr(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: %s: %w", what, none)
	}
	return nil
}

// ReplaceDestinationConfig sets id's config to config if it is still old.
func (db *DB) ReplaceDestinationConfig(ctx context.Context, id string, old, config []byte) (bool, error) {
	tag, err := db.pool.Exec(ctx, `UPDATE siem_destinations SET config = $3 WHERE id = $1 AND config = $2`, id, old, config)
	if err != nil {
		return false, fmt.Errorf("postgres: replace destination config %s: %w", id, mapErr(err))
	}
	return tag.RowsAffected() == 1, nil
}
