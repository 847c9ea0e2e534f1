package postgres

import (
	"context"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
)

// DataKeysNotWrappedBy returns up to limit live data keys whose KEK is not kekID, in
// (project, stream, epoch) order after after's (keyring.RewrapStore).
func (db *DB) DataKeysNotWrappedBy(ctx context.Context, kekID string, after catalog.DataKey, limit int) ([]catalog.DataKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+dataKeyCols+` FROM data_keys WHERE destroyed_at IS NULL AND kek_id <> $1
		AND (project_id, stream, epoch) > ($2, $3, $4) ORDER BY project_id, stream, epoch LIMIT $5`,
		kekID, after.Log.ProjectID, string(after.Log.Stream), after.Epoch, catalog.ClampLimit(limit))
	ks, err := collect(rows, err, scanDataKey)
	if err != nil {
		return nil, fmt.Errorf("postgres: data keys to rewrap: %w", err)
	}
	return ks, nil
}

// RewrapDataKey replaces old's wrapped bytes and KEK id if the row is still live and
// unchanged, and reports whether it did (keyring.RewrapStore).
func (db *DB) RewrapDataKey(ctx context.Context, old catalog.DataKey, kekID string, wrapped []byte) (bool, error) {
	if kekID == "" || len(wrapped) == 0 {
		return false, fmt.Errorf("%w: rewrap needs a KEK id and wrapped bytes", catalog.ErrInvalid)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE data_keys SET kek_id = $6, wrapped = $7
		WHERE project_id = $1 AND stream = $2 AND epoch = $3 AND key_id = $4 AND kek_id = $5 AND destroyed_at IS NULL`,
		old.Log.ProjectID, string(old.Log.Stream), old.Epoch, old.KeyID, old.KEKID, kekID, wrapped)
	if err != nil {
		return false, fmt.Errorf("postgres: rewrap data key %s %s: %w", old.Log, old.Epoch, mapErr(err))
	}
	return tag.RowsAffected() == 1, nil
}

// CountDataKeysByKEK returns the number of live data keys per KEK id.
func (db *DB) CountDataKeysByKEK(ctx context.Context) (map[string]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT kek_id, count(*) FROM data_keys WHERE destroyed_at IS NULL GROUP BY kek_id`)
	out := map[string]int64{}
	_, err = collect(rows, err, func(row scanner) (struct{}, error) {
		var (
			id string
			n  int64
		)
		err := row.Scan(&id, &n)
		out[id] = n
		return struct{}{}, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: count data keys: %w", err)
	}
	return out, nil
}
