package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

var _ catalog.AnchorCatalog = (*DB)(nil)

// AnchorLease takes or renews the anchoring job's lease for holder until now+ttl.
func (db *DB) AnchorLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if holder == "" || ttl <= 0 {
		return false, fmt.Errorf("%w: lease needs a holder and a positive ttl", catalog.ErrInvalid)
	}
	res, err := db.w.ExecContext(ctx, `UPDATE tree_heads_log SET lease_holder = ?, lease_until_ms = ?
		WHERE id = 1 AND (lease_holder = ? OR lease_until_ms < ?)`,
		holder, now.Add(ttl).UnixMilli(), holder, now.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("sqlite: anchor lease: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: anchor lease: %w", err)
	}
	return n == 1, nil
}

// TreeHeadsLog returns the committed state of the tree_heads log.
func (db *DB) TreeHeadsLog(ctx context.Context) (catalog.TreeHeadsLog, error) {
	return db.treeHeadsLog(ctx, db.w)
}

type rowQuerier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

func (db *DB) treeHeadsLog(ctx context.Context, q rowQuerier) (catalog.TreeHeadsLog, error) {
	var (
		size, pub int64
		root, rng []byte
	)
	if err := q.QueryRowContext(ctx, `SELECT size, root, compact_range, published_size FROM tree_heads_log WHERE id = 1`).
		Scan(&size, &root, &rng, &pub); err != nil {
		return catalog.TreeHeadsLog{}, fmt.Errorf("sqlite: tree_heads log: %w", err)
	}
	return catalog.TreeHeadsLogFrom(size, pub, root, rng)
}

// GrownLogs returns the project-streams whose committed size exceeds their latest
// recorded tree head.
func (db *DB) GrownLogs(ctx context.Context, after catalog.LogID, limit int) ([]catalog.Checkpoint, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT l.project_id, l.stream, c.size, c.root FROM `+checkpointTables+`
		WHERE (l.project_id, l.stream) > (?, ?) AND c.size > coalesce((SELECT max(t.tree_size) FROM tree_heads t
			WHERE t.project_id = l.project_id AND t.stream = l.stream), 0)
		ORDER BY l.project_id, l.stream LIMIT ?`, after.ProjectID, string(after.Stream), catalog.ClampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: grown logs: %w", err)
	}
	return collect(rows, catalog.ScanGrownLog)
}

// AppendTreeHeads commits heads as the next leaves of the tree_heads log.
func (db *DB) AppendTreeHeads(ctx context.Context, oldSize uint64, heads []catalog.TreeHead, next catalog.TreeHeadsLog) error {
	if err := catalog.ValidateAppend(oldSize, heads, next); err != nil {
		return err
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tree_heads_log SET size = ?, root = ?, compact_range = ? WHERE id = 1 AND size = ?`,
			int64(next.Size), next.Root[:], catalog.JoinHashes(next.Range), int64(oldSize))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(fmt.Errorf("%w: the tree_heads log is no longer of size %d", catalog.ErrConflict, oldSize), err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO tree_heads(project_id, stream, tree_size, root_hash, ts_ms, signature, th_index)
			VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, h := range heads {
			if _, err := stmt.ExecContext(ctx, h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize), h.RootHash[:],
				ms(db.stamp(h.Timestamp)), h.Signature, int64(h.Index)); err != nil {
				if isConstraint(err) {
					return fmt.Errorf("%w: a head of %s size %d is already recorded: %w", catalog.ErrConflict, h.Log, h.TreeSize, err)
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append tree heads at %d: %w", oldSize, err)
	}
	return nil
}

// TreeHeadsFrom returns heads of the tree_heads log from index first on.
func (db *DB) TreeHeadsFrom(ctx context.Context, first uint64, limit int) ([]catalog.TreeHead, error) {
	return db.treeHeads(ctx, db.r, `WHERE th_index >= ? ORDER BY th_index LIMIT ?`, int64(first), catalog.ClampLimit(limit))
}

// AdvanceTreeHeadsPublished raises the published size of the tree_heads log.
func (db *DB) AdvanceTreeHeadsPublished(ctx context.Context, size uint64) error {
	res, err := db.w.ExecContext(ctx, `UPDATE tree_heads_log SET published_size = max(published_size, ?) WHERE id = 1 AND size >= ?`,
		int64(size), int64(size))
	if err != nil {
		return fmt.Errorf("sqlite: advance tree_heads published: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(fmt.Errorf("%w: tree_heads published size %d beyond the log", catalog.ErrConflict, size), err)
	}
	return nil
}

// UnanchoredTreeHeads returns heads of the tree_heads log below index below that
// have no anchor yet.
func (db *DB) UnanchoredTreeHeads(ctx context.Context, first, below uint64, limit int) ([]catalog.TreeHead, error) {
	return db.treeHeads(ctx, db.r, `WHERE th_index IS NOT NULL AND anchor_type IS NULL AND th_index >= ? AND th_index < ?
		ORDER BY th_index LIMIT ?`, int64(first), int64(below), catalog.ClampLimit(limit))
}

// SetAnchors records the anchors of heads in one transaction.
func (db *DB) SetAnchors(ctx context.Context, heads []catalog.TreeHead) error {
	for _, h := range heads {
		if a := h.Anchor; a == nil || a.Type == "" || a.Ref == "" {
			return fmt.Errorf("%w: anchor of %s %d needs a type and a ref", catalog.ErrInvalid, h.Log, h.TreeSize)
		}
	}
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE tree_heads SET anchor_type = ?, anchor_ref = ?, anchor_proof = ?, anchored_ms = ?
			WHERE project_id = ? AND stream = ? AND tree_size = ? AND anchor_type IS NULL`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, h := range heads {
			a := h.Anchor
			if _, err := stmt.ExecContext(ctx, a.Type, a.Ref, a.Proof, ms(db.stamp(a.AnchoredAt)),
				h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: set %d anchors: %w", len(heads), err)
	}
	return nil
}

// SetPublicRead turns the project's public read mode on or off.
func (db *DB) SetPublicRead(ctx context.Context, projectID string, on bool) error {
	var err error
	if on {
		_, err = db.w.ExecContext(ctx, `INSERT INTO public_read(project_id, since_ms) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			projectID, ms(db.stamp(time.Time{})))
	} else {
		_, err = db.w.ExecContext(ctx, `DELETE FROM public_read WHERE project_id = ?`, projectID)
	}
	if err != nil {
		return fmt.Errorf("sqlite: public read of %s: %w", projectID, mapErr(err))
	}
	return nil
}

// PublicRead reports whether the project's public read mode is on.
func (db *DB) PublicRead(ctx context.Context, projectID string) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM public_read WHERE project_id = ?`, projectID).Scan(&n); err != nil {
		return false, fmt.Errorf("sqlite: public read of %s: %w", projectID, err)
	}
	return n == 1, nil
}
