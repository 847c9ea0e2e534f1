package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// stamp returns t at millisecond precision, or now when t is zero.
func (db *DB) stamp(t time.Time) time.Time {
	if t.IsZero() {
		t = db.now()
	}
	return catalog.MS(t)
}

// CreateProject stores p (CreatedAt defaults to now); an existing id is catalog.ErrExists.
func (db *DB) CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error) {
	if err := p.Validate(); err != nil {
		return p, err
	}
	p.CreatedAt = db.stamp(p.CreatedAt)
	p.RequireSigned = false
	if _, err := db.w.ExecContext(ctx, `INSERT INTO projects(id, name, created_ms, ingest_rate_limit) VALUES (?, ?, ?, ?)`,
		p.ID, p.Name, ms(p.CreatedAt), p.IngestRateLimit); err != nil {
		return p, fmt.Errorf("sqlite: create project %s: %w", p.ID, mapErr(err))
	}
	return p, nil
}

const projectSelect = `SELECT id, name, created_ms, ingest_rate_limit,
	EXISTS (SELECT 1 FROM signing_keys s WHERE s.project_id = projects.id AND s.revoked_ms = 0) FROM projects `

func scanProject(row interface{ Scan(...any) error }) (catalog.Project, error) {
	var (
		p       catalog.Project
		created int64
	)
	err := row.Scan(&p.ID, &p.Name, &created, &p.IngestRateLimit, &p.RequireSigned)
	p.CreatedAt = catalog.FromUnixMS(created)
	return p, err
}

// Project returns project id, or catalog.ErrNotFound.
func (db *DB) Project(ctx context.Context, id string) (catalog.Project, error) {
	p, err := scanProject(db.queryRow(ctx, projectSelect+`WHERE id = ?`, id))
	if err != nil {
		return p, fmt.Errorf("sqlite: project %s: %w", id, mapErr(err))
	}
	return p, nil
}

