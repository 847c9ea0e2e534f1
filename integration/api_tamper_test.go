package integration

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", to edit the embedded catalog

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// tamperSeq is the sequence every tampering edits (of tamperEvents).
const (
	tamperSeq    = 3
	tamperEvents = 6
)

// tamperCase is one way of editing storage behind the service's back, and what the
// service and the offline verifier must say about it.
type tamperCase struct {
	name   string
	edit   func(t *testing.T, st *sealedStream)
	reason string // the service's /verify break
	seq    uint64 // its sequence
	// offline is what `sealtrail verify full` on a fresh export says: "" when it agrees
	// with the service; "passes" when the export, re-derived from storage the edit did
	// not touch, still verifies against the trusted root; "no export" when the export
	// itself fails (500).
	offline string
}

// TestAPITamperRoundTrip seals a stream of signed events, stops the service, edits
// storage directly in each of the five ways of the spec's ChainBreak table, restarts
// it, and checks that GET /verify names the right reason and sequence in a signed
// receipt, and what `sealtrail verify full` says of a fresh export against the root
// signed before the edit.
func TestAPITamperRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []tamperCase{
		{"delete an index row", deleteIndexRow(tamperSeq), tlog.BreakSequenceGap, tamperSeq, ""},
		{"delete the last index row", deleteIndexRow(tamperEvents), tlog.BreakSequenceGap, tamperEvents, ""},
		{"flip a ciphertext byte", flipCiphertext, tlog.BreakContentTampered, tamperSeq, "no export"},
		{"change an entry bundle", changeEntryBundle, tlog.BreakLeafMismatch, tamperSeq, "passes"},
		{"replace a customer signature", replaceSignature, tlog.BreakInvalidClientSignature, tamperSeq, ""},
		{"change a hash tile", changeHashTile, tlog.BreakRootMismatch, tamperEvents, "passes"},
	}
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		bin := buildVerifier(t, t.TempDir())
		for _, tc := range cases {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				cc := c
				if c.dsn != "" {
					cc.dsn = testenv.PostgresDB(t) // each edit on fresh storage
				}
				runTamper(t, cc, bin, tc)
			})
		}
	})
}

// sealedStream is a stopped service's storage, as the tamper edits see it.
type sealedStream struct {
	dataDir string
	dsn     string
	pid     string
	signer  ed25519.PrivateKey
	ids     []string
}

func (st *sealedStream) objects(path string) string {
	return filepath.Join(st.dataDir, "objects", st.pid, "events", filepath.FromSlash(path))
}

