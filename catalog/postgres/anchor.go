package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

var _ catalog.AnchorCatalog = (*DB)(nil)

// AnchorLease takes or renews the anchoring job's lease for holder until now+ttl.
func (db *DB) AnchorLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if holder == "" || ttl <= 0 {
		return false, fmt.Errorf("%w: lease needs a holder and a positive ttl", catalog.ErrInvalid)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE tree_heads_log SET lease_holder = $1, lease_until = $2
		WHERE id = 1 AND (lease_holder = $1 OR lease_until < $3)`, holder, now.Add(ttl), now)
	if err != nil {
		return false, fmt.Errorf("postgres: anchor lease: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// TreeHeadsLog returns the committed state of the tree_heads log.
func (db *DB) TreeHeadsLog(ctx context.Context) (catalog.TreeHeadsLog, error) {
	var (
		size, pub int64
		root, rng []byte
	)
	if err := db.pool.QueryRow(ctx, `SELECT size, root, compact_range, published_size FROM tree_heads_log WHERE id = 1`).
		Scan(&size, &root, &rng, &pub); err != nil {
		return catalog.TreeHeadsLog{}, fmt.Errorf("postgres: tree_heads log: %w", err)
	}
	return catalog.TreeHeadsLogFrom(size, pub, root, rng)
}

// GrownLogs returns the project-streams whose committed size exceeds their latest
// recorded tree head, in catalog.SortLogs order (byte order, hence COLLATE "C").
func (db *DB) GrownLogs(ctx context.Context, after catalog.LogID, limit int) ([]catalog.Checkpoint, error) {
	rows, err := db.pool.Query(ctx, `SELECT c.project_id, c.stream, c.size, c.root FROM checkpoints c
		WHERE (c.project_id COLLATE "C", c.stream COLLATE "C") > ($1 COLLATE "C", $2 COLLATE "C")
		  AND c.size > coalesce((SELECT max(t.tree_size) FROM tree_heads t
			WHERE t.project_id = c.project_id AND t.stream = c.stream), 0)
		ORDER BY c.project_id COLLATE "C", c.stream COLLATE "C" LIMIT $3`,
		after.ProjectID, string(after.Stream), catalog.ClampLimit(limit))
	out, err := collect(rows, err, func(row scanner) (catalog.Checkpoint, error) { return catalog.ScanGrownLog(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres: grown logs: %w", err)
	}
	return out, nil
}

// AppendTreeHeads commits heads as the next leaves of the tree_heads log.
func (db *DB) AppendTreeHeads(ctx context.Context, oldSize uint64, heads []catalog.TreeHead, next catalog.TreeHeadsLog) error {
	if err := catalog.ValidateAppend(oldSize, heads, next); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tree_heads_log SET size = $1, root = $2, compact_range = $3 WHERE id = 1 AND size = $4`,
			int64(next.Size), next.Root[:], catalog.JoinHashes(next.Range), int64(oldSize))
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("%w: the tree_heads log is no longer of size %d", catalog.ErrConflict, oldSize)
		}
		rows := make([][]any, len(heads))
		for i, h := range heads {
			rows[i] = []any{h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize), h.RootHash[:], db.stamp(h.Timestamp),
				h.Signature, int64(h.Index)}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"tree_heads"},
			[]string{"project_id", "stream", "tree_size", "root_hash", "ts", "signature", "th_index"}, pgx.CopyFromRows(rows))
		if err := mapErr(err); errors.Is(err, catalog.ErrExists) {
			return fmt.Errorf("%w: a head of one of the streams is already recorded at its size: %w", catalog.ErrConflict, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: append tree heads at %d: %w", oldSize, err)
	}
	return nil
}

// TreeHeadsFrom returns heads of the tree_heads log from index first on.
func (db *DB) TreeHeadsFrom(ctx context.Context, first uint64, limit int) ([]catalog.TreeHead, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+treeHeadCols+` FROM tree_heads WHERE th_index >= $1 ORDER BY th_index LIMIT $2`,
		int64(first), catalog.ClampLimit(limit))
	hs, err := collect(rows, err, scanTreeHead)
	if err != nil {
		return nil, fmt.Errorf("postgres: tree heads from %d: %w", first, err)
	}
	return hs, nil
}

// AdvanceTreeHeadsPublished raises the published size of the tree_heads log.
func (db *DB) AdvanceTreeHeadsPublished(ctx context.Context, size uint64) error {
	tag, err := db.pool.Exec(ctx, `UPDATE tree_heads_log SET published_size = greatest(published_size, $1) WHERE id = 1 AND size >= $1`,
		int64(size))
	if err != nil {
		return fmt.Errorf("postgres: advance tree_heads published: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: tree_heads published size %d beyond the log", catalog.ErrConflict, size)
	}
	return nil
}

// UnanchoredTreeHeads returns heads of the tree_heads log below index below that
// have no anchor yet.
func (db *DB) UnanchoredTreeHeads(ctx context.Context, first, below uint64, limit int) ([]catalog.TreeHead, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+treeHeadCols+` FROM tree_heads
		WHERE th_index IS NOT NULL AND anchor_type IS NULL AND th_index >= $1 AND th_index < $2 ORDER BY th_index LIMIT $3`,
		int64(first), int64(below), catalog.ClampLimit(limit))
	hs, err := collect(rows, err, scanTreeHead)
	if err != nil {
		return nil, fmt.Errorf("postgres: unanchored tree heads: %w", err)
	}
	return hs, nil
}

// SetAnchors records the anchors of heads in one transaction.
func (db *DB) SetAnchors(ctx context.Context, heads []catalog.TreeHead) error {
	for _, h := range heads {
		if a := h.Anchor; a == nil || a.Type == "" || a.Ref == "" {
			return fmt.Errorf("%w: anchor of %s %d needs a type and a ref", catalog.ErrInvalid, h.Log, h.TreeSize)
		}
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, h := range heads {
			a := h.Anchor
			b.Queue(`UPDATE tree_heads SET anchor_type = $4, anchor_ref = $5, anchor_proof = $6, anchored_at = $7
				WHERE project_id = $1 AND stream = $2 AND tree_size = $3 AND anchor_type IS NULL`,
				h.Log.ProjectID, string(h.Log.Stream), int64(h.TreeSize), a.Type, a.Ref, a.Proof, db.stamp(a.AnchoredAt))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("postgres: set %d anchors: %w", len(heads), err)
	}
	return nil
}

// SetPublicRead turns the project's public read mode on or off.
func (db *DB) SetPublicRead(ctx context.Context, projectID string, on bool) error {
	var err error
	if on {
		_, err = db.pool.Exec(ctx, `INSERT INTO public_read(project_id, since) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
			projectID, db.stamp(time.Time{}))
	} else {
		_, err = db.pool.Exec(ctx, `DELETE FROM public_read WHERE project_id = $1`, projectID)
	}
	if err != nil {
		return fmt.Errorf("postgres: public read of %s: %w", projectID, mapErr(err))
	}
	return nil
}

// PublicRead reports whether the project's public read mode is on.
func (db *DB) PublicRead(ctx context.Context, projectID string) (bool, error) {
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM public_read WHERE project_id = $1`, projectID).Scan(&n); err != nil {
		return false, fmt.Errorf("postgres: public read of %s: %w", projectID, err)
	}
	return n == 1, nil
}
