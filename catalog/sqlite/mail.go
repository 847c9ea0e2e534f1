package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

var _ catalog.MailStore = (*DB)(nil)

const mailColumns = `id, recipient, subject, body, created_ms, next_ms, attempts, lease_owner, lease_until_ms, sent_ms, failed_ms, last_error`

func scanMail(row interface{ Scan(...any) error }) (catalog.MailMessage, error) {
	var (
		m                                  catalog.MailMessage
		created, next, lease, sent, failed int64
	)
	err := row.Scan(&m.ID, &m.To, &m.Subject, &m.Body, &created, &next, &m.Attempts, &m.LeaseOwner, &lease, &sent, &failed, &m.LastError)
	m.CreatedAt, m.NotBefore, m.LeaseUntil = catalog.FromUnixMS(created), catalog.FromUnixMS(next), catalog.FromUnixMS(lease)
	m.SentAt, m.FailedAt = catalog.FromUnixMS(sent), catalog.FromUnixMS(failed)
	return m, err
}

// EnqueueMail stores msgs in one transaction.
func (db *DB) EnqueueMail(ctx context.Context, msgs []catalog.MailMessage) error {
	if err := db.writeTx(ctx, func(tx *sql.Tx) error { return db.insertMail(ctx, tx, msgs) }); err != nil {
		return fmt.Errorf("sqlite: enqueue mail: %w", err)
	}
	return nil
}

func (db *DB) insertMail(ctx context.Context, tx *sql.Tx, msgs []catalog.MailMessage) error {
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return err
		}
		created := db.stamp(m.CreatedAt)
		next := m.NotBefore
		if next.IsZero() {
			next = created
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO mail_queue(id, recipient, subject, body, created_ms, next_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			m.ID, m.To, m.Subject, m.Body, ms(created), ms(next)); err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// ClaimMail leases due messages to owner in one statement; SQLite's single writer
// serializes concurrent claims.
func (db *DB) ClaimMail(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]catalog.MailMessage, error) {
	if owner == "" || lease <= 0 {
		return nil, fmt.Errorf("%w: a claim needs an owner and a positive lease", catalog.ErrInvalid)
	}
	rows, err := db.w.QueryContext(ctx, `UPDATE mail_queue SET lease_owner = ?, lease_until_ms = ?, attempts = attempts + 1
		WHERE id IN (SELECT id FROM mail_queue WHERE sent_ms = 0 AND failed_ms = 0 AND next_ms <= ? AND lease_until_ms <= ?
			ORDER BY next_ms, id LIMIT ?)
		RETURNING `+mailColumns, owner, now.Add(lease).UnixMilli(), now.UnixMilli(), now.UnixMilli(), catalog.ClampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim mail: %w", err)
	}
	msgs, err := collect(rows, scanMail)
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim mail: %w", err)
	}
	return msgs, nil
}

// leasedUpdate runs an UPDATE of one message that owner holds; no row changed is
// catalog.ErrConflict.
func (db *DB) leasedUpdate(ctx context.Context, what, query string, args ...any) error {
	res, err := db.w.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	} else if n != 1 {
		return fmt.Errorf("%w: %s: the lease is no longer held", catalog.ErrConflict, what)
	}
	return nil
}

const mailHeld = ` WHERE id = ? AND lease_owner = ? AND sent_ms = 0 AND failed_ms = 0`

// MarkMailSent records the message as sent if owner still holds it.
func (db *DB) MarkMailSent(ctx context.Context, id, owner string, at time.Time) error {
	return db.leasedUpdate(ctx, "mark mail "+id+" sent", `UPDATE mail_queue SET sent_ms = ?, lease_until_ms = 0, last_error = ''`+mailHeld,
		db.stamp(at).UnixMilli(), id, owner)
}

// RetryMail makes the message due again at next.
func (db *DB) RetryMail(ctx context.Context, id, owner string, next time.Time, lastErr string) error {
	return db.leasedUpdate(ctx, "retry mail "+id, `UPDATE mail_queue SET next_ms = ?, lease_owner = '', lease_until_ms = 0, last_error = ?`+mailHeld,
		db.stamp(next).UnixMilli(), lastErr, id, owner)
}

// FailMail gives up on the message.
func (db *DB) FailMail(ctx context.Context, id, owner string, at time.Time, lastErr string) error {
	return db.leasedUpdate(ctx, "fail mail "+id, `UPDATE mail_queue SET failed_ms = ?, lease_until_ms = 0, last_error = ?`+mailHeld,
		db.stamp(at).UnixMilli(), lastErr, id, owner)
}

// Mail returns one message.
func (db *DB) Mail(ctx context.Context, id string) (catalog.MailMessage, error) {
	m, err := scanMail(db.r.QueryRowContext(ctx, `SELECT `+mailColumns+` FROM mail_queue WHERE id = ?`, id))
	if err != nil {
		return m, fmt.Errorf("sqlite: mail %s: %w", id, mapErr(err))
	}
	return m, nil
}