func runTamper(t *testing.T, c apiCatalog, bin string, tc tamperCase) {
	dir := t.TempDir()
	s := startServer(t, serveOpts{dir: dir, env: c.env()})
	p := s.newProject("tamper")
	keyID, priv := s.addSigningKey(p.id)
	st := &sealedStream{dataDir: s.dataDir, dsn: c.dsn, pid: p.id, signer: priv}
	for i := range tamperEvents {
		st.ids = append(st.ids, s.mustPost(p.all, signedEvent(t, priv, keyID, event(fmt.Sprint("sealed.", i), "alice"))))
	}
	trusted := s.sth(p.all, "events")
	if rec := s.receipt(p.all, "events"); !rec.Valid || trusted.TreeSize != tamperEvents {
		t.Fatalf("before tampering: %+v", rec)
	}
	s.stop()

	tc.edit(t, st)

	s = startServer(t, serveOpts{dir: dir, env: c.env()})
	rec := s.receipt(p.all, "events")
	if rec.Valid || rec.FirstBreak == nil || rec.FirstBreak.Reason != tc.reason || rec.FirstBreak.Sequence != tc.seq {
		t.Fatalf("/verify after %s: valid %v, break %+v; want %s at %d", tc.name, rec.Valid, rec.FirstBreak, tc.reason, tc.seq)
	}
	t.Logf("/verify: %s at %d: %s", rec.FirstBreak.Reason, rec.FirstBreak.Sequence, rec.FirstBreak.Detail)

	file := filepath.Join(dir, "export.ndjson")
	res, complete := s.download(p.all, "/export?format=json", file)
	if tc.offline == "no export" {
		// The payload no longer decrypts, so the export cannot re-derive the event:
		// it fails (500 before the first page; a cut-off download after it) rather
		// than leave the event out, so there is nothing for the offline verifier.
		if res.StatusCode != http.StatusInternalServerError {
			t.Fatalf("export of an undecryptable payload: %d, complete %v; want 500", res.StatusCode, complete)
		}
		s.stop()
		return
	}
	if !complete || res.StatusCode != http.StatusOK {
		t.Fatalf("export: %d complete %v", res.StatusCode, complete)
	}
	r := verifyFull(t, bin, file, trusted, priv)
	switch tc.offline {
	case "passes":
		if r.code != 0 {
			t.Fatalf("offline verify: exit %d, want 0 (the export does not contain the edited object)\n%s%s", r.code, r.stdout, r.stderr)
		}
		// The edited object is on the tlog read path, where a mirror sees it: the
		// served tile or bundle disagrees with the export at the edited leaf.
		if got := mirrorMismatch(t, s, p.all, exportLines(t, file)); got != tamperSeq {
			t.Fatalf("tlog read path: first mismatch at %d, want %d", got, tamperSeq)
		}
	default:
		want := fmt.Sprintf("%s at sequence %d", tc.reason, tc.seq)
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, want) {
			t.Fatalf("offline verify: exit %d, want 1 naming %q\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	s.stop()
}

// execSQL runs one statement on the stopped service's catalog.
func (st *sealedStream) execSQL(t *testing.T, query string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int64
	if st.dsn == "" {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(st.dataDir, "catalog.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// The embedded catalog keys an event by its project-stream's number and
		// sequence (catalog/sqlite/logs.go).
		query = strings.Replace(query, "project_id = ? AND stream = 'events' AND seq = ?",
			"k = ((SELECT id FROM logs WHERE project_id = ? AND stream = 'events') << 40) | ?", 1)
		res, err := db.ExecContext(ctx, query, args...)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		n, _ = res.RowsAffected()
	} else {
		conn, err := pgx.Connect(ctx, st.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for i := range args {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i+1), 1)
		}
		tag, err := conn.Exec(ctx, query, args...)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		n = tag.RowsAffected()
	}
	if n != 1 {
		t.Fatalf("%s changed %d rows, want 1", query, n)
	}
}

// deleteIndexRow deletes the catalog's index row of seq.
func deleteIndexRow(seq uint64) func(*testing.T, *sealedStream) {
	return func(t *testing.T, st *sealedStream) {
		st.execSQL(t, "DELETE FROM events WHERE project_id = ? AND stream = 'events' AND seq = ?", st.pid, seq)
	}
}

// payloadSeg is a payload bundle's place: its segment of a tick's group object.
type payloadSeg struct {
	file   string
	off, n int
}

// payloadBundle finds and decodes the payload bundle holding seq: a segment of one
// of the group payload objects (payload/<hour>/<ms>-<id> under the store root).
func (st *sealedStream) payloadBundle(t *testing.T, seq uint64) (payloadSeg, *tiles.PayloadBundle) {
	t.Helper()
	var (
		found payloadSeg
		got   *tiles.PayloadBundle
	)
	eachSegment(t, filepath.Join(st.dataDir, "objects", "payload", "*", "*"), func(seg payloadSeg, _ []byte, pb *tiles.PayloadBundle, leaf tlog.Leaf) bool {
		if leaf.ProjectID == st.pid && leaf.Stream == "events" && pb.First <= seq && seq < pb.First+uint64(len(pb.Records)) {
			found, got = seg, pb
			return false
		}
		return true
	})
	if got == nil {
		t.Fatalf("no payload bundle holds %d", seq)
	}
	return found, got
}

// eachSegment calls f with each segment of the group payload objects matching glob
// (files in name order, segments in file order), its bytes, its bundle and the
// bundle's first leaf, until f returns false.
func eachSegment(t *testing.T, glob string, f func(seg payloadSeg, data []byte, pb *tiles.PayloadBundle, leaf tlog.Leaf) bool) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("payload objects: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lens, err := tiles.SplitGroupPayload(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		off := 0
		for _, n := range lens {
			var pb tiles.PayloadBundle
			if err := pb.UnmarshalBinary(data[off : off+n]); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			leaf, err := tlog.DecodeLeaf(pb.Records[0].LeafData)
			if err != nil {
				t.Fatal(err)
			}
			if !f(payloadSeg{file: file, off: off, n: n}, data[off:off+n], &pb, leaf) {
				return
			}
			off += n
		}
	}
}

// writeBundle writes pb back over its segment, in the segment's version (the sequencer
// writes version 2, compact leaves), which must keep its length.
func writeBundle(t *testing.T, seg payloadSeg, pb *tiles.PayloadBundle) {
	t.Helper()
	all, err := os.ReadFile(seg.file)
	if err != nil {
		t.Fatal(err)
	}
	data, err := pb.MarshalBinary()
	if all[seg.off+7] == 2 {
		data, err = pb.MarshalCompact()
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != seg.n {
		t.Fatalf("the edited bundle is %d bytes, its segment %d", len(data), seg.n)
	}
	copy(all[seg.off:], data)
	if err := os.WriteFile(seg.file, all, 0o644); err != nil {
		t.Fatal(err)
	}
}

// flipCiphertext flips one byte of tamperSeq's ciphertext in its payload bundle.
func flipCiphertext(t *testing.T, st *sealedStream) { st.flipCiphertextAt(t, tamperSeq) }

// flipCiphertextAt flips one byte of seq's ciphertext in its payload bundle.
func (st *sealedStream) flipCiphertextAt(t *testing.T, seq uint64) {
	t.Helper()
	file, pb := st.payloadBundle(t, seq)
	ct := pb.Records[seq-pb.First].Ciphertext
	ct[len(ct)/2] ^= 0x01
	writeBundle(t, file, pb)
}

// entryBundle reads the entry bundle of the stream's first tamperEvents leaves.
func (st *sealedStream) entryBundle(t *testing.T) (string, [][]byte) {
	t.Helper()
	file := st.objects(fmt.Sprintf("tile/entries/000.p/%d", tamperEvents))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	es, err := tiles.ParseEntryBundle(data, tamperEvents)
	if err != nil {
		t.Fatal(err)
	}
	return file, es
}

func writeEntries(t *testing.T, file string, es [][]byte) {
	t.Helper()
	data, err := tiles.MarshalEntryBundle(es)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// changeEntryBundle changes tamperSeq's leaf in the entry bundle (its timestamp's
// year), leaving a leaf that still decodes.
func changeEntryBundle(t *testing.T, st *sealedStream) {
	file, es := st.entryBundle(t)
	leaf := es[tamperSeq-1]
	i := bytes.Index(leaf, []byte(`"timestamp":"20`))
	if i < 0 {
		t.Fatalf("leaf has no timestamp: %s", leaf)
	}
	leaf[i+len(`"timestamp":"20`)]++
	writeEntries(t, file, es)
}

// replaceSignature replaces tamperSeq's customer signature by a well-formed signature
// of the same key over another commitment, consistently in every place that stores
// the leaf: the entry bundle, the payload bundle and the catalog's leaf hash.
// Everything else still agrees, so the signature check is the first that fails.
func replaceSignature(t *testing.T, st *sealedStream) {
	file, pb := st.payloadBundle(t, tamperSeq)
	rec := &pb.Records[tamperSeq-pb.First]
	leaf, err := tlog.DecodeLeaf(rec.LeafData)
	if err != nil {
		t.Fatal(err)
	}
	forged := tlog.SignEvent(st.signer, leaf.ID, tlog.LeafHash([]byte("another commitment")))
	if len(forged) != len(leaf.Signature) || leaf.Signature == "" {
		t.Fatalf("signature %q", leaf.Signature)
	}
	newLeaf := bytes.Replace(rec.LeafData, []byte(leaf.Signature), []byte(forged), 1)
	entries, es := st.entryBundle(t)
	if !bytes.Equal(es[tamperSeq-1], rec.LeafData) {
		t.Fatal("entry bundle and payload bundle disagree before the edit")
	}
	rec.LeafData, es[tamperSeq-1] = newLeaf, newLeaf
	writeBundle(t, file, pb)
	writeEntries(t, entries, es)
	h := tlog.LeafHash(newLeaf)
	st.execSQL(t, "UPDATE events SET leaf_hash = ? WHERE project_id = ? AND stream = 'events' AND seq = ?", h[:], st.pid, tamperSeq)
}

// changeHashTile flips a bit of tamperSeq's leaf hash in the level-0 hash tile.
func changeHashTile(t *testing.T, st *sealedStream) {
	file := st.objects(fmt.Sprintf("tile/0/000.p/%d", tamperEvents))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[(tamperSeq-1)*tlog.HashSize] ^= 0x80
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// mirrorMismatch reads the stream's level-0 hash tile and entry bundle through the
// tlog read path, as a mirror would, and returns the first sequence where the tile's
// leaf hash, the hash of the bundle's leaf and the export's leafHash disagree (0 if
// none).
func mirrorMismatch(t *testing.T, s *server, token string, recs []tlog.Record) uint64 {
	t.Helper()
	n := len(recs)
	hs, err := tiles.ParseHashTile([]byte(s.mustGet(token, fmt.Sprintf("/tlog/events/tile/0/000.p/%d", n)).raw), n)
	if err != nil {
		t.Fatal(err)
	}
	es, err := tiles.ParseEntryBundle([]byte(s.mustGet(token, fmt.Sprintf("/tlog/events/tile/entries/000.p/%d", n)).raw), n)
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		if hs[i] != rec.LeafHash || tlog.LeafHash(es[i]) != rec.LeafHash {
			return uint64(i) + 1
		}
	}
	return 0
}
