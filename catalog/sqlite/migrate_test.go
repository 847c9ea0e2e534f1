package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// v1Log is a project-stream as TestMigrateFromV1 writes it in a version-1 file.
type v1Log struct {
	log       catalog.LogID
	events    []catalog.Event
	published uint64
	created   time.Time
	updated   time.Time
	num       int64 // the number migration 0002 must give it
}

func (l *v1Log) root() catalog.Hash {
	if len(l.events) == 0 {
		return catalog.Hash{}
	}
	return catalogtest.H("v1 root " + l.log.String())
}

func (l *v1Log) rng() []catalog.Hash {
	var out []catalog.Hash
	for i := range min(len(l.events), 3) {
		out = append(out, catalogtest.H(fmt.Sprintf("v1 range %s %d", l.log, i)))
	}
	return out
}

// writeV1 creates a catalog file at path as a version-1 binary left it: only
// migrations/0001_init.sql applied and recorded, and logs' checkpoints, batches and
// events in the version-1 tables.
func writeV1(t *testing.T, path string, logs []*v1Log) {
	t.Helper()
	body, err := migrations.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := c.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(string(body))
	exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_ms INTEGER NOT NULL)`)
	exec(`INSERT INTO schema_migrations(version, applied_ms) VALUES (?, ?)`, "0001_init", time.Now().UnixMilli())
	for _, l := range logs {
		var root any // NULL while empty, as a version-1 seal left it
		if len(l.events) > 0 {
			r := l.root()
			root = r[:]
		}
		exec(`INSERT INTO checkpoints(project_id, stream, size, root, compact_range, published_size, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, l.log.ProjectID, string(l.log.Stream), len(l.events), root,
			catalog.JoinHashes(l.rng()), l.published, l.created.UnixMilli(), l.updated.UnixMilli())
		if len(l.events) > 0 {
			exec(`INSERT INTO batches(project_id, stream, first_seq, count, batch_id, created_ms) VALUES (?, ?, 1, ?, ?, ?)`,
				l.log.ProjectID, string(l.log.Stream), len(l.events), "v1batch", l.updated.UnixMilli())
		}
		// Rows in reverse order: the migration must order them by key itself.
		for i := len(l.events) - 1; i >= 0; i-- {
			e := l.events[i]
			exec(`INSERT INTO events(project_id, stream, seq, event_id, received_ms, action, status, actor_type, actor_id,
				target_type, target_id, payload_hash, leaf_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				l.log.ProjectID, string(l.log.Stream), int64(e.Sequence), e.ID, e.ReceivedAt.UnixMilli(), e.Action, e.Status,
				e.ActorType, e.ActorID, e.TargetType, e.TargetID, e.PayloadHash[:], e.LeafHash[:])
		}
	}
}

// TestMigrateFromV1 opens a catalog written by version 1 of the schema and checks
// that migration 0002 kept every event, checkpoint and batch, numbered the
// project-streams, and left a catalog that seals on from where it was.
func TestMigrateFromV1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	at := func(s int) time.Time { return time.UnixMilli(termBase.UnixMilli() + int64(s)*1000 + 7).UTC() }
	// Written out of (project, stream) order; num is the order migration 0002 numbers
	// them in. Every log uses the same event ids.
	logs := []*v1Log{
		{log: catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamEvents}, events: genEvents(31, "e", 40), published: 2,
			created: at(1), updated: at(2), num: 3},
		{log: catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamProjectAudit}, events: orderTimes(genEvents(32, "e", 3)), published: 3,
			created: at(3), updated: at(4), num: 2},
		{log: catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}, events: genEvents(33, "e", 120),
			created: at(5), updated: at(6), num: 1},
		{log: catalog.LogID{ProjectID: "prj_c", Stream: catalog.StreamEvents}, // created, never sealed
			created: at(7), updated: at(7), num: 4},
	}
	writeV1(t, path, logs)
	byLog := map[catalog.LogID][]catalog.Event{}
	for _, l := range logs {
		byLog[l.log] = l.events
	}
	logA, logC := logs[2], logs[3]

	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	db.terms.hold(true)

	var versions []string
	if err := eachRow(ctx, db.r, `SELECT version FROM schema_migrations ORDER BY version`, nil, func(r *sql.Rows) error {
		var v string
		err := r.Scan(&v)
		versions = append(versions, v)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(versions, []string{"0001_init", "0002_compact_events", "0003_time_bounds", "0004_project_rate_limit", "0006_retention"}) {
		t.Fatalf("schema_migrations = %v", versions)
	}
	var catalogID string
	if err := db.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = 'catalog_id'`).Scan(&catalogID); err != nil || len(catalogID) != 32 {
		t.Fatalf("catalog_id %q, %v", catalogID, err)
	}

	// Numbers, and every row under its key.
	var wantKeys, gotKeys []int64
	for _, l := range logs {
		if n := mustLogNum(t, db, l.log); n != l.num {
			t.Errorf("%s has number %d, want %d", l.log, n, l.num)
		}
		for _, e := range l.events {
			wantKeys = append(wantKeys, key(l.num, e.Sequence))
		}
	}
	slices.Sort(wantKeys)
	// Migration 0003 marks the logs whose receive times rise with the sequence: the
	// one sorted above and the one with no events.
	for _, l := range logs {
		sorted := slices.IsSortedFunc(l.events, func(a, b catalog.Event) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
		if got := timesOrdered(t, db, l.log); got != sorted {
			t.Errorf("times_ordered of %s = %v, want %v", l.log, got, sorted)
		}
	}
	if !timesOrdered(t, db, logs[1].log) || timesOrdered(t, db, logs[0].log) {
		t.Errorf("the test's logs do not cover both values of times_ordered")
	}
	if err := eachRow(ctx, db.r, `SELECT k, log FROM events ORDER BY k`, nil, func(r *sql.Rows) error {
		var k, n int64
		if err := r.Scan(&k, &n); err != nil {
			return err
		}
		if k>>seqBits != n {
			t.Errorf("row k=%d has log %d", k, n)
		}
		gotKeys = append(gotKeys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotKeys, wantKeys) {
		t.Fatalf("event keys %v\nwant %v", gotKeys, wantKeys)
	}

	checkEvents := func(t *testing.T) {
		t.Helper()
		for _, l := range logs {
			for _, e := range l.events {
				got, err := db.EventByID(ctx, l.log, e.ID)
				if err != nil || got != e {
					t.Fatalf("EventByID(%s, %s) = %+v, %v\nwant %+v", l.log, e.ID, got, err, e)
				}
			}
			ids := []string{"missing"}
			for _, e := range l.events {
				ids = append(ids, e.ID)
			}
			got, err := db.EventsByID(ctx, l.log, ids)
			if err != nil || len(got) != len(l.events) {
				t.Fatalf("EventsByID(%s) found %d of %d, %v", l.log, len(got), len(l.events), err)
			}
			for _, e := range l.events {
				if got[e.ID] != e {
					t.Fatalf("EventsByID(%s)[%s] = %+v\nwant %+v", l.log, e.ID, got[e.ID], e)
				}
			}
			for _, q := range []catalog.Query{{}, {Descending: true}} {
				q.Log, q.Limit = l.log, catalog.MaxLimit
				if !pageThrough(t, db, q, expected(l.events, q)) {
					t.FailNow()
				}
			}
			checkQueries(t, db, l.log, l.events, []catalog.Query{
				{ActorID: "u2"}, {TargetID: "d3", Status: "success"}, {Action: "read"},
				{Entity: &catalog.Entity{Type: "user", ID: "u1"}},
				{Entity: &catalog.Entity{Type: "doc", ID: "d2"}, Direction: catalog.DirectionIncoming},
			}, 2, 4)
		}
		if _, err := db.EventByID(ctx, logs[1].log, "e40"); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("EventByID of an id of another log: %v, want ErrNotFound", err)
		}
	}
	t.Run("events before indexing", checkEvents)

	for _, l := range logs {
		cp, err := db.Checkpoint(ctx, l.log)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Log != l.log || cp.Size != uint64(len(l.events)) || cp.Root != l.root() || !slices.Equal(cp.Range, l.rng()) ||
			cp.PublishedSize != l.published || !cp.CreatedAt.Equal(l.created) || !cp.UpdatedAt.Equal(l.updated) {
			t.Errorf("checkpoint %+v\nwant size %d root %x range %d published %d created %v updated %v", cp,
				len(l.events), l.root(), len(l.rng()), l.published, l.created, l.updated)
		}
		if len(l.events) > 0 {
			bs, err := db.BatchesCovering(ctx, l.log, 1, 1)
			if err != nil || len(bs) != 1 || bs[0].First != 1 || bs[0].Count != uint64(len(l.events)) ||
				bs[0].BatchID != "v1batch" || !bs[0].CreatedAt.Equal(l.updated) {
				t.Errorf("BatchesCovering(%s) = %+v, %v", l.log, bs, err)
			}
		}
	}
	un, err := db.ListUnpublished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var unLogs []catalog.LogID
	for _, cp := range un {
		unLogs = append(unLogs, cp.Log)
	}
	if !slices.Equal(unLogs, []catalog.LogID{logA.log, logs[0].log}) {
		t.Errorf("ListUnpublished = %v, want %v and %v", unLogs, logA.log, logs[0].log)
	}

	db.terms.hold(false)
	if err := db.terms.catchUp(); err != nil {
		t.Fatal(err)
	}
	for log, w := range checkTermsConsistent(t, db, byLog) {
		if w != uint64(len(byLog[log])) {
			t.Errorf("watermark of %s = %d after catchUp, want %d", log, w, len(byLog[log]))
		}
	}
	t.Run("events after indexing", checkEvents)

	// Sealing goes on after the migrated events, ids stay unique per log, and new
	// project-streams get the next numbers.
	next := genEvents(34, "n", len(logA.events)+5)[len(logA.events):]
	sealBatches(t, db, logA.log, next, 2, 3)
	logA.events = append(logA.events, next...)
	_, err = db.Seal(ctx, logA.log, func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		e := genEvents(35, "x", int(cp.Size)+1)[cp.Size]
		e.ID = "e7" // a migrated event's id
		return &catalog.SealBatch{BatchID: "dup", Events: []catalog.Event{e}}, nil
	})
	if !errors.Is(err, catalog.ErrExists) {
		t.Errorf("sealing a migrated event id again: %v, want ErrExists", err)
	}
	if cp, err := db.Checkpoint(ctx, logA.log); err != nil || cp.Size != uint64(len(logA.events)) {
		t.Errorf("checkpoint after the seals: %+v, %v; want size %d", cp, err, len(logA.events))
	}
	logC.events = genEvents(36, "c", 4)
	sealBatches(t, db, logC.log, logC.events, 4)
	logD := catalog.LogID{ProjectID: "prj_d", Stream: catalog.StreamEvents}
	sealBatches(t, db, logD, genEvents(37, "d", 1), 1)
	if n := mustLogNum(t, db, logD); n != 5 {
		t.Errorf("new project-stream has number %d, want 5", n)
	}
	byLog[logA.log], byLog[logC.log], byLog[logD] = logA.events, logC.events, genEvents(37, "d", 1)
	if err := db.terms.catchUp(); err != nil {
		t.Fatal(err)
	}
	checkTermsConsistent(t, db, byLog)
	t.Run("events after sealing", checkEvents)

	// Reopening runs no migration again.
	db.Close()
	closed = true
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed = false
	var id2 string
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT (SELECT value FROM meta WHERE name = 'catalog_id'), (SELECT count(*) FROM schema_migrations)`).Scan(&id2, &n); err != nil {
		t.Fatal(err)
	}
	if id2 != catalogID || n != len(versions) {
		t.Errorf("after reopening: catalog_id %q (was %q), %d migrations recorded", id2, catalogID, n)
	}
	t.Run("events after reopening", checkEvents)
}
