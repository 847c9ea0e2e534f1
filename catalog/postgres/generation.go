package postgres

import (
	"context"
	"fmt"
)

// ControlGeneration returns the control-plane generation: a number that rises with
// every row change to projects, API keys, signing keys or suspensions, from any
// replica (triggers of migration 0012), so that a cache of those rows is current while
// it is unchanged.
func (db *DB) ControlGeneration(ctx context.Context) (int64, error) {
	var n int64
	if err := db.pool.QueryRow(ctx, `SELECT n FROM control_generation WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: control generation: %w", mapErr(err))
	}
	return n, nil
}
