package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

var _ catalog.MailStore = (*DB)(nil)

const mailColumns = `id, recipient, subject, body, created_at, next_at, attempts, lease_owner, lease_until, sent_at, failed_at, last_error`

func scanMail(row scanner) (catalog.MailMessage, error) {
	var (
		m                   catalog.MailMessage
		lease, sent, failed *time.Time
	)
	err := row.Scan(&m.ID, &m.To, &m.Subject, &m.Body, &m.CreatedAt, &m.NotBefore, &m.Attempts, &m.LeaseOwner, &lease, &sent, &failed, &m.LastError)
	m.CreatedAt, m.NotBefore = m.CreatedAt.UTC(), m.NotBefore.UTC()
	m.LeaseUntil, m.SentAt, m.FailedAt = fromTZ(lease), fromTZ(sent), fromTZ(failed)
	return m, err
}

// EnqueueMail stores msgs in one transaction.
func (db *DB) EnqueueMail(ctx context.Context, msgs []catalog.MailMessage) error {
	if err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return db.insertMail(ctx, tx, msgs) }); err != nil {
		return fmt.Errorf("postgres: enqueue mail: %w", err)
	}
	return nil
}

func (db *DB) insertMail(ctx context.Context, tx pgx.Tx, msgs []catalog.MailMessage) error {
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return err
		}
		created := db.stamp(m.CreatedAt)
		next := catalog.MS(m.NotBefore)
		if next.IsZero() {
			next = created
		}
		if _, err := tx.Exec(ctx, `INSERT INTO mail_queue(id, recipient, subject, body, created_at, next_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			m.ID, m.To, m.Subject, m.Body, created, next); err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// ClaimMail leases due messages to owner. FOR UPDATE SKIP LOCKED lets concurrent
// replicas claim disjoint messages without waiting for each other.
func (db *DB) ClaimMail(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]catalog.MailMessage, error) {
	if owner == "" || lease <= 0 {
		return nil, fmt.Errorf("%w: a claim needs an owner and a positive lease", catalog.ErrInvalid)
	}
	now = catalog.MS(now)
	rows, err := db.pool.Query(ctx, `UPDATE mail_queue SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
		WHERE id IN (SELECT id FROM mail_queue WHERE sent_at IS NULL AND failed_at IS NULL AND next_at <= $3
			AND (lease_until IS NULL OR lease_until <= $3) ORDER BY next_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING `+mailColumns, owner, now.Add(lease), now, catalog.ClampLimit(limit))
	msgs, err := collect(rows, err, scanMail)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim mail: %w", err)
	}
	return msgs, nil
}

// leasedUpdate runs an UPDATE of one message that owner holds; no row changed is
// catalog.ErrConflict.
func (db *DB) leasedUpdate(ctx context.Context, what, query string, args ...any) error {
	tag, err := db.pool.Exec(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: %s: the lease is no longer held", catalog.ErrConflict, what)
	}
	return nil
}

const mailHeld = ` WHERE id = $3 AND lease_owner = $4 AND sent_at IS NULL AND failed_at IS NULL`

// MarkMailSent records the message as sent if owner still holds it.
func (db *DB) MarkMailSent(ctx context.Context, id, owner string, at time.Time) error {
	return db.leasedUpdate(ctx, "mark mail "+id+" sent", `UPDATE mail_queue SET sent_at = $1, lease_until = NULL, last_error = $2`+mailHeld,
		db.stamp(at), "", id, owner)
}

// RetryMail makes the message due again at next.
func (db *DB) RetryMail(ctx context.Context, id, owner string, next time.Time, lastErr string) error {
	return db.leasedUpdate(ctx, "retry mail "+id, `UPDATE mail_queue SET next_at = $1, lease_owner = '', lease_until = NULL, last_error = $2`+mailHeld,
		db.stamp(next), lastErr, id, owner)
}

// FailMail gives up on the message.
func (db *DB) FailMail(ctx context.Context, id, owner string, at time.Time, lastErr string) error {
	return db.leasedUpdate(ctx, "fail mail "+id, `UPDATE mail_queue SET failed_at = $1, lease_until = NULL, last_error = $2`+mailHeld,
		db.stamp(at), lastErr, id, owner)
}

// Mail returns one message.
func (db *DB) Mail(ctx context.Context, id string) (catalog.MailMessage, error) {
	m, err := scanMail(db.pool.QueryRow(ctx, `SELECT `+mailColumns+` FROM mail_queue WHERE id = $1`, id))
	if err != nil {
		return m, fmt.Errorf("postgres: mail %s: %w", id, mapErr(err))
	}
	return m, nil
}

const digestSelect = `SELECT p.id, COALESCE(d.schedule, 'daily'), d.updated_at, COALESCE(d.last_period, ''),
	d.last_at, COALESCE(d.last_events, 0), COALESCE(d.last_audit, 0),
	(SELECT count(*) FROM digest_optins o JOIN members m ON m.project_id = o.project_id AND m.email = o.email
		WHERE o.project_id = p.id AND o.created_at >= m.created_at)
	FROM projects p LEFT JOIN digests d ON d.project_id = p.id `

func scanDigest(row scanner) (catalog.DigestState, error) {
	var (
		d                   catalog.DigestState
		updated, last       *time.Time
		lastEvents, lastAud int64
		recipients          int64
	)
	err := row.Scan(&d.ProjectID, &d.Schedule, &updated, &d.LastPeriod, &last, &lastEvents, &lastAud, &recipients)
	d.UpdatedAt, d.LastAt = fromTZ(updated), fromTZ(last)
	d.LastEvents, d.LastAudit, d.RecipientCount = uint64(lastEvents), uint64(lastAud), int(recipients)
	return d, err
}

// DigestState returns the project's digest state.
func (db *DB) DigestState(ctx context.Context, projectID string) (catalog.DigestState, error) {
	d, err := scanDigest(db.pool.QueryRow(ctx, digestSelect+`WHERE p.id = $1`, projectID))
	if err != nil {
		return d, fmt.Errorf("postgres: digest state of %s: %w", projectID, mapErr(err))
	}
	return d, nil
}

// ListDigestStates pages through every project's digest state.
func (db *DB) ListDigestStates(ctx context.Context, afterID string, limit int) ([]catalog.DigestState, error) {
	rows, err := db.pool.Query(ctx, digestSelect+`WHERE p.id > $1 ORDER BY p.id LIMIT $2`, afterID, catalog.ClampLimit(limit))
	ds, err := collect(rows, err, scanDigest)
	if err != nil {
		return nil, fmt.Errorf("postgres: list digest states: %w", err)
	}
	return ds, nil
}

// SetDigestSchedule stores the project's schedule.
func (db *DB) SetDigestSchedule(ctx context.Context, projectID, schedule string, at time.Time) (catalog.DigestState, error) {
	if !catalog.ValidSchedule(schedule) {
		return catalog.DigestState{}, fmt.Errorf("%w: digest schedule %q", catalog.ErrInvalid, schedule)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO digests(project_id, schedule, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (project_id) DO UPDATE SET schedule = excluded.schedule, updated_at = excluded.updated_at`,
		projectID, schedule, db.stamp(at)); err != nil {
		return catalog.DigestState{}, fmt.Errorf("postgres: set digest schedule of %s: %w", projectID, mapErr(err))
	}
	return db.DigestState(ctx, projectID)
}

