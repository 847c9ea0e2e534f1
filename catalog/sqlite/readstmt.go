package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts holds prepared statements of the hot one-row reads (the checkpoint and
// an event by id, which every inclusion proof runs): in this SQLite, preparing such a
// statement costs about as much as running it, and while it runs it holds one of the
// few reader connections that every request waits for. database/sql prepares a
// statement once per reader connection and keeps it.
type readStmts struct {
	mu     sync.Mutex
	m      map[stmtKey]*sql.Stmt
	closed bool
}

// stmtKey names a statement prepared on a pool (tests swap the readers).
type stmtKey struct {
	pool  *sql.DB
	query string
}

// queryRow runs the one-row read q on the readers through its prepared statement. A
// statement that cannot be prepared runs unprepared, where the same error surfaces.
func (db *DB) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := db.readStmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.r.QueryRowContext(ctx, q, args...)
}

// query is queryRow for a read of any number of rows.
func (db *DB) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := db.readStmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.r.QueryContext(ctx, q, args...)
}

// readStmt returns the prepared statement of q on the readers, preparing it the first
// time, or nil if it cannot be prepared (or the statements are closed).
func (db *DB) readStmt(ctx context.Context, q string) *sql.Stmt {
	s := &db.stmts
	key := stmtKey{db.r, q}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[key]
	if !ok && !s.closed {
		var err error
		if st, err = db.r.PrepareContext(ctx, q); err == nil {
			if s.m == nil {
				s.m = map[stmtKey]*sql.Stmt{}
			}
			s.m[key] = st
		}
	}
	return st
}

// close closes the prepared statements; later reads run unprepared.
func (s *readStmts) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		st.Close()
	}
	s.m, s.closed = nil, true
}