// SetIngestRateLimit sets the project's ingest rate limit override (0 clears it); an
// unknown project is catalog.ErrNotFound.
func (db *DB) SetIngestRateLimit(ctx context.Context, projectID string, limit int) (catalog.Project, error) {
	if err := (&catalog.Project{ID: projectID, IngestRateLimit: limit}).Validate(); err != nil {
		return catalog.Project{}, err
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE projects SET ingest_rate_limit = ? WHERE id = ?`, limit, projectID); err != nil {
		return catalog.Project{}, fmt.Errorf("sqlite: set ingest rate limit of %s: %w", projectID, mapErr(err))
	}
	return db.Project(ctx, projectID)
}

// ListProjects returns up to limit projects with ids after afterID, in id order.
func (db *DB) ListProjects(ctx context.Context, afterID string, limit int) ([]catalog.Project, error) {
	rows, err := db.r.QueryContext(ctx, projectSelect+`WHERE id > ? ORDER BY id LIMIT ?`, afterID, catalog.ClampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list projects: %w", err)
	}
	return collect(rows, scanProject)
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: scan: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: rows: %w", err)
	}
	return out, nil
}

// CreateAPIKey stores k; a duplicate id or hash is catalog.ErrExists, an unknown project
// catalog.ErrNotFound.
func (db *DB) CreateAPIKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error) {
	if err := k.Validate(); err != nil {
		return k, err
	}
	k.CreatedAt = db.stamp(k.CreatedAt)
	k.ExpiresAt, k.RevokedAt = catalog.MS(k.ExpiresAt), time.Time{}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO api_keys(id, project_id, name, key_hash, prefix, scopes, created_ms, expires_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, k.ID, k.ProjectID, k.Name, k.Hash, k.Prefix, strings.Join(k.Scopes, " "),
		ms(k.CreatedAt), ms(k.ExpiresAt)); err != nil {
		return k, fmt.Errorf("sqlite: create API key %s: %w", k.ID, mapErr(err))
	}
	return k, nil
}

const apiKeySelect = `SELECT id, project_id, name, key_hash, prefix, scopes, created_ms, expires_ms, revoked_ms FROM api_keys `

func scanAPIKey(row interface{ Scan(...any) error }) (catalog.APIKey, error) {
	var (
		k             catalog.APIKey
		scopes        string
		cms, ems, rms int64
	)
	err := row.Scan(&k.ID, &k.ProjectID, &k.Name, &k.Hash, &k.Prefix, &scopes, &cms, &ems, &rms)
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt, k.ExpiresAt, k.RevokedAt = catalog.FromUnixMS(cms), catalog.FromUnixMS(ems), catalog.FromUnixMS(rms)
	return k, err
}

// APIKeyByHash returns the key whose secret hashes to hash, whatever its state (the
// caller checks State), or catalog.ErrNotFound.
func (db *DB) APIKeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error) {
	k, err := scanAPIKey(db.queryRow(ctx, apiKeySelect+`WHERE key_hash = ?`, hash))
	if err != nil {
		return k, fmt.Errorf("sqlite: API key by hash: %w", mapErr(err))
	}
	return k, nil
}

// ListAPIKeys returns the project's keys in id order.
func (db *DB) ListAPIKeys(ctx context.Context, projectID string) ([]catalog.APIKey, error) {
	rows, err := db.r.QueryContext(ctx, apiKeySelect+`WHERE project_id = ? ORDER BY id`, projectID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list API keys: %w", err)
	}
	return collect(rows, scanAPIKey)
}

// RevokeAPIKey marks the key revoked at at (now if zero); revoking twice keeps the first
// time. An unknown key, or a key of another project, is catalog.ErrNotFound.
func (db *DB) RevokeAPIKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.APIKey, error) {
	if _, err := db.w.ExecContext(ctx, `UPDATE api_keys SET revoked_ms = ? WHERE project_id = ? AND id = ? AND revoked_ms = 0`,
		ms(db.stamp(at)), projectID, keyID); err != nil {
		return catalog.APIKey{}, fmt.Errorf("sqlite: revoke API key %s: %w", keyID, err)
	}
	k, err := scanAPIKey(db.w.QueryRowContext(ctx, apiKeySelect+`WHERE project_id = ? AND id = ?`, projectID, keyID))
	if err != nil {
		return k, fmt.Errorf("sqlite: revoke API key %s: %w", keyID, mapErr(err))
	}
	return k, nil
}

// AddMember stores m; an existing (project, email) is catalog.ErrExists.
func (db *DB) AddMember(ctx context.Context, m catalog.Member) (catalog.Member, error) {
	if m.ProjectID == "" || m.Email == "" || m.Role == "" {
		return m, fmt.Errorf("%w: member needs a project, an email and a role", catalog.ErrInvalid)
	}
	m.CreatedAt = db.stamp(m.CreatedAt)
	if _, err := db.w.ExecContext(ctx, `INSERT INTO members(project_id, email, role, created_ms) VALUES (?, ?, ?, ?)`,
		m.ProjectID, m.Email, m.Role, ms(m.CreatedAt)); err != nil {
		return m, fmt.Errorf("sqlite: add member: %w", mapErr(err))
	}
	return m, nil
}

// ListMembers returns the project's members in email order.
func (db *DB) ListMembers(ctx context.Context, projectID string) ([]catalog.Member, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT project_id, email, role, created_ms FROM members WHERE project_id = ? ORDER BY email`, projectID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list members: %w", err)
	}
	return collect(rows, scanMember)
}

// scanMember scans project_id, email, role, created_ms.
func scanMember(row interface{ Scan(...any) error }) (catalog.Member, error) {
	var (
		m       catalog.Member
		created int64
	)
	err := row.Scan(&m.ProjectID, &m.Email, &m.Role, &created)
	m.CreatedAt = catalog.FromUnixMS(created)
	return m, err
}

// RemoveMember deletes the membership, or returns catalog.ErrNotFound.
func (db *DB) RemoveMember(ctx context.Context, projectID, email string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM members WHERE project_id = ? AND email = ?`, projectID, email)
	if err != nil {
		return fmt.Errorf("sqlite: remove member: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("sqlite: remove member %s: %w", email, catalog.ErrNotFound)
	}
	return nil
}

// CreateSigningKey registers k; from then on the project requires signed events.
func (db *DB) CreateSigningKey(ctx context.Context, k catalog.SigningKey) (catalog.SigningKey, error) {
	if err := k.Validate(); err != nil {
		return k, err
	}
	k.CreatedAt, k.RevokedAt = db.stamp(k.CreatedAt), time.Time{}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO signing_keys(project_id, id, public_key, created_ms) VALUES (?, ?, ?, ?)`,
		k.ProjectID, k.ID, k.PublicKey, ms(k.CreatedAt)); err != nil {
		return k, fmt.Errorf("sqlite: create signing key %s: %w", k.ID, mapErr(err))
	}
	return k, nil
}

