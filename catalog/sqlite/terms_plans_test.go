package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// planRecorder is a connector that records the statements run through it, so the
// plans of the statements QueryEvents really builds can be checked.
type planRecorder struct {
	c driver.Connector

	mu    sync.Mutex
	stmts []recordedStmt
}

type recordedStmt struct {
	query string
	args  []any
}

func (p *planRecorder) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := p.c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, p: p}, nil
}

func (p *planRecorder) Driver() driver.Driver { return p.c.Driver() }

func (p *planRecorder) take() []recordedStmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stmts
	p.stmts = nil
	return s
}

type recordingConn struct {
	driver.Conn
	p *planRecorder
}

func (c *recordingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	c.p.mu.Lock()
	c.p.stmts = append(c.p.stmts, recordedStmt{query, vals})
	c.p.mu.Unlock()
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *recordingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return nil, fmt.Errorf("planRecorder: unexpected prepared statement %q", query)
}

func (c *recordingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *recordingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if nc, ok := c.Conn.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *recordingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// planCase is a read a plan test runs, with substrings the plans of its statements
// must hold between them.
type planCase struct {
	name string
	run  func(db *DB) error
	want []string
}

// checkPlans records the statements each case runs and checks that SQLite plans every
// one as index or rowid-range searches: no SCAN, which reads a whole table or index,
// and no SEARCH on the log number alone, which reads every event of the log (and then
// sorts them, since only the rowid order is the order of a page). So a schema or query
// change that loses an index, or a plan that stops using it, fails here.
func checkPlans(t *testing.T, cases []planCase) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.terms.hold(true)
	sealBatches(t, db, termLogB, genEvents(22, "e", 50), 50)
	// Log A's receive times rise with the sequence, as the sequencer's do, so time
	// filters on it search for sequence bounds (times.go).
	sealBatches(t, db, termLogA, orderTimes(genEvents(21, "e", 500)), 500)
	sealBatches(t, db, termLogC, genEvents(23, "e", 50), 50)
	// Index part of log A, so term-driven queries run both their parts.
	if err := db.terms.index(ctx, mustLogNum(t, db, termLogA), 250); err != nil {
		t.Fatal(err)
	}

	rec := &planRecorder{c: &attachConnector{dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=query_only(1)",
		name: "terms", path: path + "-terms"}}
	reader := db.r
	db.r = sql.OpenDB(rec)
	defer func() {
		db.r.Close()
		db.r = reader
	}()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.take()
			if err := tc.run(db); err != nil {
				t.Fatal(err)
			}
			stmts := rec.take()
			if len(stmts) == 0 {
				t.Fatal("no statement recorded")
			}
			var all strings.Builder
			for _, s := range stmts {
				plan := explain(t, reader, s)
				t.Logf("%s\n%s", strings.Join(strings.Fields(s.query), " "), plan)
				all.WriteString(plan)
				for _, line := range strings.Split(plan, "\n") {
					d := strings.TrimSpace(line)
					// SCAN bisect is the binary search's own queue, one row at a time,
					// and SCAN CONSTANT ROW its first row.
					if strings.HasPrefix(d, "SCAN ") && d != "SCAN bisect" && d != "SCAN CONSTANT ROW" || strings.HasSuffix(d, "(log=?)") {
						t.Errorf("%q reads a whole table, index or log, in the plan of\n%s\n%s", d, s.query, plan)
					}
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(all.String(), w) {
					t.Errorf("no plan uses %q:\n%s", w, all.String())
				}
			}
		})
	}
}

