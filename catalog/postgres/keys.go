package postgres

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

// CreateLegalHold stores h with its event list in one transaction.
func (db *DB) CreateLegalHold(ctx context.Context, h catalog.LegalHold) (catalog.LegalHold, error) {
	if h.ID == "" || h.ProjectID == "" {
		return h, fmt.Errorf("%w: legal hold needs an id and a project", catalog.ErrInvalid)
	}
	h.CreatedAt, h.ReleasedAt = db.stamp(h.CreatedAt), time.Time{}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := lockHolds(ctx, tx, h.ProjectID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO legal_holds(project_id, id, membership_root, created_at) VALUES ($1, $2, $3, $4)`,
			h.ProjectID, h.ID, h.MembershipRoot[:], h.CreatedAt); err != nil {
			return mapErr(err)
		}
		if len(h.EventIDs) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO legal_hold_events(project_id, hold_id, pos, event_id)
			SELECT $1, $2, u.pos - 1, u.id FROM unnest($3::text[]) WITH ORDINALITY AS u(id, pos)`, h.ProjectID, h.ID, h.EventIDs)
		return mapErr(err)
	})
	if err != nil {
		return h, fmt.Errorf("postgres: create legal hold %s: %w", h.ID, err)
	}
	return h, nil
}

// LegalHold returns the hold with its events, or catalog.ErrNotFound.
func (db *DB) LegalHold(ctx context.Context, projectID, holdID string) (catalog.LegalHold, error) {
	holds, err := db.legalHolds(ctx, `WHERE h.project_id = $1 AND h.id = $2`, projectID, holdID)
	if err != nil {
		return catalog.LegalHold{}, err
	}
	if len(holds) == 0 {
		return catalog.LegalHold{}, fmt.Errorf("postgres: legal hold %s: %w", holdID, catalog.ErrNotFound)
	}
	return holds[0], nil
}

// ListLegalHolds returns the project's holds with their events, in id order.
func (db *DB) ListLegalHolds(ctx context.Context, projectID string) ([]catalog.LegalHold, error) {
	return db.legalHolds(ctx, `WHERE h.project_id = $1`, projectID)
}

