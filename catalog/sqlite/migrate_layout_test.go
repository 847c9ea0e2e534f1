package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// writeBefore creates a catalog file at path with every migration before version
// applied and recorded, as a binary of that schema left it.
func writeBefore(t *testing.T, path, version string) *sql.DB {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	c.SetMaxOpenConns(1)
	t.Cleanup(func() { c.Close() })
	if _, err := c.Exec(`CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_ms INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, name := range names {
		v := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		if v >= version {
			break
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(string(body)); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if _, err := c.Exec(`INSERT INTO schema_migrations(version, applied_ms) VALUES (?, ?)`, v, time.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// openMigrated closes c, the connection that wrote the old file at path, and opens
// the catalog there, which applies the migrations it lacks.
func openMigrated(t *testing.T, c *sql.DB, path string) *DB {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return openAt(t, path)
}

// TestMigrateCompactBatches opens a catalog of schema version 17 whose batch rows,
// merged and recent, name group payload objects, their own objects and the same
// object from several streams, and checks that migration 0018 kept every batch as it
// was (BatchesCovering answers the same, before and after a merge), numbered each
// object key once, and left a catalog whose recent rows still merge.
func TestMigrateCompactBatches(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v17.db")
	c := writeBefore(t, path, "0018_compact_batches")
	logA := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	logB := catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamProjectAudit}
	const objX, objY = "payload/20261127T23/1764287000001-00000000000000000000000a", "payload/20261127T23/1764287000002-00000000000000000000000b"
	created := time.UnixMilli(1764287000123).UTC()
	batch := func(log catalog.LogID, first, count uint64, id, object string, off, n uint64) catalog.Batch {
		b := catalog.Batch{Log: log, First: first, Count: count, BatchID: id, CreatedAt: created}
		if object != "" {
			b.Object, b.Offset, b.Length = object, off, n
		}
		return b
	}
	// prj_b is numbered first, so a key's log number is not the name order.
	for _, l := range []catalog.LogID{logB, logA} {
		if _, err := c.Exec(`INSERT INTO logs(project_id, stream) VALUES (?, ?)`, l.ProjectID, string(l.Stream)); err != nil {
			t.Fatal(err)
		}
	}
	merged := []catalog.Batch{
		batch(logA, 1, 3, "b1", objX, 0, 100),
		batch(logA, 4, 2, "b2", "", 0, 0), // its own payload object
		batch(logA, 6, 4, "b3", objY, 100, 50),
		batch(logB, 1, 1, "c1", objX, 100, 40),
	}
	recent := []catalog.Batch{
		batch(logA, 10, 2, "b4", objY, 150, 60),
		batch(logB, 2, 5, "c2", objY, 210, 80),
	}
	column := func(b catalog.Batch) any {
		if b.Object == "" {
			return nil
		}
		return b.Object
	}
	for _, b := range merged {
		off, n := any(nil), any(nil)
		if b.Object != "" {
			off, n = int64(b.Offset), int64(b.Length)
		}
		if _, err := c.Exec(`INSERT INTO batches(project_id, stream, first_seq, count, batch_id, created_ms, payload_object, payload_offset, payload_length)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, b.Log.ProjectID, string(b.Log.Stream), int64(b.First), int64(b.Count), b.BatchID,
			created.UnixMilli(), column(b), off, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range recent {
		if _, err := c.Exec(`INSERT INTO batches_recent(log, first_seq, count, batch_id, created_ms, payload_object, payload_offset, payload_length)
			SELECT id, ?, ?, ?, ?, ?, ?, ? FROM logs WHERE project_id = ? AND stream = ?`, int64(b.First), int64(b.Count), b.BatchID,
			created.UnixMilli(), column(b), int64(b.Offset), int64(b.Length), b.Log.ProjectID, string(b.Log.Stream)); err != nil {
			t.Fatal(err)
		}
	}
	db := openMigrated(t, c, path)
	db.stopMerger()
	want := map[catalog.LogID][]catalog.Batch{}
	for _, b := range append(slices.Clone(merged), recent...) {
		want[b.Log] = append(want[b.Log], b)
	}
	check := func(stage string) {
		t.Helper()
		for log, bs := range want {
			last := bs[len(bs)-1].End() - 1
			got, err := db.BatchesCovering(ctx, log, 1, last)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, bs) {
				t.Fatalf("%s: batches of %s:\n got %+v\nwant %+v", stage, log, got, bs)
			}
			for _, b := range bs { // each sequence finds its batch alone
				for s := b.First; s < b.End(); s++ {
					if got, err := db.BatchesCovering(ctx, log, s, s); err != nil || len(got) != 1 || got[0] != b {
						t.Fatalf("%s: batch of %s sequence %d = %+v (%v), want %+v", stage, log, s, got, err, b)
					}
				}
			}
		}
	}
	check("after the migration")
	var objects int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM payload_objects`).Scan(&objects); err != nil || objects != 2 {
		t.Fatalf("%d payload objects (%v), want 2", objects, err)
	}
	if err := db.mergeRecent(ctx); err != nil {
		t.Fatal(err)
	}
	if events, batches, err := RecentRows(ctx, db); err != nil || events != 0 || batches != 0 {
		t.Fatalf("%d events and %d batches in the recent tables after the merge (%v)", events, batches, err)
	}
	check("after a merge")
}

// TestMigrateCheckpointsByLog opens a catalog of schema version 18 with a sealed and
// published stream, a stream behind its publication and a stream never sealed, their
// numbers not in name order, and checks that migration 0019 kept every checkpoint as
// it was (Checkpoint, the group read and ListUnpublished answer the same), and that
// the stream never sealed seals on and the one behind publishes on.
func TestMigrateCheckpointsByLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v18.db")
	c := writeBefore(t, path, "0019_checkpoints_by_log")
	at := func(s int64) time.Time { return time.UnixMilli(1764287000000 + s).UTC() }
	hs := func(s string, n int) []catalog.Hash {
		out := make([]catalog.Hash, n)
		for i := range out {
			out[i] = catalog.Hash(sha256.Sum256(fmt.Appendf(nil, "%s %d", s, i)))
		}
		return out
	}
	want := []catalog.Checkpoint{
		{Log: catalog.LogID{ProjectID: "prj_z", Stream: catalog.StreamEvents}, Size: 5, Root: hs("root z", 1)[0], Range: hs("z", 2),
			PublishedSize: 5, CreatedAt: at(1), UpdatedAt: at(2)},
		{Log: catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamProjectAudit}, Size: 7, Root: hs("root a", 1)[0], Range: hs("a", 3),
			PublishedSize: 4, CreatedAt: at(3), UpdatedAt: at(4)},
		{Log: catalog.LogID{ProjectID: "prj_m", Stream: catalog.StreamEvents}, CreatedAt: at(5), UpdatedAt: at(5)}, // never sealed
	}
	for _, cp := range want {
		var root any // NULL while empty, as a seal leaves it
		if cp.Size > 0 {
			root = cp.Root[:]
		}
		if _, err := c.Exec(`INSERT INTO logs(project_id, stream) VALUES (?, ?)`, cp.Log.ProjectID, string(cp.Log.Stream)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(`INSERT INTO checkpoints(project_id, stream, size, root, compact_range, published_size, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cp.Log.ProjectID, string(cp.Log.Stream), int64(cp.Size), root,
			catalog.JoinHashes(cp.Range), int64(cp.PublishedSize), cp.CreatedAt.UnixMilli(), cp.UpdatedAt.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	db := openMigrated(t, c, path)
	same := func(what string, got, want catalog.Checkpoint) {
		t.Helper()
		if got.Log != want.Log || got.Size != want.Size || got.Root != want.Root || !slices.Equal(got.Range, want.Range) ||
			got.PublishedSize != want.PublishedSize || !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
	logs := make([]catalog.LogID, len(want))
	for i, w := range want {
		logs[i] = w.Log
		got, err := db.Checkpoint(ctx, w.Log)
		if err != nil {
			t.Fatal(err)
		}
		same("Checkpoint", got, w)
	}
	cps, found, err := db.checkpoints(ctx, logs)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if !found[i] {
			t.Fatalf("group read: %s not found", w.Log)
		}
		same("group read", cps[i], w)
	}
	behind, err := db.ListUnpublished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(behind) != 1 {
		t.Fatalf("ListUnpublished = %+v, want %s alone", behind, want[1].Log)
	}
	same("ListUnpublished", behind[0], want[1])
	if _, err := db.Checkpoint(ctx, catalog.LogID{ProjectID: "prj_none", Stream: catalog.StreamEvents}); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Checkpoint of a stream never created: %v, want ErrNotFound", err)
	}
	if cp := catalogtest.Seal(t, db, want[2].Log, "m", 3); cp.Size != 3 {
		t.Fatalf("size %d after sealing 3 events on %s", cp.Size, want[2].Log)
	}
	if _, err := db.Publish(ctx, want[1].Log, func(context.Context, catalog.Checkpoint) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// The handle's flusher writes the new published size to the file shortly after.
	waitStored(t, db.r, want[1].Log, int64(want[1].Size))
	if behind, err := db.ListUnpublished(ctx); err != nil || len(behind) != 1 || behind[0].Log != want[2].Log {
		t.Fatalf("ListUnpublished after publishing %s and sealing %s = %+v (%v)", want[1].Log, want[2].Log, behind, err)
	}
}
