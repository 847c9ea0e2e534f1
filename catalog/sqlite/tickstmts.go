package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// tickStmts are the statements a seal runs once per project-stream of a tick, prepared
// once on the writer connection: with many project-streams in a tick, parsing their
// text again each time was a visible part of the seal's CPU (the profile's
// sqlite3RunParser, yy_reduce).
type tickStmts struct {
	// update advances a checkpoint if it is still at the size the seal read.
	update *sql.Stmt
	// lastTime reads the receive time of a project-stream's last event (noteTimes).
	lastTime *sql.Stmt
	// batch inserts a batch row.
	batch *sql.Stmt
}

func (st *tickStmts) prepare(ctx context.Context, w *sql.DB) error {
	for _, s := range []struct {
		to   **sql.Stmt
		text string
	}{
		{&st.update, `UPDATE checkpoints SET size = ?, root = ?, compact_range = ?, updated_ms = ?
			WHERE project_id = ? AND stream = ? AND size = ?`},
		{&st.lastTime, `SELECT received_ms FROM events WHERE k = ?`},
		{&st.batch, `INSERT INTO batches(project_id, stream, first_seq, count, batch_id, created_ms, payload_object, payload_offset, payload_length)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
	} {
		var err error
		if *s.to, err = w.PrepareContext(ctx, s.text); err != nil {
			st.close()
			return fmt.Errorf("sqlite: prepare %q: %w", s.text, err)
		}
	}
	return nil
}

func (st *tickStmts) close() {
	for _, s := range []**sql.Stmt{&st.update, &st.lastTime, &st.batch} {
		if *s != nil {
			(*s).Close()
			*s = nil
		}
	}
}