func (db *DB) legalHolds(ctx context.Context, where string, args ...any) ([]catalog.LegalHold, error) {
	rows, err := db.pool.Query(ctx, `SELECT h.project_id, h.id, h.membership_root, h.created_at, h.released_at,
		coalesce((SELECT array_agg(event_id ORDER BY pos) FROM legal_hold_events e
			WHERE e.project_id = h.project_id AND e.hold_id = h.id), '{}')
		FROM legal_holds h `+where+` ORDER BY h.id`, args...)
	holds, err := collect(rows, err, func(row scanner) (catalog.LegalHold, error) {
		var (
			h    catalog.LegalHold
			root []byte
			rel  *time.Time
		)
		if err := row.Scan(&h.ProjectID, &h.ID, &root, &h.CreatedAt, &rel, &h.EventIDs); err != nil {
			return h, err
		}
		h.CreatedAt, h.ReleasedAt = h.CreatedAt.UTC(), fromTZ(rel)
		var err error
		h.MembershipRoot, err = catalog.HashFrom(root)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: legal holds: %w", err)
	}
	return holds, nil
}

// ReleaseLegalHold marks the hold released at at (now if zero); releasing twice keeps
// the first time.
func (db *DB) ReleaseLegalHold(ctx context.Context, projectID, holdID string, at time.Time) (catalog.LegalHold, error) {
	if _, err := db.pool.Exec(ctx, `UPDATE legal_holds SET released_at = coalesce(released_at, $3) WHERE project_id = $1 AND id = $2`,
		projectID, holdID, db.stamp(at)); err != nil {
		return catalog.LegalHold{}, fmt.Errorf("postgres: release legal hold %s: %w", holdID, err)
	}
	return db.LegalHold(ctx, projectID, holdID)
}

const dataKeyCols = `project_id, stream, epoch, key_id, kek_id, wrapped, created_at, destroyed_at`

func scanDataKey(row scanner) (catalog.DataKey, error) {
	var (
		k      catalog.DataKey
		stream string
		dest   *time.Time
	)
	err := row.Scan(&k.Log.ProjectID, &stream, &k.Epoch, &k.KeyID, &k.KEKID, &k.Wrapped, &k.CreatedAt, &dest)
	k.Log.Stream, k.CreatedAt, k.DestroyedAt = catalog.Stream(stream), k.CreatedAt.UTC(), fromTZ(dest)
	return k, err
}

// InsertDataKey stores k unless a key for its (log, epoch) exists, and returns the
// stored key either way: of two racing writers, both end up using the first one's key.
// A destroyed key is returned as such (Wrapped nil), never replaced.
func (db *DB) InsertDataKey(ctx context.Context, k catalog.DataKey) (catalog.DataKey, error) {
	stored, err := db.InsertDataKeys(ctx, []catalog.DataKey{k})
	if err != nil {
		return k, err
	}
	return stored[0], nil
}

// InsertDataKeys is InsertDataKey for several keys in one transaction: each is stored
// unless its (log, epoch) has a key, and the stored keys come back in the order of ks.
// A key that is not valid, or whose key id is taken, stores none of them.
func (db *DB) InsertDataKeys(ctx context.Context, ks []catalog.DataKey) ([]catalog.DataKey, error) {
	for _, k := range ks {
		if err := catalog.ValidateDataKey(k); err != nil {
			return nil, err
		}
	}
	out := make([]catalog.DataKey, len(ks))
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		for i, k := range ks {
			if _, err := tx.Exec(ctx, `INSERT INTO data_keys(project_id, stream, epoch, key_id, kek_id, wrapped, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (project_id, stream, epoch) DO NOTHING`,
				k.Log.ProjectID, string(k.Log.Stream), k.Epoch, k.KeyID, k.KEKID, k.Wrapped, db.stamp(k.CreatedAt)); err != nil {
				return fmt.Errorf("%s %s: %w", k.Log, k.Epoch, mapErr(err))
			}
			var err error
			if out[i], err = scanDataKey(tx.QueryRow(ctx, `SELECT `+dataKeyCols+` FROM data_keys
				WHERE project_id = $1 AND stream = $2 AND epoch = $3`, k.Log.ProjectID, string(k.Log.Stream), k.Epoch)); err != nil {
				return fmt.Errorf("%s %s: %w", k.Log, k.Epoch, mapErr(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: insert data keys: %w", err)
	}
	return out, nil
}

// DataKey returns the key of (log, epoch), destroyed or not, or catalog.ErrNotFound.
func (db *DB) DataKey(ctx context.Context, log catalog.LogID, epoch string) (catalog.DataKey, error) {
	k, err := scanDataKey(db.pool.QueryRow(ctx, `SELECT `+dataKeyCols+` FROM data_keys
		WHERE project_id = $1 AND stream = $2 AND epoch = $3`, log.ProjectID, string(log.Stream), epoch))
	if err != nil {
		return k, fmt.Errorf("postgres: data key %s %s: %w", log, epoch, mapErr(err))
	}
	return k, nil
}

// ListDataKeys returns the keys of log in epoch order.
func (db *DB) ListDataKeys(ctx context.Context, log catalog.LogID) ([]catalog.DataKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+dataKeyCols+` FROM data_keys WHERE project_id = $1 AND stream = $2 ORDER BY epoch`,
		log.ProjectID, string(log.Stream))
	ks, err := collect(rows, err, scanDataKey)
	if err != nil {
		return nil, fmt.Errorf("postgres: list data keys: %w", err)
	}
	return ks, nil
}

// DestroyDataKey crypto-shreds the key of (log, epoch): its wrapped bytes are deleted
// and it stays recorded as destroyed, so it is never re-created. Destroying twice keeps
// the first time. The old row version stays on disk until VACUUM reclaims it; the
// retention job vacuums data_keys after shredding (docs/catalog.md).
func (db *DB) DestroyDataKey(ctx context.Context, log catalog.LogID, epoch string, at time.Time) (catalog.DataKey, error) {
	k, err := scanDataKey(db.pool.QueryRow(ctx, destroyDataKeySQL, log.ProjectID, string(log.Stream), epoch, db.stamp(at)))
	if err != nil {
		return k, fmt.Errorf("postgres: destroy data key %s %s: %w", log, epoch, mapErr(err))
	}
	return k, nil
}

const treeHeadCols = `project_id, stream, tree_size, root_hash, ts, signature, anchor_type, anchor_ref, anchor_proof, anchored_at, th_index`

func scanTreeHead(row scanner) (catalog.TreeHead, error) {
	var (
		h           catalog.TreeHead
		stream      string
		size        int64
		root, proof []byte
		aType, ref  *string
		anchored    *time.Time
		index       *int64
	)
	if err := row.Scan(&h.Log.ProjectID, &stream, &size, &root, &h.Timestamp, &h.Signature, &aType, &ref, &proof, &anchored, &index); err != nil {
		return h, err
	}
	if index != nil {
		h.Index, h.InLog = uint64(*index), true
	}
	h.Log.Stream, h.TreeSize, h.Timestamp = catalog.Stream(stream), uint64(size), h.Timestamp.UTC()
	if aType != nil && ref != nil {
		h.Anchor = &catalog.Anchor{Type: *aType, Ref: *ref, Proof: proof, AnchoredAt: fromTZ(anchored)}
	}
	var err error
	h.RootHash, err = catalog.HashFrom(root)
	return h, err
}

// AddTreeHead records a signed tree head. Recording the same head again is a no-op that
// returns the stored one; a different root for a recorded size is catalog.ErrConflict
// (one tree per project-stream).
func (db *DB) AddTreeHead(ctx context.Context, h catalog.TreeHead) (catalog.TreeHead, error) {
	if err := h.Log.Validate(); err != nil {
		return h, err
	}
	if len(h.Signature) == 0 {
		return h, fmt.Errorf("%w: unsigned tree head", catalog.ErrInvalid)
	}
	h.Timestamp, h.Anchor = db.stamp(h.Timestamp), nil
	if _, err := db.pool.Exec(ctx, `INSERT INTO tree_heads(project_id, stream, tree_size, root_hash, ts, signature)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
		h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize), h.RootHash[:], h.Timestamp, h.Signature); err != nil {
		return h, fmt.Errorf("postgres: add tree head %s %d: %w", h.Log, h.TreeSize, err)
	}
	got, err := db.treeHead(ctx, h.Log, h.TreeSize)
	if err != nil {
		return h, err
	}
	if got.RootHash != h.RootHash {
		return got, fmt.Errorf("%w: %s already has a tree head of size %d with another root", catalog.ErrConflict, h.Log, h.TreeSize)
	}
	return got, nil
}

func (db *DB) treeHead(ctx context.Context, log catalog.LogID, size uint64) (catalog.TreeHead, error) {
	h, err := scanTreeHead(db.pool.QueryRow(ctx, `SELECT `+treeHeadCols+` FROM tree_heads
		WHERE project_id = $1 AND stream = $2 AND tree_size = $3`, log.ProjectID, string(log.Stream), int64(size)))
	if err != nil {
		return h, fmt.Errorf("postgres: tree head %s %d: %w", log, size, mapErr(err))
	}
	return h, nil
}

// LatestTreeHead returns the largest recorded head of log, or catalog.ErrNotFound.
func (db *DB) LatestTreeHead(ctx context.Context, log catalog.LogID) (catalog.TreeHead, error) {
	h, err := scanTreeHead(db.pool.QueryRow(ctx, `SELECT `+treeHeadCols+` FROM tree_heads
		WHERE project_id = $1 AND stream = $2 ORDER BY tree_size DESC LIMIT 1`, log.ProjectID, string(log.Stream)))
	if err != nil {
		return h, fmt.Errorf("postgres: latest tree head %s: %w", log, mapErr(err))
	}
	return h, nil
}

// ListTreeHeads returns up to limit heads of log, newest (largest) first.
func (db *DB) ListTreeHeads(ctx context.Context, log catalog.LogID, limit int) ([]catalog.TreeHead, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+treeHeadCols+` FROM tree_heads
		WHERE project_id = $1 AND stream = $2 ORDER BY tree_size DESC LIMIT $3`, log.ProjectID, string(log.Stream), catalog.ClampLimit(limit))
	hs, err := collect(rows, err, scanTreeHead)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tree heads %s: %w", log, err)
	}
	return hs, nil
}

// SetAnchor records where the head of log at treeSize was published. Setting the same
// anchor again is a no-op; a different one is catalog.ErrConflict.
func (db *DB) SetAnchor(ctx context.Context, log catalog.LogID, treeSize uint64, a catalog.Anchor) (catalog.TreeHead, error) {
	if a.Type == "" || a.Ref == "" {
		return catalog.TreeHead{}, fmt.Errorf("%w: anchor needs a type and a ref", catalog.ErrInvalid)
	}
	a.AnchoredAt = db.stamp(a.AnchoredAt)
	if _, err := db.pool.Exec(ctx, `UPDATE tree_heads SET anchor_type = $4, anchor_ref = $5, anchor_proof = $6, anchored_at = $7
		WHERE project_id = $1 AND stream = $2 AND tree_size = $3 AND anchor_type IS NULL`,
		log.ProjectID, string(log.Stream), int64(treeSize), a.Type, a.Ref, a.Proof, a.AnchoredAt); err != nil {
		return catalog.TreeHead{}, fmt.Errorf("postgres: set anchor %s %d: %w", log, treeSize, err)
	}
	got, err := db.treeHead(ctx, log, treeSize)
	if err != nil {
		return got, err
	}
	if g := got.Anchor; g == nil || g.Type != a.Type || g.Ref != a.Ref || !bytes.Equal(g.Proof, a.Proof) {
		return got, fmt.Errorf("%w: head %s %d is anchored elsewhere", catalog.ErrConflict, log, treeSize)
	}
	return got, nil
}