const signingKeySelect = `SELECT project_id, id, public_key, created_ms, revoked_ms FROM signing_keys `

func scanSigningKey(row interface{ Scan(...any) error }) (catalog.SigningKey, error) {
	var (
		k        catalog.SigningKey
		cms, rms int64
	)
	err := row.Scan(&k.ProjectID, &k.ID, &k.PublicKey, &cms, &rms)
	k.CreatedAt, k.RevokedAt = catalog.FromUnixMS(cms), catalog.FromUnixMS(rms)
	return k, err
}

// SigningKey returns the project's key keyID, whatever its state, or catalog.ErrNotFound.
func (db *DB) SigningKey(ctx context.Context, projectID, keyID string) (catalog.SigningKey, error) {
	k, err := scanSigningKey(db.r.QueryRowContext(ctx, signingKeySelect+`WHERE project_id = ? AND id = ?`, projectID, keyID))
	if err != nil {
		return k, fmt.Errorf("sqlite: signing key %s: %w", keyID, mapErr(err))
	}
	return k, nil
}

// ListSigningKeys returns the project's signing keys in id order.
func (db *DB) ListSigningKeys(ctx context.Context, projectID string) ([]catalog.SigningKey, error) {
	rows, err := db.query(ctx, signingKeySelect+`WHERE project_id = ? ORDER BY id`, projectID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list signing keys: %w", err)
	}
	return collect(rows, scanSigningKey)
}

// RevokeSigningKey marks the key revoked at at (now if zero); revoking twice keeps the
// first time.
func (db *DB) RevokeSigningKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.SigningKey, error) {
	if _, err := db.w.ExecContext(ctx, `UPDATE signing_keys SET revoked_ms = ? WHERE project_id = ? AND id = ? AND revoked_ms = 0`,
		ms(db.stamp(at)), projectID, keyID); err != nil {
		return catalog.SigningKey{}, fmt.Errorf("sqlite: revoke signing key %s: %w", keyID, err)
	}
	k, err := scanSigningKey(db.w.QueryRowContext(ctx, signingKeySelect+`WHERE project_id = ? AND id = ?`, projectID, keyID))
	if err != nil {
		return k, fmt.Errorf("sqlite: revoke signing key %s: %w", keyID, mapErr(err))
	}
	return k, nil
}

// SetRetention creates or replaces the retention policy of r.Log.
func (db *DB) SetRetention(ctx context.Context, r catalog.Retention) (catalog.Retention, error) {
	if err := r.Validate(); err != nil {
		return r, err
	}
	r.UpdatedAt = db.stamp(r.UpdatedAt)
	if _, err := db.w.ExecContext(ctx, `INSERT INTO retention_policies(project_id, stream, days, updated_ms) VALUES (?, ?, ?, ?)
		ON CONFLICT (project_id, stream) DO UPDATE SET days = excluded.days, updated_ms = excluded.updated_ms`,
		r.Log.ProjectID, string(r.Log.Stream), r.Days, ms(r.UpdatedAt)); err != nil {
		return r, fmt.Errorf("sqlite: set retention %s: %w", r.Log, mapErr(err))
	}
	return r, nil
}

func scanRetention(row interface{ Scan(...any) error }) (catalog.Retention, error) {
	var (
		r       catalog.Retention
		stream  string
		updated int64
	)
	err := row.Scan(&r.Log.ProjectID, &stream, &r.Days, &updated)
	r.Log.Stream, r.UpdatedAt = catalog.Stream(stream), catalog.FromUnixMS(updated)
	return r, err
}

// Retention returns the policy of log, or catalog.ErrNotFound (keep forever).
func (db *DB) Retention(ctx context.Context, log catalog.LogID) (catalog.Retention, error) {
	r, err := scanRetention(db.r.QueryRowContext(ctx, `SELECT project_id, stream, days, updated_ms FROM retention_policies
		WHERE project_id = ? AND stream = ?`, log.ProjectID, string(log.Stream)))
	if err != nil {
		return r, fmt.Errorf("sqlite: retention %s: %w", log, mapErr(err))
	}
	return r, nil
}

// ListRetention returns the project's policies in stream order.
func (db *DB) ListRetention(ctx context.Context, projectID string) ([]catalog.Retention, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT project_id, stream, days, updated_ms FROM retention_policies
		WHERE project_id = ? ORDER BY stream`, projectID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list retention: %w", err)
	}
	return collect(rows, scanRetention)
}
