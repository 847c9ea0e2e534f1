package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// CreateProject stores p (CreatedAt defaults to now); an existing id is catalog.ErrExists.
func (db *DB) CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error) {
	if err := p.Validate(); err != nil {
		return p, err
	}
	p.CreatedAt = db.stamp(p.CreatedAt)
	p.RequireSigned = false
	if _, err := db.pool.Exec(ctx, `INSERT INTO projects(id, name, created_at, ingest_rate_limit) VALUES ($1, $2, $3, $4)`,
		p.ID, p.Name, p.CreatedAt, p.IngestRateLimit); err != nil {
		return p, fmt.Errorf("postgres: create project %s: %w", p.ID, mapErr(err))
	}
	return p, nil
}

const projectSelect = `SELECT id, name, created_at, ingest_rate_limit,
	EXISTS (SELECT 1 FROM signing_keys s WHERE s.project_id = projects.id AND s.revoked_at IS NULL) FROM projects `

func scanProject(row scanner) (catalog.Project, error) {
	var p catalog.Project
	err := row.Scan(&p.ID, &p.Name, &p.CreatedAt, &p.IngestRateLimit, &p.RequireSigned)
	p.CreatedAt = p.CreatedAt.UTC()
	return p, err
}

// Project returns project id, or catalog.ErrNotFound.
func (db *DB) Project(ctx context.Context, id string) (catalog.Project, error) {
	p, err := scanProject(db.pool.QueryRow(ctx, projectSelect+`WHERE id = $1`, id))
	if err != nil {
		return p, fmt.Errorf("postgres: project %s: %w", id, mapErr(err))
	}
	return p, nil
}

// SetIngestRateLimit sets the project's ingest rate limit override (0 clears it); an
// unknown project is catalog.ErrNotFound.
func (db *DB) SetIngestRateLimit(ctx context.Context, projectID string, limit int) (catalog.Project, error) {
	if err := (&catalog.Project{ID: projectID, IngestRateLimit: limit}).Validate(); err != nil {
		return catalog.Project{}, err
	}
	if _, err := db.pool.Exec(ctx, `UPDATE projects SET ingest_rate_limit = $2 WHERE id = $1`, projectID, limit); err != nil {
		return catalog.Project{}, fmt.Errorf("postgres: set ingest rate limit of %s: %w", projectID, mapErr(err))
	}
	return db.Project(ctx, projectID)
}

// ListProjects returns up to limit projects with ids after afterID, in id order.
func (db *DB) ListProjects(ctx context.Context, afterID string, limit int) ([]catalog.Project, error) {
	rows, err := db.pool.Query(ctx, projectSelect+`WHERE id > $1 ORDER BY id LIMIT $2`, afterID, catalog.ClampLimit(limit))
	ps, err := collect(rows, err, scanProject)
	if err != nil {
		return nil, fmt.Errorf("postgres: list projects: %w", err)
	}
	return ps, nil
}

