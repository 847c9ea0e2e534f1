package sequencer

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// tamperSize is the log the tamper tests build: three entry bundles, the last
// partial. tamperSeq is the event they edit, inside the second (full) bundle.
const (
	tamperSize = 600
	tamperSeq  = 300
)

// TestRebuildDetectsTampering edits storage behind the service's back, one edit per
// subtest, and checks that the full rebuild reports the break the edit must cause:
// its reason and its sequence. It runs on the embedded catalog and, when available,
// PostgreSQL; the store is the filesystem, edited by rewriting its files.
func TestRebuildDetectsTampering(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				edit   func(e *tamperEnv)
				reason string
				seq    uint64
				// unkeyed, when set, is the break a rebuild without the customer's
				// public keys must still report.
				unkeyed string
			}{
				// A deleted index row: the rebuild finds row 301 where 300 was due.
				{"deleted index row", func(e *tamperEnv) {
					e.exec(`DELETE FROM events WHERE project_id = ? AND stream = ? AND seq = ?`, tamperSeq)
				}, tlog.BreakSequenceGap, tamperSeq, ""},
				// A flipped ciphertext byte: the payload no longer decrypts (AES-GCM).
				{"payload ciphertext", func(e *tamperEnv) {
					e.editPayloadRecord(func(r *tiles.PayloadRecord) {
						r.Ciphertext = append([]byte(nil), r.Ciphertext...)
						r.Ciphertext[len(r.Ciphertext)-1] ^= 1
					})
				}, tlog.BreakContentTampered, tamperSeq, ""},
				// Two edits: the rebuild reads rows and objects ahead of the workers that
				// decrypt them, so it meets the deleted row 500 before a worker finds
				// the ciphertext of 300 broken; the first break is still 300's.
				{"payload ciphertext, then a deleted index row", func(e *tamperEnv) {
					e.editPayloadRecord(func(r *tiles.PayloadRecord) {
						r.Ciphertext = append([]byte(nil), r.Ciphertext...)
						r.Ciphertext[len(r.Ciphertext)-1] ^= 1
					})
					e.exec(`DELETE FROM events WHERE project_id = ? AND stream = ? AND seq = ?`, tamperSeq+200)
				}, tlog.BreakContentTampered, tamperSeq, ""},
				// A leaf changed in the entry bundle mirrors read: it no longer equals
				// the leaf the batch sealed.
				{"entry bundle", func(e *tamperEnv) {
					e.editEntry(func(l *tlog.Leaf) { l.Timestamp = "2001-01-01T00:00:00.000Z" })
				}, tlog.BreakLeafMismatch, tamperSeq, ""},
				// The customer signature replaced by a valid-looking signature of
				// another key over the same message. For the signature check to be
				// the first to fail, every other copy of the leaf is made consistent:
				// the entry bundle and the payload bundle hold the re-signed leaf, and
				// the index row holds its leaf hash; the commitment and the
				// ciphertext (bound to sequence and id) are untouched. Only the hash
				// tiles still hold the original leaf hash, so a rebuild without the
				// customer's keys reports root_mismatch at the same sequence.
				{"customer signature", func(e *tamperEnv) {
					_, other, _ := tlog.GenerateKey()
					data := e.editEntry(func(l *tlog.Leaf) { l.Signature = tlog.SignEvent(other, l.ID, l.PayloadHash) })
					e.editPayloadRecord(func(r *tiles.PayloadRecord) { r.LeafData = data })
					lh := tlog.LeafHash(data)
					e.exec(`UPDATE events SET leaf_hash = ? WHERE project_id = ? AND stream = ? AND seq = ?`, lh[:], tamperSeq)
				}, tlog.BreakInvalidClientSignature, tamperSeq, tlog.BreakRootMismatch},
				// A changed hash in a level-0 tile: the tiles no longer authenticate
				// against the committed root, reported at the tree size.
				{"hash tile", func(e *tamperEnv) {
					key := e.key("tile/0/001")
					data := e.read(key)
					data[(tamperSeq-1-256)*32] ^= 1
					e.write(key, data)
				}, tlog.BreakRootMismatch, tamperSize, ""},
				// A checkpoint note that the service key did not sign.
				{"checkpoint note", func(e *tamperEnv) {
					_, other, _ := tlog.GenerateKey()
					note, err := tlog.SignCheckpoint(other, tlog.CheckpointOrigin(testOrigin, stackLog.ProjectID, string(stackLog.Stream)),
						tamperSize, e.tree.Root)
					if err != nil {
						e.t.Fatal(err)
					}
					e.write(e.key(tiles.CheckpointPath), note)
				}, tlog.BreakRootMismatch, tamperSize, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					e := newTamperEnv(t, kind)
					tc.edit(e)
					e.expectBreak(e.cfg.signingKeys, tc.reason, tc.seq)
					if tc.unkeyed != "" {
						e.expectBreak(nil, tc.unkeyed, tc.seq)
					}
				})
			}
		})
	}
}