const digestSelect = `SELECT p.id, COALESCE(d.schedule, 'daily'), COALESCE(d.updated_ms, 0), COALESCE(d.last_period, ''),
	COALESCE(d.last_ms, 0), COALESCE(d.last_events, 0), COALESCE(d.last_audit, 0),
	(SELECT count(*) FROM digest_optins o JOIN members m ON m.project_id = o.project_id AND m.email = o.email
		WHERE o.project_id = p.id AND o.created_ms >= m.created_ms)
	FROM projects p LEFT JOIN digests d ON d.project_id = p.id `

func scanDigest(row interface{ Scan(...any) error }) (catalog.DigestState, error) {
	var (
		d             catalog.DigestState
		updated, last int64
	)
	err := row.Scan(&d.ProjectID, &d.Schedule, &updated, &d.LastPeriod, &last, &d.LastEvents, &d.LastAudit, &d.RecipientCount)
	d.UpdatedAt, d.LastAt = catalog.FromUnixMS(updated), catalog.FromUnixMS(last)
	return d, err
}

// DigestState returns the project's digest state.
func (db *DB) DigestState(ctx context.Context, projectID string) (catalog.DigestState, error) {
	d, err := scanDigest(db.r.QueryRowContext(ctx, digestSelect+`WHERE p.id = ?`, projectID))
	if err != nil {
		return d, fmt.Errorf("sqlite: digest state of %s: %w", projectID, mapErr(err))
	}
	return d, nil
}

// ListDigestStates pages through every project's digest state.
func (db *DB) ListDigestStates(ctx context.Context, afterID string, limit int) ([]catalog.DigestState, error) {
	rows, err := db.r.QueryContext(ctx, digestSelect+`WHERE p.id > ? ORDER BY p.id LIMIT ?`, afterID, catalog.ClampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list digest states: %w", err)
	}
	ds, err := collect(rows, scanDigest)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list digest states: %w", err)
	}
	return ds, nil
}

// SetDigestSchedule stores the project's schedule.
func (db *DB) SetDigestSchedule(ctx context.Context, projectID, schedule string, at time.Time) (catalog.DigestState, error) {
	if !catalog.ValidSchedule(schedule) {
		return catalog.DigestState{}, fmt.Errorf("%w: digest schedule %q", catalog.ErrInvalid, schedule)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO digests(project_id, schedule, updated_ms) VALUES (?, ?, ?)
		ON CONFLICT(project_id) DO UPDATE SET schedule = excluded.schedule, updated_ms = excluded.updated_ms`,
		projectID, schedule, db.stamp(at).UnixMilli()); err != nil {
		return catalog.DigestState{}, fmt.Errorf("sqlite: set digest schedule of %s: %w", projectID, mapErr(err))
	}
	return db.DigestState(ctx, projectID)
}

// SetDigestOptIn opts email in or out of the project's digests.
func (db *DB) SetDigestOptIn(ctx context.Context, projectID, email string, in bool, at time.Time) error {
	var err error
	if in {
		_, err = db.w.ExecContext(ctx, `INSERT INTO digest_optins(project_id, email, created_ms) VALUES (?, ?, ?)
			ON CONFLICT(project_id, email) DO UPDATE SET created_ms = excluded.created_ms`, projectID, email, db.stamp(at).UnixMilli())
	} else {
		_, err = db.w.ExecContext(ctx, `DELETE FROM digest_optins WHERE project_id = ? AND email = ?`, projectID, email)
	}
	if err != nil {
		return fmt.Errorf("sqlite: digest opt-in of %s in %s: %w", email, projectID, mapErr(err))
	}
	return nil
}

// DigestRecipients lists the opted-in members.
func (db *DB) DigestRecipients(ctx context.Context, projectID string) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT o.email FROM digest_optins o
		JOIN members m ON m.project_id = o.project_id AND m.email = o.email
		WHERE o.project_id = ? AND o.created_ms >= m.created_ms ORDER BY o.email`, projectID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: digest recipients of %s: %w", projectID, err)
	}
	out, err := collect(rows, func(r interface{ Scan(...any) error }) (s string, err error) { return s, r.Scan(&s) })
	if err != nil {
		return nil, fmt.Errorf("sqlite: digest recipients of %s: %w", projectID, err)
	}
	return out, nil
}

// CommitDigest records the digest and queues its messages if no one else did.
func (db *DB) CommitDigest(ctx context.Context, prevPeriod string, next catalog.DigestState, msgs []catalog.MailMessage) error {
	if next.LastPeriod == "" || next.LastPeriod == prevPeriod {
		return fmt.Errorf("%w: a digest needs a new period", catalog.ErrInvalid)
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO digests(project_id, schedule, updated_ms) VALUES (?, 'daily', ?)
			ON CONFLICT(project_id) DO NOTHING`, next.ProjectID, db.stamp(time.Time{}).UnixMilli()); err != nil {
			return mapErr(err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE digests SET last_period = ?, last_ms = ?, last_events = ?, last_audit = ?
			WHERE project_id = ? AND last_period = ?`,
			next.LastPeriod, db.stamp(next.LastAt).UnixMilli(), next.LastEvents, next.LastAudit, next.ProjectID, prevPeriod)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("%w: the digest after %q of %s was already sent", catalog.ErrConflict, prevPeriod, next.ProjectID)
		}
		return db.insertMail(ctx, tx, msgs)
	})
	if err != nil {
		return fmt.Errorf("sqlite: commit digest of %s: %w", next.ProjectID, err)
	}
	return nil
}
