package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// rowSizes are the row counts of a rowStmts' prepared statements, largest first: n
// rows run as n/256 statements of 256 rows, then the rest in statements of 32, 4 and
// 1 row (at most 7 + 7 + 3 more). A tick of many project-streams writes one row per
// stream into several tables; a statement per row was a visible part of a seal's CPU
// (each Exec's setup in database/sql and the driver), and an unprepared one parsed
// its text every time.
var rowSizes = [...]int{256, 32, 4, 1}

// rowStmts is one multi-row statement prepared once per row count of rowSizes, on
// one connection's pool (the writer's or the term indexer's).
type rowStmts struct {
	cols  int // parameters per row
	stmts [len(rowSizes)]*sql.Stmt
}

// prepareRows prepares text(rows) for every row count of rowSizes; text returns a
// statement with cols parameters per row.
func prepareRows(ctx context.Context, db *sql.DB, cols int, text func(rows int) string) (*rowStmts, error) {
	rs := &rowStmts{cols: cols}
	for i, rows := range rowSizes {
		s, err := db.PrepareContext(ctx, text(rows))
		if err != nil {
			rs.close()
			return nil, fmt.Errorf("sqlite: prepare %d-row %.40q: %w", rows, text(1), err)
		}
		rs.stmts[i] = s
	}
	return rs, nil
}

func (rs *rowStmts) close() {
	if rs == nil {
		return
	}
	for i, s := range rs.stmts {
		if s != nil {
			s.Close()
			rs.stmts[i] = nil
		}
	}
}

// exec runs the statements for rows rows in tx, appending row i's parameters (cols of
// them) with args, and returns the rows the statements affected in all.
func (rs *rowStmts) exec(ctx context.Context, tx *sql.Tx, rows int, args func(i int, to []any) []any) (int64, error) {
	var affected int64
	err := rs.run(ctx, tx, rows, args, func(stmt *sql.Stmt, a []any) error {
		res, err := stmt.ExecContext(ctx, a...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		affected += n
		return err
	})
	return affected, err
}

// query is exec for a statement that returns rows: each gets every row of every
// statement.
func (rs *rowStmts) query(ctx context.Context, tx *sql.Tx, rows int, args func(i int, to []any) []any, each func(*sql.Rows) error) error {
	return rs.run(ctx, tx, rows, args, func(stmt *sql.Stmt, a []any) error {
		r, err := stmt.QueryContext(ctx, a...)
		return forRows(r, err, each)
	})
}

// run calls do with each statement for rows rows and its parameters.
func (rs *rowStmts) run(ctx context.Context, tx *sql.Tx, rows int, args func(i int, to []any) []any, do func(*sql.Stmt, []any) error) error {
	buf := make([]any, 0, rs.cols*min(rows, rowSizes[0]))
	i := 0
	for k, size := range rowSizes {
		if rows-i < size {
			continue
		}
		stmt := tx.StmtContext(ctx, rs.stmts[k])
		for ; rows-i >= size; i += size {
			buf = buf[:0]
			for j := i; j < i+size; j++ {
				buf = args(j, buf)
			}
			if err := do(stmt, buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// valuesRows returns rows groups of cols placeholders, "(?,?),(?,?)" for cols 2 and rows 2.
func valuesRows(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}