// tamperEnv is a sealed log of tamperSize customer-signed events and the means to
// edit its storage directly.
type tamperEnv struct {
	t    *testing.T
	cfg  stackConfig
	st   *stack
	tree tiles.Tree
}

func newTamperEnv(t *testing.T, kind string) *tamperEnv {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "catalog.db")
	if kind == "postgres" {
		dsn = testenv.PostgresDB(t)
	}
	cfg := newStackConfig(t, kind, dsn, dir)
	st := mustOpenStack(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := cfg.clientKey()
	// Several batches of concurrent submissions.
	for first := 0; first < tamperSize; first += 150 {
		var wg sync.WaitGroup
		errs := make(chan error, 150)
		for i := first; i < first+150; i++ {
			wg.Go(func() {
				if _, err := st.seq.Submit(ctx, stackLog, tagEntry(client, 2*uint64(i+1))); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	e := &tamperEnv{t: t, cfg: cfg, st: st}
	var err error
	if e.tree, err = st.seq.Tree(ctx, stackLog); err != nil || e.tree.Size != tamperSize {
		t.Fatalf("tree %+v, %v", e.tree, err)
	}
	e.expectBreak(cfg.signingKeys, "", 0)
	return e
}

// expectBreak rebuilds and checks the first break (none when reason is "").
func (e *tamperEnv) expectBreak(keys func(string) []ed25519.PublicKey, reason string, seq uint64) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.st.seq.Rebuild(ctx, stackLog, keys)
	if err != nil {
		e.t.Fatalf("rebuild could not run: %v", err)
	}
	switch {
	case reason == "" && res.Break != nil:
		e.t.Fatalf("untouched log: rebuild reports %+v", res.Break)
	case reason == "" && (res.Root != e.tree.Root || res.Checked != e.tree.Size):
		e.t.Fatalf("untouched log: rebuilt %d leaves, root %s; live %+v", res.Checked, tlog.Hex(res.Root), e.tree)
	case reason != "" && res.Break == nil:
		e.t.Fatalf("rebuild (keys %v) found no break; want %s at %d", keys != nil, reason, seq)
	case reason != "" && (res.Break.Reason != reason || res.Break.Sequence != seq):
		e.t.Fatalf("rebuild (keys %v) reports %s at %d (%s); want %s at %d", keys != nil,
			res.Break.Reason, res.Break.Sequence, res.Break.Detail, reason, seq)
	}
}

func (e *tamperEnv) key(path string) string { return prefixOf(stackLog).Key(path) }

func (e *tamperEnv) file(key string) string {
	return filepath.Join(e.cfg.Store, filepath.FromSlash(key))
}

func (e *tamperEnv) read(key string) []byte {
	e.t.Helper()
	data, err := os.ReadFile(e.file(key))
	if err != nil {
		e.t.Fatal(err)
	}
	return data
}

func (e *tamperEnv) write(key string, data []byte) {
	e.t.Helper()
	if err := os.WriteFile(e.file(key), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// editPayloadRecord rewrites tamperSeq's record in its batch's payload bundle.
func (e *tamperEnv) editPayloadRecord(f func(*tiles.PayloadRecord)) {
	e.t.Helper()
	bs, err := e.st.cat.BatchesCovering(context.Background(), stackLog, tamperSeq, tamperSeq)
	if err != nil || len(bs) != 1 {
		e.t.Fatalf("batch of %d: %v, %v", tamperSeq, bs, err)
	}
	ref, err := batchRef(stackLog, bs[0])
	if err != nil {
		e.t.Fatal(err)
	}
	obj := e.read(ref.Key)
	seg := obj
	if ref.Len > 0 {
		seg = obj[ref.Off : ref.Off+ref.Len]
	}
	var pb tiles.PayloadBundle
	if err := pb.UnmarshalBinary(seg); err != nil {
		e.t.Fatal(err)
	}
	f(&pb.Records[tamperSeq-bs[0].First])
	data, err := pb.MarshalCompact()
	if err != nil {
		e.t.Fatal(err)
	}
	if len(data) != len(seg) {
		e.t.Fatalf("the edited bundle is %d bytes, the original %d", len(data), len(seg))
	}
	if ref.Len > 0 { // splice the segment back into the tick's group object
		data = append(append(append([]byte(nil), obj[:ref.Off]...), data...), obj[ref.Off+ref.Len:]...)
	}
	e.write(ref.Key, data)
}

// editEntry rewrites tamperSeq's leaf in its full entry bundle and returns the new
// leaf data.
func (e *tamperEnv) editEntry(f func(*tlog.Leaf)) []byte {
	e.t.Helper()
	key := e.key("tile/entries/001")
	entries, err := tiles.ParseEntryBundle(e.read(key), tiles.TileWidth)
	if err != nil {
		e.t.Fatal(err)
	}
	i := (tamperSeq - 1) % tiles.TileWidth
	leaf, err := tlog.DecodeLeaf(entries[i])
	if err != nil || leaf.Sequence != tamperSeq {
		e.t.Fatalf("entry %d: %+v, %v", i, leaf, err)
	}
	f(&leaf)
	entries[i] = leaf.Encode()
	data, err := tiles.MarshalEntryBundle(entries)
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(key, data)
	return entries[i]
}

// exec runs one statement on the catalog's database, bypassing the catalog; the
// project id and stream of stackLog are bound after the statement's first argument
// when the statement names them. Placeholders are written "?".
func (e *tamperEnv) exec(query string, args ...any) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := []any{}
	if strings.HasPrefix(query, "UPDATE") {
		all = append(all, args[0])
		args = args[1:]
	}
	all = append(all, stackLog.ProjectID, string(stackLog.Stream))
	all = append(all, args...)
	var n int64
	switch e.cfg.Catalog {
	case "sqlite":
		db, err := sql.Open("sqlite", "file:"+e.cfg.DSN+"?_pragma=busy_timeout(10000)")
		if err != nil {
			e.t.Fatal(err)
		}
		defer db.Close()
		// The embedded catalog keys an event by its project-stream's number and
		// sequence (catalog/sqlite/logs.go).
		query = strings.Replace(query, "project_id = ? AND stream = ? AND seq = ?",
			"k = ((SELECT id FROM logs WHERE project_id = ? AND stream = ?) << 40) | ?", 1)
		res, err := db.ExecContext(ctx, query, all...)
		if err != nil {
			e.t.Fatal(err)
		}
		n, _ = res.RowsAffected()
	default:
		conn, err := pgx.Connect(ctx, e.cfg.DSN)
		if err != nil {
			e.t.Fatal(err)
		}
		defer conn.Close(ctx)
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i), 1)
		}
		tag, err := conn.Exec(ctx, query, all...)
		if err != nil {
			e.t.Fatal(err)
		}
		n = tag.RowsAffected()
	}
	if n != 1 {
		e.t.Fatalf("%s changed %d rows, want 1", query, n)
	}
}
