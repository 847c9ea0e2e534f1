package mail

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// The mail tests run the real stack: a catalog (SQLite, or PostgreSQL with a pool per
// replica), the sequencer over an in-memory object store, the control plane, and
// mailpit as the SMTP server.

// clock is the fake time of a test, shared by its replicas.
type clock = stacktest.Clock

// replica is one service's mail side with the control plane that writes its settings.
type replica struct {
	db     catalog.Catalog
	seq    *sequencer.Sequencer
	ctl    *control.Service
	queue  *Queue
	digest *Digester
}

// world is the shared state of a test: the service key, the clock and mailpit.
type world struct {
	t     *testing.T
	ctx   context.Context
	key   ed25519.PrivateKey
	pub   ed25519.PublicKey
	clock *clock
	pit   *testenv.Mailpit
	kek   keyring.Wrapper
}

func newWorld(t *testing.T) *world {
	t.Helper()
	pub, key, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kekBytes := make([]byte, 32)
	_, _ = rand.Read(kekBytes)
	kek, err := keyring.NewFileKEK(kekBytes)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: context.Background(), key: key, pub: pub, pit: testenv.StartMailpit(t),
		clock: stacktest.NewClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)), kek: kek}
}

// smtp returns a sender to the world's mailpit with STARTTLS and AUTH.
func (w *world) smtp() *SMTP {
	w.t.Helper()
	s, err := NewSMTP(SMTPConfig{Addr: w.pit.SMTPAddr, From: "sealtrail@mail.test", Username: testenv.MailpitUser,
		Password: testenv.MailpitPassword, RootCAs: w.pit.RootCAs, Timeout: 10 * time.Second})
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// replica builds a replica on db, which may be shared with another replica.
func (w *world) replica(db catalog.Catalog, store *mem.Store) *replica {
	t := w.t
	t.Helper()
	seq, err := sequencer.New(sequencer.Config{Catalog: db, Store: store, Keyring: keyring.New(db, w.kek, keyring.Options{}),
		Origin: "mail.test", Key: w.key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := seq.Close(ctx); err != nil {
			t.Errorf("close sequencer: %v", err)
		}
	})
	q, err := NewQueue(db, w.smtp(), QueueConfig{Now: w.clock.Now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDigester(db, seq, q, DigestConfig{Origin: "mail.test", Key: w.key, Now: w.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &replica{db: db, seq: seq, ctl: control.New(db, seq, nil), queue: q, digest: d}
}

// twoReplicas returns two replicas on one catalog of the given kind.
func (w *world) twoReplicas(kind string) (*replica, *replica) {
	t := w.t
	t.Helper()
	store := mem.New()
	switch kind {
	case "sqlite":
		// One process per SQLite file (docs/catalog.md): the two replicas share the
		// catalog handle and the sequencer, and each has its own queue and digester.
		db, err := sqlite.Open(w.ctx, filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		a := w.replica(db, store)
		b := *a
		var qerr, derr error
		b.queue, qerr = NewQueue(db, w.smtp(), QueueConfig{Now: w.clock.Now, Lease: time.Minute})
		b.digest, derr = NewDigester(db, a.seq, b.queue, DigestConfig{Origin: "mail.test", Key: w.key, Now: w.clock.Now})
		if qerr != nil || derr != nil {
			t.Fatal(qerr, derr)
		}
		return a, &b
	case "postgres":
		dsn := testenv.PostgresDB(t)
		var rs []*replica
		for range 2 {
			db, err := postgres.Open(w.ctx, dsn, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			rs = append(rs, w.replica(db, store))
		}
		return rs[0], rs[1]
	}
	t.Fatalf("unknown catalog %q", kind)
	return nil, nil
}

// both runs f on each replica at once and waits.
func both(a, b *replica, f func(r *replica)) {
	var wg sync.WaitGroup
	for _, r := range []*replica{a, b} {
		wg.Go(func() { f(r) })
	}
	wg.Wait()
}
