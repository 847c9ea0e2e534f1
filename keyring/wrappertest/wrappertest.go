// Package wrappertest is the conformance suite every keyring.Wrapper (the local KEK
// file, AWS KMS, Cloud KMS, PKCS#11) passes against its real or faithful backend:
// round trips, the binding, other keys, damage, and an outage of the backend.
package wrappertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/keyring"
)

// Wrap checks kek: a wrapped key unwraps with the same ad and no other, does not hold
// the secret, and fails with keyring.ErrUnwrap under other ad, damaged, or given to
// other (another key of the same kind).
func Wrap(t *testing.T, kek, other keyring.Wrapper) {
	t.Helper()
	ctx := context.Background()
	if kek.ID() == "" || kek.ID() == other.ID() {
		t.Fatalf("IDs %q and %q must be distinct and non-empty", kek.ID(), other.ID())
	}
	secret := bytes.Repeat([]byte{7}, 32)
	ad := keyring.PayloadAD(catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}, 1, "evt")
	w, err := kek.Wrap(ctx, secret, ad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(w, secret) {
		t.Fatal("the wrapped key contains the secret")
	}
	w2, err := kek.Wrap(ctx, secret, ad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(w, w2) {
		t.Fatal("wrapping is deterministic")
	}
	if got, err := kek.Unwrap(ctx, w, ad); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Unwrap = %x, %v", got, err)
	}
	damaged := bytes.Clone(w)
	damaged[len(damaged)-1] ^= 1
	for name, f := range map[string]func() ([]byte, error){
		"other ad":  func() ([]byte, error) { return kek.Unwrap(ctx, w, append(bytes.Clone(ad), 0)) },
		"no ad":     func() ([]byte, error) { return kek.Unwrap(ctx, w, nil) },
		"other key": func() ([]byte, error) { return other.Unwrap(ctx, w, ad) },
		"damaged":   func() ([]byte, error) { return kek.Unwrap(ctx, damaged, ad) },
		"truncated": func() ([]byte, error) { return kek.Unwrap(ctx, w[:len(w)/2], ad) },
	} {
		if got, err := f(); !errors.Is(err, keyring.ErrUnwrap) {
			t.Errorf("%s: %x, %v; want ErrUnwrap", name, got, err)
		}
	}
}

// Outage runs a keyring on kek, calls stop (the backend becomes unreachable), checks
// that no data key is created or unwrapped and that the failure is not taken for a
// bad key (not ErrUnwrap), then calls start and checks both work again.
func Outage(t *testing.T, kek keyring.Wrapper, stop, start func()) {
	t.Helper()
	ctx := context.Background()
	db := Catalog(t)
	ct, err := keyring.New(db, kek, keyring.Options{}).Encrypt(ctx, Log, "2026-11", []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := db.DataKey(ctx, Log, "2026-11"); err != nil || k.KEKID != kek.ID() {
		t.Fatalf("stored key: %+v, %v", k, err)
	}

	stop()
	kr := keyring.New(db, kek, keyring.Options{}) // a fresh cache, as a restarted replica has
	if _, err := kr.Encrypt(ctx, Log, "2026-12", []byte("payload"), nil); err == nil {
		t.Fatal("a data key was created without the KEK's backend")
	}
	if _, err := db.DataKey(ctx, Log, "2026-12"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a failed creation stored a key: %v", err)
	}
	if _, err := kr.Decrypt(ctx, Log, ct, nil); err == nil || errors.Is(err, keyring.ErrUnwrap) {
		t.Fatalf("decrypt without the backend: %v; want its error, not ErrUnwrap", err)
	}

	start()
	if pt, err := kr.Decrypt(ctx, Log, ct, nil); err != nil || string(pt) != "payload" {
		t.Fatalf("decrypt after the backend came back: %q, %v", pt, err)
	}
	if _, err := kr.Encrypt(ctx, Log, "2026-12", []byte("payload"), nil); err != nil {
		t.Fatalf("encrypt after the backend came back: %v", err)
	}
}

// FileKEK returns a local KEK of 32 fresh random bytes.
func FileKEK(t testing.TB) *keyring.FileKEK {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	k, err := keyring.NewFileKEK(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Log is the project-stream the helpers' keys belong to.
var Log = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}

// Catalog returns an empty SQLite catalog in a directory of the test's.
func Catalog(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}