// CreateAPIKey stores k; a duplicate id or hash is catalog.ErrExists, an unknown project
// catalog.ErrNotFound.
func (db *DB) CreateAPIKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error) {
	if err := k.Validate(); err != nil {
		return k, err
	}
	k.CreatedAt = db.stamp(k.CreatedAt)
	k.ExpiresAt, k.RevokedAt = catalog.MS(k.ExpiresAt), time.Time{}
	if _, err := db.pool.Exec(ctx, `INSERT INTO api_keys(id, project_id, name, key_hash, prefix, scopes, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, k.ID, k.ProjectID, k.Name, k.Hash, k.Prefix, k.Scopes,
		k.CreatedAt, tz(k.ExpiresAt)); err != nil {
		return k, fmt.Errorf("postgres: create API key %s: %w", k.ID, mapErr(err))
	}
	return k, nil
}

const apiKeySelect = `SELECT id, project_id, name, key_hash, prefix, scopes, created_at, expires_at, revoked_at FROM api_keys `

func scanAPIKey(row scanner) (catalog.APIKey, error) {
	var (
		k        catalog.APIKey
		exp, rev *time.Time
	)
	err := row.Scan(&k.ID, &k.ProjectID, &k.Name, &k.Hash, &k.Prefix, &k.Scopes, &k.CreatedAt, &exp, &rev)
	k.CreatedAt, k.ExpiresAt, k.RevokedAt = k.CreatedAt.UTC(), fromTZ(exp), fromTZ(rev)
	return k, err
}

// APIKeyByHash returns the key whose secret hashes to hash, whatever its state (the
// caller checks State), or catalog.ErrNotFound.
func (db *DB) APIKeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error) {
	k, err := scanAPIKey(db.pool.QueryRow(ctx, apiKeySelect+`WHERE key_hash = $1`, hash))
	if err != nil {
		return k, fmt.Errorf("postgres: API key by hash: %w", mapErr(err))
	}
	return k, nil
}

// ListAPIKeys returns the project's keys in id order.
func (db *DB) ListAPIKeys(ctx context.Context, projectID string) ([]catalog.APIKey, error) {
	rows, err := db.pool.Query(ctx, apiKeySelect+`WHERE project_id = $1 ORDER BY id`, projectID)
	ks, err := collect(rows, err, scanAPIKey)
	if err != nil {
		return nil, fmt.Errorf("postgres: list API keys: %w", err)
	}
	return ks, nil
}

// RevokeAPIKey marks the key revoked at at (now if zero); revoking twice keeps the first
// time. An unknown key, or a key of another project, is catalog.ErrNotFound.
func (db *DB) RevokeAPIKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.APIKey, error) {
	k, err := scanAPIKey(db.pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3)
		WHERE project_id = $1 AND id = $2 RETURNING id, project_id, name, key_hash, prefix, scopes, created_at, expires_at, revoked_at`,
		projectID, keyID, db.stamp(at)))
	if err != nil {
		return k, fmt.Errorf("postgres: revoke API key %s: %w", keyID, mapErr(err))
	}
	return k, nil
}

// AddMember stores m; an existing (project, email) is catalog.ErrExists.
func (db *DB) AddMember(ctx context.Context, m catalog.Member) (catalog.Member, error) {
	if m.ProjectID == "" || m.Email == "" || m.Role == "" {
		return m, fmt.Errorf("%w: member needs a project, an email and a role", catalog.ErrInvalid)
	}
	m.CreatedAt = db.stamp(m.CreatedAt)
	if _, err := db.pool.Exec(ctx, `INSERT INTO members(project_id, email, role, created_at) VALUES ($1, $2, $3, $4)`,
		m.ProjectID, m.Email, m.Role, m.CreatedAt); err != nil {
		return m, fmt.Errorf("postgres: add member: %w", mapErr(err))
	}
	return m, nil
}

// ListMembers returns the project's members in email order.
func (db *DB) ListMembers(ctx context.Context, projectID string) ([]catalog.Member, error) {
	rows, err := db.pool.Query(ctx, `SELECT project_id, email, role, created_at FROM members WHERE project_id = $1 ORDER BY email`, projectID)
	ms, err := collect(rows, err, scanMember)
	if err != nil {
		return nil, fmt.Errorf("postgres: list members: %w", err)
	}
	return ms, nil
}

// scanMember scans project_id, email, role, created_at.
func scanMember(row scanner) (catalog.Member, error) {
	var m catalog.Member
	err := row.Scan(&m.ProjectID, &m.Email, &m.Role, &m.CreatedAt)
	m.CreatedAt = m.CreatedAt.UTC()
	return m, err
}

