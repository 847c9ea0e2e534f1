package anchor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

const testOrigin = "anchor.test"

// eachCatalog runs fn on a fresh catalog of each driver.
func eachCatalog(t *testing.T, fn func(t *testing.T, db catalog.Catalog)) {
	t.Run("sqlite", func(t *testing.T) {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		fn(t, db)
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := postgres.Open(context.Background(), testenv.PostgresDB(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		fn(t, db)
	})
}

func testKey(t testing.TB) ed25519.PrivateKey {
	_, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// grow seals n more events into each of logs (creating the projects as needed).
func grow(t *testing.T, db catalog.Catalog, n int, logs ...catalog.LogID) {
	t.Helper()
	ctx := context.Background()
	for _, l := range logs {
		if _, err := db.Project(ctx, l.ProjectID); err != nil {
			if _, err := db.CreateProject(ctx, catalog.Project{ID: l.ProjectID, Name: l.ProjectID}); err != nil {
				t.Fatal(err)
			}
		}
		catalogtest.Seal(t, db, l, fmt.Sprintf("%s-%d", l, time.Now().UnixNano()), n)
	}
}

func logsN(n int) []catalog.LogID {
	out := make([]catalog.LogID, n)
	for i := range out {
		out[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_%04d", i/2), Stream: []catalog.Stream{catalog.StreamEvents, catalog.StreamProjectAudit}[i%2]}
	}
	return out
}

// checkLog checks the tree_heads log as a whole: one leaf per recorded head, the
// objects in the store hold exactly the leaves the catalog holds and verify against
// the published checkpoint, and no stream has two heads of one size. It returns the
// committed state.
func checkLog(t *testing.T, db catalog.Catalog, store tiles.Store, pub ed25519.PublicKey) catalog.TreeHeadsLog {
	t.Helper()
	ctx := context.Background()
	st, err := db.TreeHeadsLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.PublishedSize != st.Size {
		t.Fatalf("tree_heads published %d of %d", st.PublishedSize, st.Size)
	}
	if st.Size == 0 {
		return st
	}
	note, err := tiles.ReadCheckpoint(ctx, store, Prefix)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := tlog.OpenCheckpoint(pub, tlog.TreeHeadsOrigin(testOrigin), note)
	if err != nil || cp.Size != st.Size || cp.Root != st.Root {
		t.Fatalf("checkpoint %+v, %v; want size %d root %x", cp, err, st.Size, st.Root)
	}
	heads, err := db.TreeHeadsFrom(ctx, 0, int(st.Size)+1)
	if err != nil || uint64(len(heads)) != st.Size {
		t.Fatalf("%d heads in the catalog (%v), log size %d", len(heads), err, st.Size)
	}
	rb := tlog.NewRootBuilder()
	seen := map[string]bool{}
	rd := tiles.NewReader(store, Prefix, tiles.Tree{Size: st.Size, Root: st.Root}, nil)
	for i, h := range heads {
		key := fmt.Sprint(h.Log, h.TreeSize)
		if seen[key] || h.Index != uint64(i) {
			t.Fatalf("head %d: %s twice, or index %d", i, key, h.Index)
		}
		seen[key] = true
		sth := headSTH(h)
		if err := tlog.VerifySTH(pub, &sth); err != nil {
			t.Fatalf("head %d: %v", i, err)
		}
		leaf, err := tlog.TreeHeadLeaf(&sth)
		if err != nil {
			t.Fatal(err)
		}
		rb.Append(tlog.LeafHash(leaf))
		if i%tiles.TileWidth == 0 {
			bundle, err := rd.EntryBundle(ctx, uint64(i/tiles.TileWidth))
			if err != nil || string(bundle[0]) != string(leaf) {
				t.Fatalf("entry bundle of leaf %d: %v", i, err)
			}
		}
	}
	if rb.Root() != st.Root {
		t.Fatal("the catalog's heads do not hash to the committed tree_heads root")
	}
	return st
}

// proofOf parses the anchor proof of h.
func proofOf(t *testing.T, h catalog.TreeHead) tlog.AnchorProof {
	t.Helper()
	if h.Anchor == nil {
		t.Fatalf("head %s %d has no anchor", h.Log, h.TreeSize)
	}
	var p tlog.AnchorProof
	if err := json.Unmarshal(h.Anchor.Proof, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
