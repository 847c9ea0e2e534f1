package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

var _ catalog.SIEMCatalog = (*DB)(nil)

const destSelect = `SELECT id, project_id, stream, name, kind, format, config, state, cursor, attempts,
	last_error, failed_ms, lease_owner, lease_until_ms, created_ms, updated_ms FROM siem_destinations `

func scanDest(row interface{ Scan(...any) error }) (catalog.Destination, error) {
	var d catalog.Destination
	var stream, state string
	var failed, until, created, updated int64
	err := row.Scan(&d.ID, &d.ProjectID, &stream, &d.Name, &d.Kind, &d.Format, &d.Config, &state, &d.Cursor,
		&d.Attempts, &d.LastError, &failed, &d.LeaseOwner, &until, &created, &updated)
	d.Stream, d.State = catalog.Stream(stream), catalog.DestState(state)
	d.FailedAt, d.LeaseUntil = catalog.FromUnixMS(failed), catalog.FromUnixMS(until)
	d.CreatedAt, d.UpdatedAt = catalog.FromUnixMS(created), catalog.FromUnixMS(updated)
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
	if _, err := db.w.ExecContext(ctx, `INSERT INTO siem_destinations(id, project_id, stream, name, kind, format,
		config, state, cursor, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.ProjectID, string(d.Stream), d.Name, d.Kind, d.Format, d.Config, string(d.State), d.Cursor,
		ms(d.CreatedAt), ms(d.UpdatedAt)); err != nil {
		return d, fmt.Errorf("sqlite: create destination %s: %w", d.ID, mapErr(err))
	}
	return d, nil
}

// Destination returns one destination of a project.
func (db *DB) Destination(ctx context.Context, projectID, id string) (catalog.Destination, error) {
	d, err := scanDest(db.w.QueryRowContext(ctx, destSelect+`WHERE project_id = ? AND id = ?`, projectID, id))
	if err != nil {
		return d, fmt.Errorf("sqlite: destination %s: %w", id, mapErr(err))
	}
	return d, nil
}

// ListDestinations lists a project's destinations in id order, or every project's
// when projectID is "".
func (db *DB) ListDestinations(ctx context.Context, projectID string) ([]catalog.Destination, error) {
	rows, err := db.w.QueryContext(ctx, destSelect+`WHERE ? = '' OR project_id = ? ORDER BY id`, projectID, projectID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list destinations: %w", err)
	}
	return collect(rows, scanDest)
}

// DeleteDestination removes a destination; an unknown one is catalog.ErrNotFound.
func (db *DB) DeleteDestination(ctx context.Context, projectID, id string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM siem_destinations WHERE project_id = ? AND id = ?`, projectID, id)
	return db.oneRow(res, err, "delete destination "+id, catalog.ErrNotFound)
}

// SetDestinationState sets the state; resuming (active) clears the failures.
func (db *DB) SetDestinationState(ctx context.Context, projectID, id string, state catalog.DestState, at time.Time) (catalog.Destination, error) {
	if !state.Valid() {
		return catalog.Destination{}, fmt.Errorf("%w: destination state %q", catalog.ErrInvalid, state)
	}
	res, err := db.w.ExecContext(ctx, `UPDATE siem_destinations SET state = ?, updated_ms = ?,
		attempts = CASE WHEN ? = 'active' THEN 0 ELSE attempts END,
		last_error = CASE WHEN ? = 'active' THEN '' ELSE last_error END
		WHERE project_id = ? AND id = ?`, string(state), ms(db.stamp(at)), string(state), string(state), projectID, id)
	if err := db.oneRow(res, err, "set destination state "+id, catalog.ErrNotFound); err != nil {
		return catalog.Destination{}, err
	}
	return db.Destination(ctx, projectID, id)
}

// LeaseDestination takes or renews the delivery lease.
func (db *DB) LeaseDestination(ctx context.Context, id, owner string, now time.Time, ttl time.Duration) (catalog.Destination, error) {
	if owner == "" || ttl <= 0 {
		return catalog.Destination{}, fmt.Errorf("%w: a lease needs an owner and a positive ttl", catalog.ErrInvalid)
	}
	res, err := db.w.ExecContext(ctx, `UPDATE siem_destinations SET lease_owner = ?, lease_until_ms = ?
		WHERE id = ? AND (lease_owner = ? OR lease_owner = '' OR lease_until_ms <= ?)`,
		owner, ms(now.Add(ttl)), id, owner, ms(now))
	if err := db.oneRow(res, err, "lease destination "+id, catalog.ErrConflict); err != nil {
		return catalog.Destination{}, err
	}
	d, err := scanDest(db.w.QueryRowContext(ctx, destSelect+`WHERE id = ?`, id))
	if err != nil {
		return d, fmt.Errorf("sqlite: destination %s: %w", id, mapErr(err))
	}
	return d, nil
}

// AdvanceDestination moves the cursor under the lease (compare and set).
func (db *DB) AdvanceDestination(ctx context.Context, id, owner string, from, to uint64, now time.Time) error {
	if to <= from {
		return fmt.Errorf("%w: cursor must move forward (%d to %d)", catalog.ErrInvalid, from, to)
	}
	res, err := db.w.ExecContext(ctx, `UPDATE siem_destinations SET cursor = ?, attempts = 0, last_error = '',
		updated_ms = ? WHERE id = ? AND cursor = ? AND lease_owner = ? AND lease_until_ms > ?`,
		to, ms(now), id, from, owner, ms(now))
	return db.oneRow(res, err, "advance destination "+id, catalog.ErrConflict)
}

// FailDestination records a failed attempt under the lease.
func (db *DB) FailDestination(ctx context.Context, id, owner string, attempts int, lastErr string, dead bool, now time.Time) error {
	res, err := db.w.ExecContext(ctx, `UPDATE siem_destinations SET attempts = ?, last_error = ?, failed_ms = ?,
		updated_ms = ?, state = CASE WHEN ? THEN 'dead_letter' ELSE state END
		WHERE id = ? AND lease_owner = ? AND lease_until_ms > ?`,
		max(attempts, 0), catalog.TrimError(lastErr), ms(now), ms(now), dead, id, owner, ms(now))
	return db.oneRow(res, err, "fail destination "+id, catalog.ErrConflict)
}

// oneRow turns an UPDATE or DELETE result into nil when it changed a row, and into
// none (wrapped) when it changed nothing.
func (db *DB) oneRow(res interface{ RowsAffected() (int64, error) }, err error, what string, none error) error {
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s: %w", what, none)
	}
	return nil
}

// ReplaceDestinationConfig sets id's config to config if it is still old.
func (db *DB) ReplaceDestinationConfig(ctx context.Context, id string, old, config []byte) (bool, error) {
	res, err := db.w.ExecContext(ctx, `UPDATE siem_destinations SET config = ? WHERE id = ? AND config = ?`, config, id, old)
	if err != nil {
		return false, fmt.Errorf("sqlite: replace destination config %s: %w", id, mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: replace destination config %s: %w", id, err)
	}
	return n == 1, nil
}
