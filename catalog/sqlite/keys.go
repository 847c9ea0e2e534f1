package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// CreateLegalHold stores h with its event list in one transaction.
func (db *DB) CreateLegalHold(ctx context.Context, h catalog.LegalHold) (catalog.LegalHold, error) {
	if h.ID == "" || h.ProjectID == "" {
		return h, fmt.Errorf("%w: legal hold needs an id and a project", catalog.ErrInvalid)
	}
	h.CreatedAt, h.ReleasedAt = db.stamp(h.CreatedAt), time.Time{}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO legal_holds(project_id, id, membership_root, created_ms) VALUES (?, ?, ?, ?)`,
			h.ProjectID, h.ID, h.MembershipRoot[:], ms(h.CreatedAt)); err != nil {
			return mapErr(err)
		}
		for i, id := range h.EventIDs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO legal_hold_events(project_id, hold_id, pos, event_id) VALUES (?, ?, ?, ?)`,
				h.ProjectID, h.ID, i, id); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
	if err != nil {
		return h, fmt.Errorf("sqlite: create legal hold %s: %w", h.ID, err)
	}
	return h, nil
}

// LegalHold returns the hold with its events, or catalog.ErrNotFound.
func (db *DB) LegalHold(ctx context.Context, projectID, holdID string) (catalog.LegalHold, error) {
	holds, err := db.legalHolds(ctx, `WHERE project_id = ? AND id = ?`, projectID, holdID)
	if err != nil {
		return catalog.LegalHold{}, err
	}
	if len(holds) == 0 {
		return catalog.LegalHold{}, fmt.Errorf("sqlite: legal hold %s: %w", holdID, catalog.ErrNotFound)
	}
	return holds[0], nil
}

// ListLegalHolds returns the project's holds with their events, in id order.
func (db *DB) ListLegalHolds(ctx context.Context, projectID string) ([]catalog.LegalHold, error) {
	return db.legalHolds(ctx, `WHERE project_id = ?`, projectID)
}

