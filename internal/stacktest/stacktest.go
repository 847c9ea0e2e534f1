// Package stacktest builds, for tests, the real sealing stack over a catalog: a fresh
// key-encryption key and service key, the key ring, an in-memory object store and the
// sequencer, closed at test end.
package stacktest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// Catalog is what the stack needs of a catalog driver.
type Catalog interface {
	sequencer.Catalog
	keyring.Store
}

// Sequencer returns a sequencer over db with origin and its service key; tweak, if
// not nil, adjusts the configuration first. The sequencer is closed (and its close
// error reported) at test end.
func Sequencer(t testing.TB, db Catalog, origin string, tweak func(*sequencer.Config)) (*sequencer.Sequencer, ed25519.PrivateKey) {
	t.Helper()
	kek := KEK(t)
	_, key, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := sequencer.Config{Catalog: db, Store: mem.New(), Keyring: keyring.New(db, kek, keyring.Options{}),
		Origin: origin, Key: key}
	if tweak != nil {
		tweak(&cfg)
	}
	seq, err := sequencer.New(cfg)
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
	return seq, key
}

// KEK returns a fresh key-encryption key.
func KEK(t testing.TB) *keyring.FileKEK {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	kek, err := keyring.NewFileKEK(b)
	if err != nil {
		t.Fatal(err)
	}
	return kek
}
