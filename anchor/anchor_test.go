package anchor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestWitness runs the job against a real omniwitness: heads are appended, the
// checkpoint cosigned, and each head's anchor proof verifies offline; a later run
// proves consistency from the cosigned size, and a publisher that forgot the witness's
// size learns it from the 409.
func TestWitness(t *testing.T) {
	eachCatalog(t, func(t *testing.T, db catalog.Catalog) {
		ctx := context.Background()
		key := testKey(t)
		pub := key.Public().(ed25519.PublicKey)
		vkey, err := tlog.CheckpointVerifierKey(pub, tlog.TreeHeadsOrigin(testOrigin))
		if err != nil {
			t.Fatal(err)
		}
		w := testenv.Omniwitness(t, testenv.WitnessedLog{Origin: tlog.TreeHeadsOrigin(testOrigin), VerifierKey: vkey})
		store := mem.New()
		newJob := func() *Job {
			j, err := New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "h1"})
			if err != nil {
				t.Fatal(err)
			}
			wp, err := NewWitness(w.URL, w.VerifierKey, j.ConsistencyProof, nil)
			if err != nil {
				t.Fatal(err)
			}
			j.cfg.Publishers = []Publisher{wp}
			return j
		}
		j := newJob()
		logs := logsN(3)
		grow(t, db, 2, logs...)
		rep, err := j.RunOnce(ctx)
		if err != nil || !rep.Leased || rep.Appended != 3 || rep.Anchored != 3 || rep.Size != 3 {
			t.Fatalf("first run = %+v, %v", rep, err)
		}
		checkAnchors(t, db, pub, w.VerifierKey, logs, 3)

		grow(t, db, 1, logs[1])
		if rep, err = j.RunOnce(ctx); err != nil || rep.Appended != 1 || rep.Anchored != 1 || rep.Size != 4 {
			t.Fatalf("second run = %+v, %v", rep, err)
		}
		// Nothing grew: nothing appended, nothing published.
		if rep, err = j.RunOnce(ctx); err != nil || rep.Appended != 0 || rep.Anchored != 0 || rep.Size != 4 {
			t.Fatalf("idle run = %+v, %v", rep, err)
		}
		// A restarted replica's publisher starts from size 0; the witness's 409 tells it 4.
		j = newJob()
		grow(t, db, 1, logs[0], logs[2])
		if rep, err = j.RunOnce(ctx); err != nil || rep.Appended != 2 || rep.Anchored != 2 || rep.Size != 6 {
			t.Fatalf("run after restart = %+v, %v", rep, err)
		}
		checkLog(t, db, store, pub)
		checkAnchors(t, db, pub, w.VerifierKey, logs, 6)
	})
}

// checkAnchors checks that every recorded head of logs is anchored and that its
// proof verifies offline against the service key and the witness key, against a
// checkpoint of size at most maxSize.
func checkAnchors(t *testing.T, db catalog.Catalog, pub ed25519.PublicKey, witnessKey string, logs []catalog.LogID, maxSize uint64) {
	t.Helper()
	for _, l := range logs {
		hs, err := db.ListTreeHeads(context.Background(), l, 100)
		if err != nil || len(hs) == 0 {
			t.Fatalf("heads of %s: %v", l, err)
		}
		for _, h := range hs {
			p := proofOf(t, h)
			sth := headSTH(h)
			cp, err := tlog.CheckTreeHeadInclusion(&sth, &p, pub)
			if err != nil || cp.Size > maxSize {
				t.Fatalf("head %s %d: %+v, %v", l, h.TreeSize, cp, err)
			}
			if h.Anchor.Type != "witness" || len(p.External) != 1 || !strings.HasSuffix(h.Anchor.Ref, "@"+itoa(cp.Size)) {
				t.Fatalf("head %s %d anchor %+v", l, h.TreeSize, h.Anchor)
			}
			at, err := tlog.VerifyWitness([]byte(p.Checkpoint), p.External[0].Proof, []string{witnessKey})
			if err != nil || time.Since(at) > time.Hour || !h.Anchor.AnchoredAt.Equal(catalog.MS(at)) {
				t.Fatalf("witness proof of %s %d: at %v (anchoredAt %v), %v", l, h.TreeSize, at, h.Anchor.AnchoredAt, err)
			}
			// Another witness's key does not verify it.
			if _, err := tlog.VerifyWitness([]byte(p.Checkpoint), p.External[0].Proof, []string{strings.Replace(witnessKey, "sealtrail-test-witness", "other", 1)}); !errors.Is(err, tlog.ErrAnchor) {
				t.Fatalf("proof verified under another key name: %v", err)
			}
		}
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }
