package pkcs11

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/keyring/wrappertest"
)

// open creates the key label in the SoftHSM2 token h and opens a KEK on it.
func open(t *testing.T, h *testenv.SoftHSM, label string) *KEK {
	t.Helper()
	cfg := Config{Module: h.Module, TokenLabel: h.TokenLabel, PIN: h.PIN, KeyLabel: label}
	if err := CreateKey(cfg); err != nil {
		t.Fatal(err)
	}
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

func TestWrapper(t *testing.T) {
	h := testenv.StartSoftHSM(t)
	// Before any KEK holds a session: a PKCS#11 login is per token and process, so a
	// wrong PIN shows only while no other session is logged in.
	cfg := Config{Module: h.Module, TokenLabel: h.TokenLabel, PIN: h.PIN, KeyLabel: "kek-0"}
	if err := CreateKey(cfg); err != nil {
		t.Fatal(err)
	}
	if err := CreateKey(cfg); err == nil {
		t.Error("CreateKey made a second key with one label")
	}
	for name, c := range map[string]Config{
		"unknown key":   {Module: h.Module, TokenLabel: h.TokenLabel, PIN: h.PIN, KeyLabel: "none"},
		"unknown token": {Module: h.Module, TokenLabel: "other", PIN: h.PIN, KeyLabel: "kek-0"},
		"wrong PIN":     {Module: h.Module, TokenLabel: h.TokenLabel, PIN: "0000", KeyLabel: "kek-0"},
		"no module":     {Module: filepath.Join(t.TempDir(), "none.so"), TokenLabel: h.TokenLabel, PIN: h.PIN, KeyLabel: "kek-0"},
		"no key label":  {Module: h.Module, TokenLabel: h.TokenLabel, PIN: h.PIN},
	} {
		if k, err := New(c); err == nil {
			k.Close()
			t.Errorf("%s: New succeeded", name)
		}
	}
	kek, other := open(t, h, "kek-1"), open(t, h, "kek-2")
	if kek.ID() != "pkcs11:sealtrail/kek-1" {
		t.Fatalf("ID = %s", kek.ID())
	}
	wrappertest.Wrap(t, kek, other)
	// A third KEK on the module comes and goes; the others keep working.
	k0, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k0.Close()
	wrappertest.Wrap(t, kek, other)
}

// TestSessionLost: a token that drops every session (a reset, a failover) costs no
// call: the KEK opens a new session and logs in again. Closed, it refuses to work.
func TestSessionLost(t *testing.T) {
	ctx := context.Background()
	h := testenv.StartSoftHSM(t)
	kek := open(t, h, "kek")
	db, log := wrappertest.Catalog(t), wrappertest.Log
	ct, err := keyring.New(db, kek, keyring.Options{}).Encrypt(ctx, log, "2026-11", []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := kek.ctx.CloseAllSessions(kek.slot); err != nil {
		t.Fatal(err)
	}
	kr := keyring.New(db, kek, keyring.Options{})
	if pt, err := kr.Decrypt(ctx, log, ct, nil); err != nil || string(pt) != "payload" {
		t.Fatalf("decrypt after the sessions were closed: %q, %v", pt, err)
	}
	if err := kek.ctx.CloseAllSessions(kek.slot); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Encrypt(ctx, log, "2026-12", []byte("payload"), nil); err != nil {
		t.Fatalf("a new data key after the sessions were closed: %v", err)
	}
	kek.Close()
	if _, err := kek.Wrap(ctx, make([]byte, 32), nil); err == nil || errors.Is(err, keyring.ErrUnwrap) {
		t.Fatalf("Wrap on a closed KEK: %v", err)
	}
}

// TestRotateBetweenTokenKeys moves data keys from one key in the token to another.
func TestRotateBetweenTokenKeys(t *testing.T) {
	ctx := context.Background()
	h := testenv.StartSoftHSM(t)
	oldKEK, newKEK := open(t, h, "kek-2026"), open(t, h, "kek-2027")
	db, log := wrappertest.Catalog(t), wrappertest.Log
	ct, err := keyring.New(db, oldKEK, keyring.Options{}).Encrypt(ctx, log, "2026-11", []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := keyring.New(db, newKEK, keyring.Options{Previous: []keyring.Wrapper{oldKEK}}).Rewrap(ctx, db, nil); err != nil || st.Rewrapped != 1 {
		t.Fatalf("Rewrap = %+v, %v", st, err)
	}
	if pt, err := keyring.New(db, newKEK, keyring.Options{}).Decrypt(ctx, log, ct, nil); err != nil || string(pt) != "payload" {
		t.Fatalf("decrypt under the new key alone: %q, %v", pt, err)
	}
}