// TestQueryPlans checks the plans of the statements of the main read paths: by event
// id, by action, status and time range, and driven by the term index.
func TestQueryPlans(t *testing.T) {
	u1 := &catalog.Entity{Type: "user", ID: "u1"}
	const (
		// segSearch is the walk of the term index's segments of a log in order,
		// termSearch the walk of one term's postings in a segment in order, and
		// rowSearch the look-up of each sequence's row.
		segSearch  = "SEARCH terms.term_segments USING PRIMARY KEY (log=? AND lo"
		termSearch = "SEARCH terms.term_postings USING PRIMARY KEY (log=? AND seg=? AND kind=? AND value=? AND last>?"
		rowSearch  = "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"
		// tailSearch is the scan of the events past the watermark.
		tailSearch = "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
		idSearch   = "SEARCH e USING INDEX events_id (log=? AND event_id=?)"
		// boundSearch is a step of the binary search for a time bound, in each table.
		boundSearch       = "SEARCH events USING INTEGER PRIMARY KEY (rowid=?)"
		boundSearchRecent = "SEARCH events_recent USING INDEX events_recent_k (k=?)"
	)
	checkPlans(t, []planCase{
		{"event by id", func(db *DB) error { _, err := db.EventByID(context.Background(), termLogA, "e17"); return err },
			[]string{idSearch}},
		{"events by id", func(db *DB) error {
			_, err := db.EventsByID(context.Background(), termLogA, []string{"e1", "e2", "e300"})
			return err
		}, []string{idSearch}},
		{"action", planQuery(catalog.Query{Action: "write", Cursor: 20}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"status", planQuery(catalog.Query{Status: "failed", Descending: true}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"status from cursor", planQuery(catalog.Query{Status: "failed", Descending: true, Cursor: 300}),
			[]string{segSearch, termSearch, rowSearch, tailSearch}},
		{"time range", planQuery(catalog.Query{From: termBase.Add(10 * time.Minute), To: termBase.Add(11 * time.Minute)}),
			[]string{boundSearch, boundSearchRecent, tailSearch}},
		{"action and time", planQuery(catalog.Query{Action: "read", From: termBase.Add(10 * time.Minute)}),
			[]string{boundSearch, boundSearchRecent, segSearch, termSearch, rowSearch, tailSearch}},
		{"action and status", planQuery(catalog.Query{Action: "read", Status: "failed"}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"actor", planQuery(catalog.Query{ActorID: "u1"}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"target descending", planQuery(catalog.Query{TargetID: "d1", Descending: true}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"actor and status", planQuery(catalog.Query{ActorID: "u2", Status: "success", Cursor: 100}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"entity all", planQuery(catalog.Query{Entity: u1}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"entity outgoing", planQuery(catalog.Query{Entity: u1, Direction: catalog.DirectionOutgoing}), []string{segSearch, termSearch, rowSearch, tailSearch}},
		{"entity incoming", planQuery(catalog.Query{Entity: u1, Direction: catalog.DirectionIncoming, Descending: true}),
			[]string{segSearch, termSearch, rowSearch, tailSearch}},
		{"checkpoint", func(db *DB) error { _, err := db.Checkpoint(context.Background(), termLogA); return err }, nil},
		{"batches covering", func(db *DB) error { _, err := db.BatchesCovering(context.Background(), termLogA, 3, 9); return err }, nil},
	})
}

// TestQueryPlansUnfiltered checks the plan of a page with no filter, the default
// listing (GET /api/v1/events: newest first): it must walk the log's rowid range and
// stop after a page.
func TestQueryPlansUnfiltered(t *testing.T) {
	const rangeSearch = "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
	checkPlans(t, []planCase{
		{"all", planQuery(catalog.Query{}), []string{rangeSearch}},
		{"all descending", planQuery(catalog.Query{Descending: true}), []string{rangeSearch}},
		{"all from cursor", planQuery(catalog.Query{Cursor: 300}), []string{rangeSearch}},
		{"all descending from cursor", planQuery(catalog.Query{Descending: true, Cursor: 300}), []string{rangeSearch}},
	})
}

// planQuery returns a run function for the query shape on log A.
func planQuery(query catalog.Query) func(db *DB) error {
	return func(db *DB) error {
		query.Log, query.Limit = termLogA, 20
		_, err := db.QueryEvents(context.Background(), query)
		return err
	}
}

// explain returns the plan of s, one detail per line.
func explain(t *testing.T, r *sql.DB, s recordedStmt) string {
	t.Helper()
	var b strings.Builder
	err := eachRow(context.Background(), r, `EXPLAIN QUERY PLAN `+s.query, s.args, func(rows *sql.Rows) error {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return err
		}
		b.WriteString(detail)
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", s.query, err)
	}
	return b.String()
}
