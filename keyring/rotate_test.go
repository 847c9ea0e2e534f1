package keyring

import (
	"context"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

func TestRotator(t *testing.T) {
	ctx := context.Background()
	db := newStore(t)
	kekA, kekB := newKEK(t), newKEK(t)
	old := New(db, kekA, Options{})
	for _, log := range []catalog.LogID{logA, logB, logC} {
		if _, err := old.Encrypt(ctx, log, "2026-11", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	kr := New(db, kekB, Options{Previous: []Wrapper{kekA}})
	r := NewRotator(ctx, kr, db, nil)
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || !st.StartedAt.IsZero() || st.Remaining != 3 || st.CurrentKEK != kekB.ID() ||
		len(st.PreviousKEKs) != 1 || st.PreviousKEKs[0] != kekA.ID() || st.Keys[kekA.ID()] != 3 {
		t.Fatalf("before: %+v", st)
	}
	if !r.Start() {
		t.Fatal("Start did not start a run")
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || st.Remaining != 0 || st.Keys[kekB.ID()] != 3 || st.Last.Rewrapped != 3 || st.Error != "" || st.FinishedAt.IsZero() {
		t.Fatalf("after: %+v", st)
	}
	// Another run finds nothing to do.
	if !r.Start() {
		t.Fatal("Start after a finished run did not start one")
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ = r.Status(ctx); st.Last.Rewrapped != 0 || st.Error != "" {
		t.Fatalf("second run: %+v", st)
	}
	// A run that cannot unwrap (the previous KEK is not configured) reports the error.
	stranger := New(db, newKEK(t), Options{})
	r = NewRotator(ctx, stranger, db, nil)
	r.Start()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ = r.Status(ctx); st.Error == "" || st.Remaining != 3 {
		t.Fatalf("run without the KEK: %+v", st)
	}
}

// TestKEKSet: the set wraps with the current KEK and finds a previous one by ID, so a
// secret sealed before a rotation still opens during it.
func TestKEKSet(t *testing.T) {
	ctx := context.Background()
	kekA, kekB := newKEK(t), newKEK(t)
	sealed, err := kekA.Wrap(ctx, []byte("token"), []byte("dst_1"))
	if err != nil {
		t.Fatal(err)
	}
	set := New(newStore(t), kekB, Options{Previous: []Wrapper{kekA}}).KEKs()
	if set.ID() != kekB.ID() {
		t.Fatalf("set ID %s, want the current KEK %s", set.ID(), kekB.ID())
	}
	w, ok := set.Unwrapper(kekA.ID())
	if !ok {
		t.Fatal("previous KEK not found by its ID")
	}
	if pt, err := w.Unwrap(ctx, sealed, []byte("dst_1")); err != nil || string(pt) != "token" {
		t.Fatalf("unwrap with the previous KEK: %q, %v", pt, err)
	}
	if _, ok := set.Unwrapper("kek_unknown"); ok {
		t.Fatal("an unknown KEK ID was found")
	}
	again, err := set.Wrap(ctx, []byte("token"), []byte("dst_1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kekB.Unwrap(ctx, again, []byte("dst_1")); err != nil {
		t.Fatalf("the set did not wrap with the current KEK: %v", err)
	}
}

// fakeSecrets is a SecretOwner of n secrets, all under one KEK, that a run moves to
// the current KEK (or fails with err).
type fakeSecrets struct {
	kek string
	n   int64
	err error
}

func (f *fakeSecrets) RewrapSecrets(_ context.Context, kek *KEKSet) (RewrapStats, error) {
	if f.err != nil {
		return RewrapStats{}, f.err
	}
	if f.kek == kek.ID() {
		return RewrapStats{}, nil
	}
	f.kek = kek.ID()
	return RewrapStats{Rewrapped: f.n}, nil
}

func (f *fakeSecrets) CountSecretsByKEK(context.Context) (map[string]int64, error) {
	return map[string]int64{f.kek: f.n}, nil
}

// TestRotatorSecrets: a run rewraps the secret owners' secrets after the data keys,
// the status counts them in Remaining, and an owner's failure is the run's error.
func TestRotatorSecrets(t *testing.T) {
	ctx := context.Background()
	db := newStore(t)
	kekA, kekB := newKEK(t), newKEK(t)
	if _, err := New(db, kekA, Options{}).Encrypt(ctx, logA, "2026-11", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	r := NewRotator(ctx, New(db, kekB, Options{Previous: []Wrapper{kekA}}), db, nil)
	owner := &fakeSecrets{kek: kekA.ID(), n: 2}
	r.AddSecrets(owner)
	st, err := r.Status(ctx)
	if err != nil || st.Remaining != 3 || st.Keys[kekA.ID()] != 1 || st.Secrets[kekA.ID()] != 2 {
		t.Fatalf("before: %+v, %v", st, err)
	}
	r.Start()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = r.Status(ctx)
	if err != nil || st.Remaining != 0 || st.Secrets[kekB.ID()] != 2 || st.Last.Rewrapped != 3 || st.Error != "" {
		t.Fatalf("after: %+v, %v", st, err)
	}
	broken := &fakeSecrets{kek: kekA.ID(), n: 1, err: ErrRewrap}
	r.AddSecrets(broken)
	r.Start()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ = r.Status(ctx); st.Error == "" || st.Remaining != 1 {
		t.Fatalf("a failing owner: %+v", st)
	}
}
