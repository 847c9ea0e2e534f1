package siem

import (
	"errors"
	"testing"

	"github.com/sealtrail/sealtrail/internal/stacktest"
	"github.com/sealtrail/sealtrail/keyring"
)

// TestSecretsRewrap: the KEK rotation reseals the destinations' secrets under the new
// KEK (same secrets, same destination binding), counts them per KEK until none is
// left under the old one, and stops with ErrRewrap, changing nothing, when it lacks
// the KEK that sealed them.
func TestSecretsRewrap(t *testing.T) {
	s := newStack(t)
	kekA, kekB := s.kek, stacktest.KEK(t)
	hec, _, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "splunk", Kind: KindHEC,
		Settings: Settings{URL: "https://127.0.0.1:1/", Token: "tok-123"}})
	if err != nil {
		t.Fatal(err)
	}
	hook, secret, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "hook", Kind: KindWebhook,
		Settings: Settings{URL: "https://127.0.0.1:1/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	if secret == "" {
		t.Fatal("the webhook's generated secret was not shown")
	}
	secrets := Secrets{Catalog: s.db}
	count := func() map[string]int64 {
		t.Helper()
		n, err := secrets.CountSecretsByKEK(s.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); len(n) != 1 || n[kekA.ID()] != 2 {
		t.Fatalf("before: %v", n)
	}

	// Without the KEK that sealed them nothing moves.
	stranger := keyring.New(s.db, stacktest.KEK(t), keyring.Options{}).KEKs()
	if st, err := secrets.RewrapSecrets(s.ctx, stranger); !errors.Is(err, keyring.ErrRewrap) || st.Rewrapped != 0 {
		t.Fatalf("rewrap without the old KEK: %+v, %v, want ErrRewrap", st, err)
	}
	if n := count(); n[kekA.ID()] != 2 {
		t.Fatalf("after a refused rewrap: %v", n)
	}

	set := keyring.New(s.db, kekB, keyring.Options{Previous: []keyring.Wrapper{kekA}}).KEKs()
	st, err := secrets.RewrapSecrets(s.ctx, set)
	if err != nil || st.Rewrapped != 2 || st.Skipped != 0 {
		t.Fatalf("rewrap: %+v, %v", st, err)
	}
	if n := count(); len(n) != 1 || n[kekB.ID()] != 2 {
		t.Fatalf("after: %v", n)
	}
	// The new KEK alone opens the same secrets, still bound to their destination; the
	// old one no longer does.
	for _, c := range []struct{ id, token, secret string }{{hec.ID, "tok-123", ""}, {hook.ID, "", secret}} {
		row, err := s.db.Destination(s.ctx, s.project, c.id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := openSettings(s.ctx, kekB, c.id, row.Config)
		if err != nil || got.Token != c.token || got.Secret != c.secret {
			t.Fatalf("%s under the new KEK: token %q secret %q, %v", c.id, got.Token, got.Secret, err)
		}
		if _, err := openSettings(s.ctx, kekA, c.id, row.Config); err == nil {
			t.Fatalf("%s still opens under the old KEK", c.id)
		}
		if _, err := openSettings(s.ctx, kekB, "dst_other", row.Config); err == nil {
			t.Fatalf("%s's secrets open under another destination's id", c.id)
		}
	}
	// Idempotent: a second run has nothing to do.
	if st, err := secrets.RewrapSecrets(s.ctx, set); err != nil || st != (keyring.RewrapStats{}) {
		t.Fatalf("second run: %+v, %v", st, err)
	}
}
