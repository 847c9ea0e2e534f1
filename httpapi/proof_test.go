package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// replicaOf returns a server over cat, kr and store with its own sequencer (so its
// own heads in memory), as a replica of the service: with the project and API key of
// a, or, if a is nil, of a new project with a key of every scope.
func replicaOf(t *testing.T, a *stack, cat catalog.Catalog, kr *keyring.Keyring, store *mem.Store) *stack {
	t.Helper()
	seq, key := stacktest.Sequencer(t, cat, "httpapi.test", func(c *sequencer.Config) { c.Store, c.Keyring = store, kr })
	ctl := control.New(cat, seq, nil)
	s, err := New(Config{Control: ctl, Sequencer: seq, Catalog: cat, Key: key, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{t: t, h: s.Handler(), srv: s}
	if a != nil {
		st.token, st.project = a.token, a.project
		return st
	}
	actor := control.Actor{Type: "operator", ID: "test"}
	p, err := ctl.CreateProject(context.Background(), actor, "p")
	if err != nil {
		t.Fatal(err)
	}
	st.project = p.ID
	if st.token, _, err = ctl.CreateAPIKey(context.Background(), actor, p.ID, "",
		[]string{catalog.ScopeWrite, catalog.ScopeRead, catalog.ScopeVerify}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	return st
}

// getJSON GETs target on s, wants 200 and decodes the body into v.
func (s *stack) getJSON(target string, v any) {
	s.t.Helper()
	code, body := s.do(http.MethodGet, target, "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), v) != nil {
		s.t.Fatalf("GET %s: %d %s", target, code, body)
	}
}

type servedProof struct {
	Stream              string
	LeafIndex, TreeSize uint64
	LeafHash            string
	Proof               []string
}

// verify checks p against the root of its tree size.
func (p servedProof) verify(t *testing.T, root string) {
	t.Helper()
	leaf, err := tlog.ParseHash(p.LeafHash)
	r, err2 := tlog.ParseHash(root)
	proof := make([]tlog.Hash, len(p.Proof))
	for i, h := range p.Proof {
		if proof[i], err = tlog.ParseHash(h); err != nil {
			break
		}
	}
	if err != nil || err2 != nil || tlog.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, proof, r) != nil {
		t.Fatalf("proof of leaf %d in tree %d does not verify against root %s (%v)", p.LeafIndex, p.TreeSize, root, err)
	}
}

// TestInclusionProofReplicas: on PostgreSQL two servers (replicas) share the catalog
// and the store; events are logged through one and each event's inclusion proof is
// asked of the other right after its acknowledgement: by id, by index, with and
// without treeSize, each verifying against the signed head /root of the replica asked,
// which must hold every event acknowledged before (docs/api-decisions.md). On SQLite
// (one process per file) the one server answers both parts, from its heads in memory.
func TestInclusionProofReplicas(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			cat := openCatalog(t, kind)
			store := mem.New()
			kr := keyring.New(cat, stacktest.KEK(t), keyring.Options{})
			a := replicaOf(t, nil, cat, kr, store)
			b := a // SQLite: one process (and one sequencer) per database file
			if kind == "postgres" {
				b = replicaOf(t, a, cat, kr, store)
			}
			for i := range 12 {
				w, r := a, b
				if i%3 == 2 { // now and then the other way round
					w, r = b, a
				}
				code, body := w.do(http.MethodPost, "/api/v1/log", fmt.Sprintf(`{"action":"doc.read","actor":{"type":"user","id":"u%d"}}`, i))
				var res ingestResult
				if code != http.StatusAccepted || json.Unmarshal([]byte(body), &res) != nil {
					t.Fatalf("log %d: %d %s", i, code, body)
				}
				var root struct{ STH tlog.STH }
				r.getJSON("/api/v1/root", &root)
				if root.STH.TreeSize != uint64(i+1) {
					t.Fatalf("the other replica's head after %d acknowledged events has size %d", i+1, root.STH.TreeSize)
				}
				var byID, sized, byIndex servedProof
				r.getJSON("/api/v1/proof/inclusion?eventId="+url.QueryEscape(res.ID), &byID)
				if byID.LeafIndex != uint64(i) || byID.TreeSize < root.STH.TreeSize {
					t.Fatalf("proof of the event just acknowledged: leaf %d, tree %d; want leaf %d in a tree of at least %d",
						byID.LeafIndex, byID.TreeSize, i, root.STH.TreeSize)
				}
				r.getJSON(fmt.Sprintf("/api/v1/proof/inclusion?eventId=%s&treeSize=%d", url.QueryEscape(res.ID), root.STH.TreeSize), &sized)
				sized.verify(t, root.STH.RootHash)
				if byID.TreeSize == root.STH.TreeSize {
					byID.verify(t, root.STH.RootHash)
				}
				if i > 0 { // an older leaf in an older head
					r.getJSON(fmt.Sprintf("/api/v1/proof/inclusion?leafIndex=%d&treeSize=%d", i/2, i), &byIndex)
					var cons struct{ Proof []string }
					r.getJSON(fmt.Sprintf("/api/v1/proof/consistency?oldSize=%d&newSize=%d", i, i+1), &cons)
					if byIndex.LeafIndex != uint64(i/2) || byIndex.TreeSize != uint64(i) || len(cons.Proof) == 0 {
						t.Fatalf("proof of leaf %d in tree %d: %+v; consistency %d to %d: %v", i/2, i, byIndex, i, i+1, cons.Proof)
					}
				}
			}
			// Out of range is 400 on either replica, whatever heads they hold; an
			// unknown id is 404.
			for _, s := range []*stack{a, b} {
				for target, want := range map[string]int{
					"/api/v1/proof/inclusion?leafIndex=12":                   http.StatusBadRequest,
					"/api/v1/proof/inclusion?leafIndex=18446744073709551615": http.StatusBadRequest,
					"/api/v1/proof/inclusion?leafIndex=3&treeSize=13":        http.StatusBadRequest,
					"/api/v1/proof/inclusion?leafIndex=3&treeSize=0":         http.StatusBadRequest,
					"/api/v1/proof/inclusion?leafIndex=5&treeSize=5":         http.StatusBadRequest,
					"/api/v1/proof/inclusion?eventId=evt_unknown":            http.StatusNotFound,
					"/api/v1/proof/consistency?oldSize=3&newSize=13":         http.StatusBadRequest,
				} {
					if code, body := s.do(http.MethodGet, target, ""); code != want {
						t.Fatalf("GET %s: %d %s, want %d", target, code, body, want)
					}
				}
			}
		})
	}
}