func (db *DB) legalHolds(ctx context.Context, where string, args ...any) ([]catalog.LegalHold, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT project_id, id, membership_root, created_ms, released_ms FROM legal_holds `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: legal holds: %w", err)
	}
	holds, err := collect(rows, func(row interface{ Scan(...any) error }) (catalog.LegalHold, error) {
		var (
			h        catalog.LegalHold
			root     []byte
			cms, rms int64
		)
		if err := row.Scan(&h.ProjectID, &h.ID, &root, &cms, &rms); err != nil {
			return h, err
		}
		h.CreatedAt, h.ReleasedAt = catalog.FromUnixMS(cms), catalog.FromUnixMS(rms)
		var err error
		h.MembershipRoot, err = catalog.HashFrom(root)
		return h, err
	})
	if err != nil {
		return nil, err
	}
	for i := range holds {
		h := &holds[i]
		rows, err := db.r.QueryContext(ctx, `SELECT event_id FROM legal_hold_events WHERE project_id = ? AND hold_id = ? ORDER BY pos`, h.ProjectID, h.ID)
		if err != nil {
			return nil, fmt.Errorf("sqlite: legal hold events: %w", err)
		}
		if h.EventIDs, err = collect(rows, func(row interface{ Scan(...any) error }) (string, error) {
			var s string
			return s, row.Scan(&s)
		}); err != nil {
			return nil, err
		}
	}
	return holds, nil
}

// ReleaseLegalHold marks the hold released at at (now if zero); releasing twice keeps
// the first time.
func (db *DB) ReleaseLegalHold(ctx context.Context, projectID, holdID string, at time.Time) (catalog.LegalHold, error) {
	if _, err := db.w.ExecContext(ctx, `UPDATE legal_holds SET released_ms = ? WHERE project_id = ? AND id = ? AND released_ms = 0`,
		ms(db.stamp(at)), projectID, holdID); err != nil {
		return catalog.LegalHold{}, fmt.Errorf("sqlite: release legal hold %s: %w", holdID, err)
	}
	return db.LegalHold(ctx, projectID, holdID)
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

// InsertDataKeys is InsertDataKey for several keys in one write transaction: each is
// stored unless its (log, epoch) has a key, and the stored keys come back in the
// order of ks. A key that is not valid, or whose key id is taken, stores none of
// them. The keyring creates the keys of a tick's new project-streams so, with one
// commit for all of them instead of one each.
func (db *DB) InsertDataKeys(ctx context.Context, ks []catalog.DataKey) ([]catalog.DataKey, error) {
	for _, k := range ks {
		if err := catalog.ValidateDataKey(k); err != nil {
			return nil, err
		}
	}
	out := make([]catalog.DataKey, len(ks))
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO data_keys(project_id, stream, epoch, key_id, kek_id, wrapped, created_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, stream, epoch) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		get, err := tx.PrepareContext(ctx, dataKeySelect+`WHERE project_id = ? AND stream = ? AND epoch = ?`)
		if err != nil {
			return err
		}
		defer get.Close()
		for i, k := range ks {
			if _, err := ins.ExecContext(ctx, k.Log.ProjectID, string(k.Log.Stream), k.Epoch, k.KeyID, k.KEKID, k.Wrapped,
				ms(db.stamp(k.CreatedAt))); err != nil {
				return fmt.Errorf("%s %s: %w", k.Log, k.Epoch, mapErr(err))
			}
			if out[i], err = scanDataKey(get.QueryRowContext(ctx, k.Log.ProjectID, string(k.Log.Stream), k.Epoch)); err != nil {
				return fmt.Errorf("%s %s: %w", k.Log, k.Epoch, mapErr(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: insert data keys: %w", err)
	}
	return out, nil
}

// DataKey returns the key of (log, epoch), destroyed or not, or catalog.ErrNotFound.
func (db *DB) DataKey(ctx context.Context, log catalog.LogID, epoch string) (catalog.DataKey, error) {
	return db.dataKey(ctx, db.r, log, epoch)
}

const dataKeySelect = `SELECT project_id, stream, epoch, key_id, kek_id, wrapped, created_ms, destroyed_ms FROM data_keys `

func scanDataKey(row interface{ Scan(...any) error }) (catalog.DataKey, error) {
	var (
		k        catalog.DataKey
		stream   string
		cms, dms int64
	)
	err := row.Scan(&k.Log.ProjectID, &stream, &k.Epoch, &k.KeyID, &k.KEKID, &k.Wrapped, &cms, &dms)
	k.Log.Stream, k.CreatedAt, k.DestroyedAt = catalog.Stream(stream), catalog.FromUnixMS(cms), catalog.FromUnixMS(dms)
	return k, err
}

func (db *DB) dataKey(ctx context.Context, q *sql.DB, log catalog.LogID, epoch string) (catalog.DataKey, error) {
	k, err := scanDataKey(q.QueryRowContext(ctx, dataKeySelect+`WHERE project_id = ? AND stream = ? AND epoch = ?`,
		log.ProjectID, string(log.Stream), epoch))
	if err != nil {
		return k, fmt.Errorf("sqlite: data key %s %s: %w", log, epoch, mapErr(err))
	}
	return k, nil
}

// ListDataKeys returns the keys of log in epoch order.
func (db *DB) ListDataKeys(ctx context.Context, log catalog.LogID) ([]catalog.DataKey, error) {
	rows, err := db.r.QueryContext(ctx, dataKeySelect+`WHERE project_id = ? AND stream = ? ORDER BY epoch`, log.ProjectID, string(log.Stream))
	if err != nil {
		return nil, fmt.Errorf("sqlite: list data keys: %w", err)
	}
	return collect(rows, scanDataKey)
}

// DestroyDataKey crypto-shreds the key of (log, epoch): its wrapped bytes are deleted
// (secure_delete overwrites them in the file) and it stays recorded as destroyed, so it
// is never re-created. Destroying twice keeps the first time.
func (db *DB) DestroyDataKey(ctx context.Context, log catalog.LogID, epoch string, at time.Time) (catalog.DataKey, error) {
	if _, err := db.w.ExecContext(ctx, destroyDataKeySQL, ms(db.stamp(at)), log.ProjectID, string(log.Stream), epoch); err != nil {
		return catalog.DataKey{}, fmt.Errorf("sqlite: destroy data key %s %s: %w", log, epoch, err)
	}
	return db.destroyed(ctx, log, epoch)
}

// destroyDataKeySQL deletes a data key's wrapped bytes (args: at, project, stream, epoch).
const destroyDataKeySQL = `UPDATE data_keys SET wrapped = NULL, destroyed_ms = ?
	WHERE project_id = ? AND stream = ? AND epoch = ? AND destroyed_ms = 0`

// destroyed finishes destroying a data key: it moves the WAL's copy of the old page
// into the file (where secure_delete has zeroed it) and truncates the WAL (best effort:
// readers may hold it open), then returns the key as stored.
func (db *DB) destroyed(ctx context.Context, log catalog.LogID, epoch string) (catalog.DataKey, error) {
	if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		db.log.Warn("sqlite: WAL checkpoint after destroying a data key", slog.Any("err", err))
	}
	return db.dataKey(ctx, db.w, log, epoch)
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
	if _, err := db.w.ExecContext(ctx, `INSERT INTO tree_heads(project_id, stream, tree_size, root_hash, ts_ms, signature)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize), h.RootHash[:], ms(h.Timestamp), h.Signature); err != nil {
		return h, fmt.Errorf("sqlite: add tree head %s %d: %w", h.Log, h.TreeSize, err)
	}
	got, err := db.treeHeads(ctx, db.w, `WHERE project_id = ? AND stream = ? AND tree_size = ?`,
		h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize))
	if err != nil {
		return h, err
	}
	if len(got) != 1 {
		return h, fmt.Errorf("sqlite: add tree head %s %d: %w", h.Log, h.TreeSize, catalog.ErrNotFound)
	}
	if got[0].RootHash != h.RootHash {
		return got[0], fmt.Errorf("%w: %s already has a tree head of size %d with another root", catalog.ErrConflict, h.Log, h.TreeSize)
	}
	return got[0], nil
}

