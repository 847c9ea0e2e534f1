package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// tickStmts are the statements a seal runs for the project-streams of a tick,
// prepared once on the writer connection: with many project-streams in a tick,
// parsing their text again each time was a visible part of the seal's CPU (the
// profile's sqlite3RunParser, yy_reduce), and so was running one statement per stream
// (tickrows.go).
type tickStmts struct {
	// update advances checkpoints if they are still at the sizes the seal read.
	update *rowStmts
	// batch inserts batch rows, batchRecent into batches_recent (recent.go).
	batch, batchRecent *rowStmts
	// ids finds which (log, event_id) pairs events holds (recent.go).
	ids *rowStmts
	// lastTime reads the receive time of a project-stream's last event (noteTimes).
	lastTime *sql.Stmt
	// addObject records a payload object's key, objectID reads its number (objectIDs).
	addObject, objectID *sql.Stmt
	// version reads the writer's data_version (sealcache.go).
	version *sql.Stmt
}

// updateCols and batchCols are the parameters per row of tickStmts.update and batch.
const (
	updateCols      = 7
	batchCols       = 7
	batchRecentCols = 8
	idCols          = 2
)

// updateStatement advances the checkpoints of rows project-streams, each row of
// VALUES being (log number, old size, new size, root, compact range, ms, published
// size). A row whose checkpoint is no longer at the old size matches
// nothing, so the rows affected say whether every checkpoint was where the seal found
// it. The published size this handle holds in memory rides along (published.go): the
// row is rewritten anyway, and the published-size writer then has nothing to write
// for the stream.
func updateStatement(rows int) string {
	return `UPDATE checkpoints SET size = v.column3, root = v.column4, compact_range = v.column5, updated_ms = v.column6,
		published_size = max(published_size, v.column7)
		FROM (VALUES ` + valuesRows(rows, updateCols) + `) AS v
		WHERE checkpoints.log = v.column1 AND checkpoints.size = v.column2`
}

func batchStatement(rows int) string {
	return `INSERT INTO batches(k, count, batch_id, created_ms, object, payload_offset, payload_length)
		VALUES ` + valuesRows(rows, batchCols)
}

func batchRecentStatement(rows int) string {
	return `INSERT INTO batches_recent(log, first_seq, count, batch_id, created_ms, object, payload_offset, payload_length)
		VALUES ` + valuesRows(rows, batchRecentCols)
}

// idsStatement returns the (log, event_id) pairs of rows rows of VALUES that events
// holds, through its unique index.
func idsStatement(rows int) string {
	return `SELECT e.log, e.event_id FROM (VALUES ` + valuesRows(rows, idCols) + `) AS v
		JOIN events e ON e.log = v.column1 AND e.event_id = v.column2`
}

func (st *tickStmts) prepare(ctx context.Context, w *sql.DB) error {
	var err error
	if st.update, err = prepareRows(ctx, w, updateCols, updateStatement); err != nil {
		return err
	}
	for _, p := range []struct {
		to   **rowStmts
		cols int
		text func(int) string
	}{{&st.batch, batchCols, batchStatement}, {&st.batchRecent, batchRecentCols, batchRecentStatement}, {&st.ids, idCols, idsStatement}} {
		if *p.to, err = prepareRows(ctx, w, p.cols, p.text); err != nil {
			st.close()
			return err
		}
	}
	for _, s := range []struct {
		to   **sql.Stmt
		text string
	}{
		{&st.lastTime, `SELECT coalesce((SELECT received_ms FROM events WHERE k = ?1), (SELECT received_ms FROM events_recent WHERE k = ?1))`},
		{&st.version, `PRAGMA data_version`},
		{&st.addObject, `INSERT INTO payload_objects(name) VALUES (?1) ON CONFLICT (name) DO NOTHING`},
		{&st.objectID, `SELECT id FROM payload_objects WHERE name = ?1`},
	} {
		if *s.to, err = w.PrepareContext(ctx, s.text); err != nil {
			st.close()
			return fmt.Errorf("sqlite: prepare %q: %w", s.text, err)
		}
	}
	return nil
}

func (st *tickStmts) close() {
	st.update.close()
	st.batch.close()
	st.batchRecent.close()
	st.ids.close()
	for _, s := range []**sql.Stmt{&st.lastTime, &st.version, &st.addObject, &st.objectID} {
		if *s != nil {
			(*s).Close()
			*s = nil
		}
	}
}
