package postgres

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
	if _, err := db.pool.Exec(ctx, `DELETE FROM dashboard_links WHERE expires_at < $1`, l.CreatedAt); err != nil {
		return fmt.Errorf("postgres: drop expired sign-in links: %w", err)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO dashboard_links(hash, email, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		l.Hash, l.Email, l.CreatedAt, catalog.MS(l.ExpiresAt)); err != nil {
		return fmt.Errorf("postgres: create sign-in link: %w", mapErr(err))
	}
	return nil
}

// ConsumeSignInLink marks the link of hash used at now and returns it, in one
// statement, so that of two concurrent uses (on any replica) exactly one succeeds. An
// unknown, used or expired link is catalog.ErrNotFound.
func (db *DB) ConsumeSignInLink(ctx context.Context, hash []byte, now time.Time) (catalog.SignInLink, error) {
	now = catalog.MS(now)
	var l catalog.SignInLink
	err := db.pool.QueryRow(ctx, `UPDATE dashboard_links SET used_at = $1
		WHERE hash = $2 AND used_at IS NULL AND expires_at > $1
		RETURNING hash, email, created_at, expires_at, used_at`, now, hash).
		Scan(&l.Hash, &l.Email, &l.CreatedAt, &l.ExpiresAt, &l.UsedAt)
	if err != nil {
		return l, fmt.Errorf("postgres: consume sign-in link: %w", mapErr(err))
	}
	l.CreatedAt, l.ExpiresAt, l.UsedAt = l.CreatedAt.UTC(), l.ExpiresAt.UTC(), l.UsedAt.UTC()
	return l, nil
}

// CreateSession stores a dashboard session, and drops sessions expired before its
// creation.
func (db *DB) CreateSession(ctx context.Context, s catalog.Session) error {
	if err := s.Validate(); err != nil {
		return err
	}
	s.CreatedAt = db.stamp(s.CreatedAt)
	if _, err := db.pool.Exec(ctx, `DELETE FROM dashboard_sessions WHERE expires_at < $1`, s.CreatedAt); err != nil {
		return fmt.Errorf("postgres: drop expired sessions: %w", err)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO dashboard_sessions(hash, kind, email, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		s.Hash, s.Kind, s.Email, s.CreatedAt, catalog.MS(s.ExpiresAt)); err != nil {
		return fmt.Errorf("postgres: create session: %w", mapErr(err))
	}
	return nil
}

// Session returns the session of hash if it has not expired at now, or
// catalog.ErrNotFound.
func (db *DB) Session(ctx context.Context, hash []byte, now time.Time) (catalog.Session, error) {
	var s catalog.Session
	err := db.pool.QueryRow(ctx, `SELECT hash, kind, email, created_at, expires_at FROM dashboard_sessions
		WHERE hash = $1 AND expires_at > $2`, hash, catalog.MS(now)).Scan(&s.Hash, &s.Kind, &s.Email, &s.CreatedAt, &s.ExpiresAt)
	if err != nil {
		return s, fmt.Errorf("postgres: session: %w", mapErr(err))
	}
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return s, nil
}

// DeleteSession deletes the session of hash; deleting a missing one is not an error.
func (db *DB) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM dashboard_sessions WHERE hash = $1`, hash); err != nil {
		return fmt.Errorf("postgres: delete session: %w", err)
	}
	return nil
}

// MemberProjects returns email's memberships in every project (emails match
// case-insensitively, as the control plane's do), in project order.
func (db *DB) MemberProjects(ctx context.Context, email string) ([]catalog.Member, error) {
	rows, err := db.pool.Query(ctx, `SELECT project_id, email, role, created_at FROM members
		WHERE lower(email) = lower($1) ORDER BY project_id`, email)
	ms, err := collect(rows, err, scanMember)
	if err != nil {
		return nil, fmt.Errorf("postgres: member projects: %w", err)
	}
	return ms, nil
}