// LatestTreeHead returns the largest recorded head of log, or catalog.ErrNotFound.
func (db *DB) LatestTreeHead(ctx context.Context, log catalog.LogID) (catalog.TreeHead, error) {
	got, err := db.ListTreeHeads(ctx, log, 1)
	if err != nil {
		return catalog.TreeHead{}, err
	}
	if len(got) == 0 {
		return catalog.TreeHead{}, fmt.Errorf("sqlite: latest tree head %s: %w", log, catalog.ErrNotFound)
	}
	return got[0], nil
}

// ListTreeHeads returns up to limit heads of log, newest (largest) first.
func (db *DB) ListTreeHeads(ctx context.Context, log catalog.LogID, limit int) ([]catalog.TreeHead, error) {
	return db.treeHeads(ctx, db.r, `WHERE project_id = ? AND stream = ? ORDER BY tree_size DESC LIMIT ?`,
		log.ProjectID, string(log.Stream), catalog.ClampLimit(limit))
}

// SetAnchor records where the head of log at treeSize was published. Setting the same
// anchor again is a no-op; a different one is catalog.ErrConflict.
func (db *DB) SetAnchor(ctx context.Context, log catalog.LogID, treeSize uint64, a catalog.Anchor) (catalog.TreeHead, error) {
	if a.Type == "" || a.Ref == "" {
		return catalog.TreeHead{}, fmt.Errorf("%w: anchor needs a type and a ref", catalog.ErrInvalid)
	}
	a.AnchoredAt = db.stamp(a.AnchoredAt)
	if _, err := db.w.ExecContext(ctx, `UPDATE tree_heads SET anchor_type = ?, anchor_ref = ?, anchor_proof = ?, anchored_ms = ?
		WHERE project_id = ? AND stream = ? AND tree_size = ? AND anchor_type IS NULL`,
		a.Type, a.Ref, a.Proof, ms(a.AnchoredAt), log.ProjectID, string(log.Stream), int64(treeSize)); err != nil {
		return catalog.TreeHead{}, fmt.Errorf("sqlite: set anchor %s %d: %w", log, treeSize, err)
	}
	got, err := db.treeHeads(ctx, db.w, `WHERE project_id = ? AND stream = ? AND tree_size = ?`,
		log.ProjectID, string(log.Stream), int64(treeSize))
	if err != nil {
		return catalog.TreeHead{}, err
	}
	if len(got) != 1 {
		return catalog.TreeHead{}, fmt.Errorf("sqlite: set anchor %s %d: %w", log, treeSize, catalog.ErrNotFound)
	}
	if g := got[0].Anchor; g == nil || g.Type != a.Type || g.Ref != a.Ref || !bytes.Equal(g.Proof, a.Proof) {
		return got[0], fmt.Errorf("%w: head %s %d is anchored elsewhere", catalog.ErrConflict, log, treeSize)
	}
	return got[0], nil
}

func (db *DB) treeHeads(ctx context.Context, q querier, where string, args ...any) ([]catalog.TreeHead, error) {
	rows, err := q.QueryContext(ctx, `SELECT project_id, stream, tree_size, root_hash, ts_ms, signature,
		anchor_type, anchor_ref, anchor_proof, anchored_ms, th_index FROM tree_heads `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: tree heads: %w", err)
	}
	return collect(rows, func(row interface{ Scan(...any) error }) (catalog.TreeHead, error) {
		var (
			h          catalog.TreeHead
			stream     string
			size, ts   int64
			root       []byte
			aType, ref sql.NullString
			proof      []byte
			anchored   int64
			index      sql.NullInt64
		)
		if err := row.Scan(&h.Log.ProjectID, &stream, &size, &root, &ts, &h.Signature, &aType, &ref, &proof, &anchored, &index); err != nil {
			return h, err
		}
		h.Index, h.InLog = uint64(index.Int64), index.Valid
		h.Log.Stream, h.TreeSize, h.Timestamp = catalog.Stream(stream), uint64(size), catalog.FromUnixMS(ts)
		if aType.Valid {
			h.Anchor = &catalog.Anchor{Type: aType.String, Ref: ref.String, Proof: proof, AnchoredAt: catalog.FromUnixMS(anchored)}
		}
		var err error
		h.RootHash, err = catalog.HashFrom(root)
		return h, err
	})
}
