package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// CreateSignInLink stores a dashboard sign-in link, and drops links expired before
// its creation.
func (db *DB) CreateSignInLink(ctx context.Context, l catalog.SignInLink) error {
	if err := l.Validate(); err != nil {
		return err
	}
	l.CreatedAt = db.stamp(l.CreatedAt)
	if _, err := db.w.ExecContext(ctx, `DELETE FROM dashboard_links WHERE expires_ms < ?`, ms(l.CreatedAt)); err != nil {
		return fmt.Errorf("sqlite: drop expired sign-in links: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO dashboard_links(hash, email, created_ms, expires_ms) VALUES (?, ?, ?, ?)`,
		l.Hash, l.Email, ms(l.CreatedAt), ms(l.ExpiresAt)); err != nil {
		return fmt.Errorf("sqlite: create sign-in link: %w", mapErr(err))
	}
	return nil
}

// ConsumeSignInLink marks the link of hash used at now and returns it, in one
// statement, so that of two concurrent uses exactly one succeeds. An unknown, used or
// expired link is catalog.ErrNotFound.
func (db *DB) ConsumeSignInLink(ctx context.Context, hash []byte, now time.Time) (catalog.SignInLink, error) {
	now = catalog.MS(now)
	var (
		l                      catalog.SignInLink
		created, expires, used int64
	)
	err := db.w.QueryRowContext(ctx, `UPDATE dashboard_links SET used_ms = ?
		WHERE hash = ? AND used_ms = 0 AND expires_ms > ?
		RETURNING hash, email, created_ms, expires_ms, used_ms`, ms(now), hash, ms(now)).
		Scan(&l.Hash, &l.Email, &created, &expires, &used)
	if err != nil {
		return l, fmt.Errorf("sqlite: consume sign-in link: %w", mapErr(err))
	}
	l.CreatedAt, l.ExpiresAt, l.UsedAt = catalog.FromUnixMS(created), catalog.FromUnixMS(expires), catalog.FromUnixMS(used)
	return l, nil
}

// CreateSession stores a dashboard session, and drops sessions expired before its
// creation.
func (db *DB) CreateSession(ctx context.Context, s catalog.Session) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.CreatedAt = db.stamp(s.CreatedAt)
	if _, err := db.w.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE expires_ms < ?`, ms(s.CreatedAt)); err != nil {
		return fmt.Errorf("sqlite: drop expired sessions: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO dashboard_sessions(hash, kind, email, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?)`,
		s.Hash, s.Kind, s.Email, ms(s.CreatedAt), ms(s.ExpiresAt)); err != nil {
		return fmt.Errorf("sqlite: create session: %w", mapErr(err))
	}
	return nil
}

// Session returns the session of hash if it has not expired at now, or
// catalog.ErrNotFound.
func (db *DB) Session(ctx context.Context, hash []byte, now time.Time) (catalog.Session, error) {
	var (
		s                catalog.Session
		created, expires int64
	)
	err := db.r.QueryRowContext(ctx, `SELECT hash, kind, email, created_ms, expires_ms FROM dashboard_sessions
		WHERE hash = ? AND expires_ms > ?`, hash, ms(catalog.MS(now))).Scan(&s.Hash, &s.Kind, &s.Email, &created, &expires)
	if err != nil {
		return s, fmt.Errorf("sqlite: session: %w", mapErr(err))
	}
	s.CreatedAt, s.ExpiresAt = catalog.FromUnixMS(created), catalog.FromUnixMS(expires)
	return s, nil
}

// DeleteSession deletes the session of hash; deleting a missing one is not an error.
func (db *DB) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE hash = ?`, hash); err != nil {
		return fmt.Errorf("sqlite: delete session: %w", err)
	}
	return nil
}

// MemberProjects returns email's memberships in every project (emails match
// case-insensitively, as the control plane's do), in project order.
func (db *DB) MemberProjects(ctx context.Context, email string) ([]catalog.Member, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT project_id, email, role, created_ms FROM members
		WHERE email = ? COLLATE NOCASE ORDER BY project_id`, email)
	if err != nil {
		return nil, fmt.Errorf("sqlite: member projects: %w", err)
	}
	return collect(rows, scanMember)
}
