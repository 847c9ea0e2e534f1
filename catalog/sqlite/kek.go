package sqlite

import (
	"context"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
)

// DataKeysNotWrappedBy returns up to limit live data keys whose KEK is not kekID, in
// (project, stream, epoch) order after after's (keyring.RewrapStore).
func (db *DB) DataKeysNotWrappedBy(ctx context.Context, kekID string, after catalog.DataKey, limit int) ([]catalog.DataKey, error) {
	rows, err := db.r.QueryContext(ctx, dataKeySelect+`WHERE destroyed_ms = 0 AND kek_id <> ?
		AND (project_id, stream, epoch) > (?, ?, ?) ORDER BY project_id, stream, epoch LIMIT ?`,
		kekID, after.Log.ProjectID, string(after.Log.Stream), after.Epoch, catalog.ClampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("sqlite: data keys to rewrap: %w", err)
	}
	return collect(rows, scanDataKey)
}

// RewrapDataKey replaces old's wrapped bytes and KEK id if the row is still live and
// unchanged, and reports whether it did (keyring.RewrapStore).
func (db *DB) RewrapDataKey(ctx context.Context, old catalog.DataKey, kekID string, wrapped []byte) (bool, error) {
	if kekID == "" || len(wrapped) == 0 {
		return false, fmt.Errorf("%w: rewrap needs a KEK id and wrapped bytes", catalog.ErrInvalid)
	}
	res, err := db.w.ExecContext(ctx, `UPDATE data_keys SET kek_id = ?, wrapped = ?
		WHERE project_id = ? AND stream = ? AND epoch = ? AND key_id = ? AND kek_id = ? AND destroyed_ms = 0`,
		kekID, wrapped, old.Log.ProjectID, string(old.Log.Stream), old.Epoch, old.KeyID, old.KEKID)
	if err != nil {
		return false, fmt.Errorf("sqlite: rewrap data key %s %s: %w", old.Log, old.Epoch, mapErr(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: rewrap data key %s %s: %w", old.Log, old.Epoch, err)
	}
	return n == 1, nil
}

// CountDataKeysByKEK returns the number of live data keys per KEK id.
func (db *DB) CountDataKeysByKEK(ctx context.Context) (map[string]int64, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT kek_id, count(*) FROM data_keys WHERE destroyed_ms = 0 GROUP BY kek_id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count data keys: %w", err)
	}
	type count struct {
		id string
		n  int64
	}
	cs, err := collect(rows, func(row interface{ Scan(...any) error }) (count, error) {
		var c count
		return c, row.Scan(&c.id, &c.n)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(cs))
	for _, c := range cs {
		out[c.id] = c.n
	}
	return out, nil
}