// RemoveMember deletes the membership, or returns catalog.ErrNotFound.
func (db *DB) RemoveMember(ctx context.Context, projectID, email string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM members WHERE project_id = $1 AND email = $2`, projectID, email)
	if err != nil {
		return fmt.Errorf("postgres: remove member: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: remove member %s: %w", email, catalog.ErrNotFound)
	}
	return nil
}

// CreateSigningKey registers k; from then on the project requires signed events.
func (db *DB) CreateSigningKey(ctx context.Context, k catalog.SigningKey) (catalog.SigningKey, error) {
	if err := k.Validate(); err != nil {
		return k, err
	}
	k.CreatedAt, k.RevokedAt = db.stamp(k.CreatedAt), time.Time{}
	if _, err := db.pool.Exec(ctx, `INSERT INTO signing_keys(project_id, id, public_key, created_at) VALUES ($1, $2, $3, $4)`,
		k.ProjectID, k.ID, k.PublicKey, k.CreatedAt); err != nil {
		return k, fmt.Errorf("postgres: create signing key %s: %w", k.ID, mapErr(err))
	}
	return k, nil
}

const signingKeyCols = `project_id, id, public_key, created_at, revoked_at`

func scanSigningKey(row scanner) (catalog.SigningKey, error) {
	var (
		k   catalog.SigningKey
		rev *time.Time
	)
	err := row.Scan(&k.ProjectID, &k.ID, &k.PublicKey, &k.CreatedAt, &rev)
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), fromTZ(rev)
	return k, err
}

// SigningKey returns the project's key keyID, whatever its state, or catalog.ErrNotFound.
func (db *DB) SigningKey(ctx context.Context, projectID, keyID string) (catalog.SigningKey, error) {
	k, err := scanSigningKey(db.pool.QueryRow(ctx, `SELECT `+signingKeyCols+` FROM signing_keys WHERE project_id = $1 AND id = $2`, projectID, keyID))
	if err != nil {
		return k, fmt.Errorf("postgres: signing key %s: %w", keyID, mapErr(err))
	}
	return k, nil
}

// ListSigningKeys returns the project's signing keys in id order.
func (db *DB) ListSigningKeys(ctx context.Context, projectID string) ([]catalog.SigningKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+signingKeyCols+` FROM signing_keys WHERE project_id = $1 ORDER BY id`, projectID)
	ks, err := collect(rows, err, scanSigningKey)
	if err != nil {
		return nil, fmt.Errorf("postgres: list signing keys: %w", err)
	}
	return ks, nil
}

// RevokeSigningKey marks the key revoked at at (now if zero); revoking twice keeps the
// first time.
func (db *DB) RevokeSigningKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.SigningKey, error) {
	k, err := scanSigningKey(db.pool.QueryRow(ctx, `UPDATE signing_keys SET revoked_at = coalesce(revoked_at, $3)
		WHERE project_id = $1 AND id = $2 RETURNING `+signingKeyCols, projectID, keyID, db.stamp(at)))
	if err != nil {
		return k, fmt.Errorf("postgres: revoke signing key %s: %w", keyID, mapErr(err))
	}
	return k, nil
}

// SetRetention creates or replaces the retention policy of r.Log.
func (db *DB) SetRetention(ctx context.Context, r catalog.Retention) (catalog.Retention, error) {
	if err := r.Validate(); err != nil {
		return r, err
	}
	r.UpdatedAt = db.stamp(r.UpdatedAt)
	if _, err := db.pool.Exec(ctx, `INSERT INTO retention_policies(project_id, stream, days, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (project_id, stream) DO UPDATE SET days = excluded.days, updated_at = excluded.updated_at`,
		r.Log.ProjectID, string(r.Log.Stream), r.Days, r.UpdatedAt); err != nil {
		return r, fmt.Errorf("postgres: set retention %s: %w", r.Log, mapErr(err))
	}
	return r, nil
}

func scanRetention(row scanner) (catalog.Retention, error) {
	var (
		r      catalog.Retention
		stream string
		days   int32
	)
	err := row.Scan(&r.Log.ProjectID, &stream, &days, &r.UpdatedAt)
	r.Log.Stream, r.Days, r.UpdatedAt = catalog.Stream(stream), int(days), r.UpdatedAt.UTC()
	return r, err
}

// Retention returns the policy of log, or catalog.ErrNotFound (keep forever).
func (db *DB) Retention(ctx context.Context, log catalog.LogID) (catalog.Retention, error) {
	r, err := scanRetention(db.pool.QueryRow(ctx, `SELECT project_id, stream, days, updated_at FROM retention_policies
		WHERE project_id = $1 AND stream = $2`, log.ProjectID, string(log.Stream)))
	if err != nil {
		return r, fmt.Errorf("postgres: retention %s: %w", log, mapErr(err))
	}
	return r, nil
}

// ListRetention returns the project's policies in stream order.
func (db *DB) ListRetention(ctx context.Context, projectID string) ([]catalog.Retention, error) {
	rows, err := db.pool.Query(ctx, `SELECT project_id, stream, days, updated_at FROM retention_policies
		WHERE project_id = $1 ORDER BY stream`, projectID)
	rs, err := collect(rows, err, scanRetention)
	if err != nil {
		return nil, fmt.Errorf("postgres: list retention: %w", err)
	}
	return rs, nil
}
