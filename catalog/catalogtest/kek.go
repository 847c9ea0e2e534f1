package catalogtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/keyring"
)

// KEKCatalog is a catalog driver with the methods KEK rotation needs.
type KEKCatalog interface {
	catalog.Catalog
	keyring.RewrapStore
}

// KEKRotation checks rewrapping every data key under a new KEK on db, through a real
// keyring: old payloads stay readable throughout and afterwards without the old KEK, a
// run stopped half-way resumes, two runs at once move each key once, a key destroyed
// during a run stays destroyed, and a key under an unknown KEK stops the run.
func KEKRotation(t *testing.T, db KEKCatalog) {
	ctx := context.Background()
	kekA, kekB := newFileKEK(t), newFileKEK(t)
	logs := []catalog.LogID{
		{ProjectID: "prj_kek_a", Stream: catalog.StreamEvents},
		{ProjectID: "prj_kek_a", Stream: catalog.StreamProjectAudit},
		{ProjectID: "prj_kek_b", Stream: catalog.StreamEvents},
	}
	epochs := []string{"2026-08", "2026-09", "2026-10", "2026-11"}
	type sealed struct {
		log   catalog.LogID
		epoch string
		ct    []byte
	}
	var msgs []sealed
	old := keyring.New(db, kekA, keyring.Options{})
	for _, log := range logs {
		for _, e := range epochs {
			ct, err := old.Encrypt(ctx, log, e, []byte("payload "+log.String()+" "+e), []byte(e))
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, sealed{log, e, ct})
		}
	}
	if err := old.Destroy(ctx, logs[0], "2026-08"); err != nil {
		t.Fatal(err)
	}
	live := int64(len(logs)*len(epochs) - 1)
	shredded := map[string]bool{logs[0].String() + " 2026-08": true}
	open := func(kr *keyring.Keyring) {
		t.Helper()
		for _, m := range msgs {
			pt, err := kr.Decrypt(ctx, m.log, m.ct, []byte(m.epoch))
			if shredded[m.log.String()+" "+m.epoch] {
				if !errors.Is(err, keyring.ErrShredded) {
					t.Fatalf("destroyed epoch: %v, want ErrShredded", err)
				}
				continue
			}
			if err != nil || !bytes.Equal(pt, []byte("payload "+m.log.String()+" "+m.epoch)) {
				t.Fatalf("decrypt %s %s: %q, %v", m.log, m.epoch, pt, err)
			}
		}
	}
	counts := func(want map[string]int64) {
		t.Helper()
		got, err := db.CountDataKeysByKEK(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("keys per KEK = %v, want %v", got, want)
		}
	}
	counts(map[string]int64{kekA.ID(): live})

	// The new KEK is current: new keys are wrapped by it, old ones open with the
	// previous one.
	kr := keyring.New(db, kekB, keyring.Options{Previous: []keyring.Wrapper{kekA}})
	newLog := catalog.LogID{ProjectID: "prj_kek_c", Stream: catalog.StreamEvents}
	ct, err := kr.Encrypt(ctx, newLog, "2026-11", []byte("new"), nil)
	if err != nil {
		t.Fatal(err)
	}
	open(kr)
	counts(map[string]int64{kekA.ID(): live, kekB.ID(): 1})

	// A run that fails after three rows (a crash, a KMS outage) leaves them moved and
	// the rest under the old KEK, all readable.
	failing := &flakyRewrap{KEKCatalog: db, okLeft: 3}
	st, err := kr.Rewrap(ctx, failing, nil)
	if !errors.Is(err, keyring.ErrRewrap) || st.Rewrapped != 3 {
		t.Fatalf("failing run: %+v, %v; want 3 rewrapped and ErrRewrap", st, err)
	}
	counts(map[string]int64{kekA.ID(): live - 3, kekB.ID(): 4})
	open(keyring.New(db, kekB, keyring.Options{Previous: []keyring.Wrapper{kekA}}))

	// Resume with two runs at once (two replicas) while a key is destroyed under them:
	// every other key moves exactly once, the destroyed one stays destroyed.
	victim := logs[2]
	racing := &destroyDuring{KEKCatalog: db, log: victim, epoch: "2026-10"}
	var (
		wg    sync.WaitGroup
		stats [2]keyring.RewrapStats
		errs  [2]error
	)
	for i := range 2 {
		wg.Go(func() {
			r := keyring.New(racing, kekB, keyring.Options{Previous: []keyring.Wrapper{kekA}})
			stats[i], errs[i] = r.Rewrap(ctx, racing, nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if moved := stats[0].Rewrapped + stats[1].Rewrapped; moved != live-3-1 {
		t.Fatalf("the resumed runs rewrapped %d keys (%+v), want %d", moved, stats, live-3-1)
	}
	if k, err := db.DataKey(ctx, victim, "2026-10"); err != nil || !k.Destroyed() || k.Wrapped != nil {
		t.Fatalf("key destroyed during the rewrap: %+v, %v", k, err)
	}
	counts(map[string]int64{kekB.ID(): live}) // the victim is gone, the new log's key came

	// Done: the old KEK is no longer needed.
	fresh := keyring.New(db, kekB, keyring.Options{})
	shredded[victim.String()+" 2026-10"] = true
	open(fresh)
	if pt, err := fresh.Decrypt(ctx, newLog, ct, nil); err != nil || string(pt) != "new" {
		t.Fatalf("key created under the new KEK: %q, %v", pt, err)
	}
	if st, err := fresh.Rewrap(ctx, db, nil); err != nil || st != (keyring.RewrapStats{}) {
		t.Fatalf("a second run: %+v, %v; want nothing to do", st, err)
	}

	// A key under a KEK the keyring does not have stops the run with ErrWrongKEK and
	// is left as it was.
	stranger := keyring.New(db, newFileKEK(t), keyring.Options{})
	strangerLog := catalog.LogID{ProjectID: "prj_kek_d", Stream: catalog.StreamEvents}
	if _, err := stranger.Encrypt(ctx, strangerLog, "2026-11", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Rewrap(ctx, db, nil); !errors.Is(err, keyring.ErrRewrap) || !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("rewrap with an unknown KEK: %v, want ErrRewrap and ErrWrongKEK", err)
	}
	if k, err := db.DataKey(ctx, strangerLog, "2026-11"); err != nil || k.KEKID != stranger.KEKID() {
		t.Fatalf("the unknown KEK's key: %+v, %v", k, err)
	}
}

func newFileKEK(t *testing.T) *keyring.FileKEK {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.NewFileKEK(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// flakyRewrap fails RewrapDataKey after okLeft successes, as a crash or an outage would.
type flakyRewrap struct {
	KEKCatalog
	mu     sync.Mutex
	okLeft int
}

func (f *flakyRewrap) RewrapDataKey(ctx context.Context, old catalog.DataKey, kekID string, wrapped []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.okLeft == 0 {
		return false, errors.New("injected: catalog unreachable")
	}
	f.okLeft--
	return f.KEKCatalog.RewrapDataKey(ctx, old, kekID, wrapped)
}

// destroyDuring destroys (log, epoch) just before the first rewrap of that row reaches
// the catalog, as retention running beside the rotation would.
type destroyDuring struct {
	KEKCatalog
	log   catalog.LogID
	epoch string
	once  sync.Once
}

func (d *destroyDuring) RewrapDataKey(ctx context.Context, old catalog.DataKey, kekID string, wrapped []byte) (bool, error) {
	if old.Log == d.log && old.Epoch == d.epoch {
		var err error
		d.once.Do(func() { _, err = d.DestroyDataKey(ctx, d.log, d.epoch, time.Time{}) })
		if err != nil {
			return false, err
		}
	}
	return d.KEKCatalog.RewrapDataKey(ctx, old, kekID, wrapped)
}