// SetDigestOptIn opts email in or out of the project's digests.
func (db *DB) SetDigestOptIn(ctx context.Context, projectID, email string, in bool, at time.Time) error {
	var err error
	if in {
		_, err = db.pool.Exec(ctx, `INSERT INTO digest_optins(project_id, email, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (project_id, email) DO UPDATE SET created_at = excluded.created_at`, projectID, email, db.stamp(at))
	} else {
		_, err = db.pool.Exec(ctx, `DELETE FROM digest_optins WHERE project_id = $1 AND email = $2`, projectID, email)
	}
	if err != nil {
		return fmt.Errorf("postgres: digest opt-in of %s in %s: %w", email, projectID, mapErr(err))
	}
	return nil
}

// DigestRecipients lists the opted-in members.
func (db *DB) DigestRecipients(ctx context.Context, projectID string) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT o.email FROM digest_optins o
		JOIN members m ON m.project_id = o.project_id AND m.email = o.email
		WHERE o.project_id = $1 AND o.created_at >= m.created_at ORDER BY o.email`, projectID)
	out, err := collect(rows, err, func(r scanner) (s string, err error) { return s, r.Scan(&s) })
	if err != nil {
		return nil, fmt.Errorf("postgres: digest recipients of %s: %w", projectID, err)
	}
	return out, nil
}

// CommitDigest records the digest and queues its messages if no one else did. The
// conditional UPDATE takes the row lock: a concurrent replica's UPDATE waits for this
// transaction, then finds last_period changed and updates nothing.
func (db *DB) CommitDigest(ctx context.Context, prevPeriod string, next catalog.DigestState, msgs []catalog.MailMessage) error {
	if next.LastPeriod == "" || next.LastPeriod == prevPeriod {
		return fmt.Errorf("%w: a digest needs a new period", catalog.ErrInvalid)
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO digests(project_id, schedule, updated_at) VALUES ($1, 'daily', $2)
			ON CONFLICT (project_id) DO NOTHING`, next.ProjectID, db.stamp(time.Time{})); err != nil {
			return mapErr(err)
		}
		tag, err := tx.Exec(ctx, `UPDATE digests SET last_period = $1, last_at = $2, last_events = $3, last_audit = $4
			WHERE project_id = $5 AND last_period = $6`,
			next.LastPeriod, db.stamp(next.LastAt), int64(next.LastEvents), int64(next.LastAudit), next.ProjectID, prevPeriod)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("%w: the digest after %q of %s was already sent", catalog.ErrConflict, prevPeriod, next.ProjectID)
		}
		return db.insertMail(ctx, tx, msgs)
	})
	if err != nil {
		return fmt.Errorf("postgres: commit digest of %s: %w", next.ProjectID, err)
	}
	return nil
}
