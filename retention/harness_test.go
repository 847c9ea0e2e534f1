package retention_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/retention"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// clock is the fake clock every part of the stack reads.
type clock = stacktest.Clock

// stack is the real service stack over one catalog, an in-memory store and a fake
// clock.
type stack struct {
	cat   catalog.RetentionCatalog
	store tiles.Store
	kr    *keyring.Keyring
	seq   *sequencer.Sequencer
	ctl   *control.Service
	clock *clock
	job   *retention.Job
	key   ed25519.PrivateKey
}

var operator = control.Actor{Type: "operator", ID: "test"}

// catalogs opens a fresh catalog of each driver.
var catalogs = map[string]func(t testing.TB) catalog.RetentionCatalog{
	"sqlite": func(t testing.TB) catalog.RetentionCatalog {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	},
	"postgres": func(t testing.TB) catalog.RetentionCatalog {
		db, err := postgres.Open(context.Background(), testenv.PostgresDB(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	},
}

func newStack(t testing.TB, cat catalog.RetentionCatalog, start time.Time) *stack {
	t.Helper()
	kekBytes := make([]byte, 32)
	_, _ = rand.Read(kekBytes)
	return newStackWith(t, cat, mem.New(), kekBytes, start)
}

// newStackWith is newStack over a given store and key-encryption key.
func newStackWith(t testing.TB, cat catalog.RetentionCatalog, store tiles.Store, kekBytes []byte, start time.Time) *stack {
	t.Helper()
	kek, err := keyring.NewFileKEK(kekBytes)
	if err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(kekBytes) // any fixed key: the service key of this data
	c := stacktest.NewClock(start)
	st := &stack{cat: cat, store: store, clock: c, key: key}
	st.kr = keyring.New(cat, kek, keyring.Options{Now: c.Now})
	st.seq, err = sequencer.New(sequencer.Config{Catalog: cat, Store: st.store, Keyring: st.kr, Origin: "test.example",
		Key: key, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.seq.Close(context.Background()) })
	st.ctl = control.New(cat, st.seq, nil)
	st.job, err = retention.New(retention.Config{Catalog: cat, Reader: st.seq, Auditor: st.ctl, Keyring: st.kr,
		Store: st.store, Now: c.Now, Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// entry is an unsigned event naming actor user-n and target doc-n.
func entry(tb testing.TB, n int) sequencer.Entry {
	tb.Helper()
	payload := fmt.Sprintf(`{"action":"doc.read","actor":{"id":"user-%d","type":"user"},"metadata":{"n":%d},"target":{"id":"doc-%d","type":"doc"}}`, n, n, n)
	canon, err := tlog.Canonicalize([]byte(payload))
	if err != nil {
		tb.Fatal(err)
	}
	return sequencer.Entry{Payload: canon, Index: sequencer.Index{Action: "doc.read", Status: "success", ActorType: "user",
		ActorID: fmt.Sprintf("user-%d", n), TargetType: "doc", TargetID: fmt.Sprintf("doc-%d", n)}}
}

// submit seals one event of project p, signed with priv (and key id kid) when priv
// is not nil.
func (st *stack) submit(t *testing.T, p string, n int, priv ed25519.PrivateKey, kid string) sequencer.Result {
	t.Helper()
	e := entry(t, n)
	if priv != nil {
		nonce, err := tlog.NewNonce()
		if err != nil {
			t.Fatal(err)
		}
		id, err := tlog.NewEventID(st.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		e.ID, e.Nonce, e.SigningKeyID = id, &nonce, kid
		e.Signature = tlog.SignEvent(priv, id, tlog.Commitment(nonce, e.Payload))
	}
	res, err := st.seq.Submit(context.Background(), catalog.LogID{ProjectID: p, Stream: catalog.StreamEvents}, e)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// export returns the export lines of log, as /export writes them.
func (st *stack) export(t *testing.T, log catalog.LogID) [][]byte {
	t.Helper()
	ctx := context.Background()
	tree, err := st.seq.Materialize(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]uint64, tree.Size)
	for i := range seqs {
		seqs[i] = uint64(i) + 1
	}
	evs, err := st.seq.Events(ctx, log, seqs)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([][]byte, len(evs))
	for i := range evs {
		rec := evs[i].Record()
		if lines[i], err = tlog.EncodeStoredEvent(&rec); err != nil {
			t.Fatal(err)
		}
	}
	return lines
}

// auditRecords returns the payloads of the project's audit records with action.
func (st *stack) auditRecords(t *testing.T, p, action string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range st.export(t, catalog.LogID{ProjectID: p, Stream: catalog.StreamProjectAudit}) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if m["action"] == action {
			out = append(out, m)
		}
	}
	return out
}
