package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

func testPin(t testing.TB, size uint64) PinnedHead {
	t.Helper()
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sth := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: "prj_1", Stream: tlog.StreamEvents, TreeSize: size,
		RootHash: tlog.Hex(tlog.EmptyRoot), Timestamp: tlog.FormatTime(time.Now())}
	if err := tlog.SignSTH(priv, &sth); err != nil {
		t.Fatal(err)
	}
	return PinnedHead{STH: sth, ServicePublicKey: tlog.Hex(tlog.Hash(pub))}
}

// testHeadStore is the conformance test every HeadStore passes: absent keys load as
// nil, saves are read back exactly, keys do not collide, the last save wins, and
// concurrent saves of different keys are safe.
func testHeadStore(t *testing.T, s HeadStore) {
	ctx := context.Background()
	a, b := PinKey("http://127.0.0.1:8080", StreamEvents), PinKey("http://127.0.0.1:8080", StreamProjectAudit)
	if h, err := s.Load(ctx, a); h != nil || err != nil {
		t.Fatalf("absent key: %+v, %v", h, err)
	}
	p1, p2 := testPin(t, 1), testPin(t, 2)
	if err := s.Save(ctx, a, p1); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Load(ctx, a); err != nil || h == nil || *h != p1 {
		t.Fatalf("load after save: %+v, %v", h, err)
	}
	if h, _ := s.Load(ctx, b); h != nil {
		t.Fatalf("key %q sees the pin of %q", b, a)
	}
	if err := s.Save(ctx, a, p2); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Load(ctx, a); h == nil || *h != p2 {
		t.Fatalf("last save did not win: %+v", h)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			key := PinKey("http://h", Stream(strings.Repeat("s", i+1)))
			if err := s.Save(ctx, key, p1); err != nil {
				t.Error(err)
			}
			if h, err := s.Load(ctx, key); err != nil || h == nil || *h != p1 {
				t.Errorf("concurrent %s: %+v, %v", key, h, err)
			}
		})
	}
	wg.Wait()
}

func TestMemoryHeadStore(t *testing.T) { testHeadStore(t, NewMemoryHeadStore()) }

func TestFileHeadStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pins")
	s, err := NewFileHeadStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	testHeadStore(t, s)

	// A new store over the same directory (a restart) sees the pins.
	ctx := context.Background()
	key := PinKey("http://127.0.0.1:8080", StreamEvents)
	want, _ := s.Load(ctx, key)
	s2, err := NewFileHeadStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Load(ctx, key); err != nil || got == nil || *got != *want {
		t.Fatalf("after restart: %+v, %v", got, err)
	}
	// Atomic writes leave no temporary files behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	// A corrupt or misplaced pin file is an error, not an empty pin (which would be
	// trusted again on first use).
	path := s.path(key)
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Load(ctx, key); err == nil {
		t.Fatalf("corrupt pin loaded as %+v", h)
	}
	other := s.path(PinKey("http://h", "s"))
	data, _ := os.ReadFile(other)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, key); err == nil || !strings.Contains(err.Error(), "holds the pin of") {
		t.Fatalf("misplaced pin: %v", err)
	}
}

// TestCorruptPinIsNotTrusted: a pin that does not verify under its own key stops the
// check with an error instead of being replaced or raising a false tamper.
func TestCorruptPinIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	f := newFakeLog(t)
	store := NewMemoryHeadStore()
	c := newTestClient(t, f, Config{HeadStore: store})
	if _, err := c.CheckConsistency(ctx, ""); err != nil {
		t.Fatal(err)
	}
	key := PinKey(f.srv.URL, StreamEvents)
	pin, _ := store.Load(ctx, key)
	pin.STH.TreeSize = 99
	if err := store.Save(ctx, key, *pin); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckConsistency(ctx, ""); err == nil || c.Err() != nil {
		t.Fatalf("corrupt pin: %v, poison %v", err, c.Err())
	}
	if got, _ := store.Load(ctx, key); got.STH.TreeSize != 99 {
		t.Fatal("corrupt pin was replaced")
	}
}

// TestProjectMismatch: a client configured for one project over a head store that
// holds another project's pins for the base URL gets ErrProjectMismatch, for either
// stream, pins nothing and is not poisoned. (Without a configured project the pin
// decides, and a head of another project is a tamper: TestTamper.)
func TestProjectMismatch(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryHeadStore()
	f := newFakeLog(t)
	f.grow(t, tlog.StreamEvents, 2)
	a := newTestClient(t, f, Config{HeadStore: store})
	if _, err := a.CheckConsistency(ctx, ""); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.projectID = "prj_b"
	f.mu.Unlock()
	b := newTestClient(t, f, Config{HeadStore: store, ProjectID: "prj_b"})
	for _, s := range []Stream{StreamEvents, StreamProjectAudit} {
		if _, err := b.CheckConsistency(ctx, s); !errors.Is(err, ErrProjectMismatch) || b.Err() != nil {
			t.Fatalf("%s: got %v, poison %v", s, err, b.Err())
		}
	}
	if pin, _ := store.Load(ctx, PinKey(f.srv.URL, StreamProjectAudit)); pin != nil {
		t.Fatalf("pinned %+v", pin)
	}
}
