package keyring

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/private"
)

var (
	logA = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	logB = catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamEvents}
	logC = catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamProjectAudit}
)

func newStore(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func newKEK(t *testing.T) *FileKEK {
	t.Helper()
	kek, err := LoadOrCreateKEKFile(filepath.Join(t.TempDir(), "kek"))
	if err != nil {
		t.Fatal(err)
	}
	return kek
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{})
	msg := []byte(`{"action":"user.login"}`)
	seen := map[string]bool{}
	for _, log := range []catalog.LogID{logA, logB, logC} {
		for _, epoch := range []string{"2026-10", "2026-11"} {
			ad := []byte("ad " + log.String())
			ct, err := kr.Encrypt(ctx, log, epoch, msg, ad)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(ct, msg) || seen[string(ct)] {
				t.Fatalf("ciphertext leaks the plaintext or repeats")
			}
			seen[string(ct)] = true
			if e, err := CiphertextEpoch(ct); err != nil || e != epoch {
				t.Fatalf("CiphertextEpoch = %q, %v", e, err)
			}
			pt, err := kr.Decrypt(ctx, log, ct, ad)
			if err != nil || !bytes.Equal(pt, msg) {
				t.Fatalf("Decrypt = %q, %v", pt, err)
			}
		}
	}
	// The same plaintext twice gives two ciphertexts.
	c1, _ := kr.Encrypt(ctx, logA, "2026-11", msg, nil)
	c2, _ := kr.Encrypt(ctx, logA, "2026-11", msg, nil)
	if bytes.Equal(c1, c2) {
		t.Fatal("encryption is deterministic")
	}
	if empty, err := kr.Encrypt(ctx, logA, "2026-11", nil, nil); err != nil {
		t.Fatal(err)
	} else if pt, err := kr.Decrypt(ctx, logA, empty, nil); err != nil || len(pt) != 0 {
		t.Fatalf("empty plaintext: %q, %v", pt, err)
	}
	if _, err := kr.Encrypt(ctx, logA, "", msg, nil); err == nil {
		t.Fatal("empty epoch accepted")
	}
}

func TestWrongADAndTampering(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{})
	payload := []byte(`{"action":"doc.read"}`)
	ad := PayloadAD(logA, 7, "evt_7")
	ct, err := kr.Encrypt(ctx, logA, "2026-11", payload, ad)
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string][]byte{
		"other sequence": PayloadAD(logA, 8, "evt_7"),
		"other event id": PayloadAD(logA, 7, "evt_8"),
		"other stream":   PayloadAD(logC, 7, "evt_7"),
		"other project":  PayloadAD(logB, 7, "evt_7"),
		"no ad":          nil,
	} {
		if _, err := kr.Decrypt(ctx, logA, ct, other); !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: err = %v, want ErrDecrypt", name, err)
		}
	}
	for i := range ct {
		bad := bytes.Clone(ct)
		bad[i] ^= 0x01
		if _, err := kr.Decrypt(ctx, logA, bad, ad); err == nil {
			t.Fatalf("flipping byte %d went unnoticed", i)
		}
	}
	for _, n := range []int{0, 1, 5, len(ct) - 1} {
		if _, err := kr.Decrypt(ctx, logA, ct[:n], ad); err == nil {
			t.Fatalf("ciphertext truncated to %d bytes decrypted", n)
		}
	}
	// Under another project's key (which has its own key for the epoch) it fails too.
	if _, err := kr.Encrypt(ctx, logB, "2026-11", payload, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Decrypt(ctx, logB, ct, ad); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("decrypting under another project: err = %v, want ErrUnknownKey", err)
	}
	if _, err := kr.Decrypt(ctx, logC, ct, ad); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("decrypting under a stream without keys: err = %v, want ErrUnknownKey", err)
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestShredding(t *testing.T) {
	ctx := context.Background()
	store, kek := newStore(t), newKEK(t)
	clk := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	kr := New(store, kek, Options{Now: clk.now, CacheTTL: time.Minute})
	replica := New(store, kek, Options{Now: clk.now, CacheTTL: time.Minute})

	old, err := kr.Encrypt(ctx, logA, "2026-10", []byte("old"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := kr.Encrypt(ctx, logA, "2026-11", []byte("current"), nil)
	if err != nil {
		t.Fatal(err)
	}
	otherStream, err := kr.Encrypt(ctx, logC, "2026-10", []byte("audit"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Decrypt(ctx, logA, old, nil); err != nil { // warms the replica's cache
		t.Fatal(err)
	}

	if err := kr.Destroy(ctx, logA, "2026-10"); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Decrypt(ctx, logA, old, nil); !errors.Is(err, ErrShredded) {
		t.Fatalf("decrypting a shredded epoch: err = %v, want ErrShredded", err)
	}
	if _, err := kr.Encrypt(ctx, logA, "2026-10", []byte("late"), nil); !errors.Is(err, ErrShredded) {
		t.Fatalf("encrypting into a shredded epoch: err = %v, want ErrShredded", err)
	}
	if pt, err := kr.Decrypt(ctx, logA, cur, nil); err != nil || string(pt) != "current" {
		t.Fatalf("another epoch after shredding: %q, %v", pt, err)
	}
	if pt, err := kr.Decrypt(ctx, logC, otherStream, nil); err != nil || string(pt) != "audit" {
		t.Fatalf("the same epoch of another stream after shredding: %q, %v", pt, err)
	}
	// A fresh replica sees the shredding at once; a warm one within its cache TTL.
	if _, err := New(store, kek, Options{}).Decrypt(ctx, logA, old, nil); !errors.Is(err, ErrShredded) {
		t.Fatalf("fresh keyring: err = %v, want ErrShredded", err)
	}
	clk.add(time.Minute)
	if _, err := replica.Decrypt(ctx, logA, old, nil); !errors.Is(err, ErrShredded) {
		t.Fatalf("replica after its cache TTL: err = %v, want ErrShredded", err)
	}
	k, err := store.DataKey(ctx, logA, "2026-10")
	if err != nil || k.Wrapped != nil || !k.Destroyed() {
		t.Fatalf("stored key after Destroy: %+v, %v", k, err)
	}
	if err := kr.Destroy(ctx, logA, "2026-10"); err != nil {
		t.Fatalf("destroying twice: %v", err)
	}
	if err := kr.Destroy(ctx, logB, "1999-01"); err != nil {
		t.Fatalf("destroying an epoch that never had a key: %v", err)
	}
}

func TestPayload(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{})
	var nonce [NonceSize]byte
	for i := range nonce {
		nonce[i] = byte(i)
	}
	jcs := []byte(`{"action":"a","actor":{"id":"u1","type":"user"}}`)
	ct, err := kr.SealPayload(ctx, logA, "2026-11", 42, "evt_42", nonce, jcs)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(ct, nonce[:]) {
		t.Fatal("the nonce is visible in the ciphertext")
	}
	n, p, err := kr.OpenPayload(ctx, logA, 42, "evt_42", ct)
	if err != nil || n != nonce || !bytes.Equal(p, jcs) {
		t.Fatalf("OpenPayload = %x, %q, %v", n, p, err)
	}
	// The plaintext is exactly the commitment's preimage.
	pt, err := kr.Decrypt(ctx, logA, ct, PayloadAD(logA, 42, "evt_42"))
	if err != nil || sha256.Sum256(pt) != sha256.Sum256(append(nonce[:], jcs...)) {
		t.Fatalf("plaintext is not nonce||payload: %v", err)
	}
	if _, _, err := kr.OpenPayload(ctx, logA, 43, "evt_42", ct); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("opening as another sequence: err = %v", err)
	}
	if err := kr.Destroy(ctx, logA, "2026-11"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kr.OpenPayload(ctx, logA, 42, "evt_42", ct); !errors.Is(err, ErrShredded) {
		t.Fatalf("after shredding: err = %v, want ErrShredded", err)
	}
}

func TestKEKFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kek")
	k1, err := LoadOrCreateKEKFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Size() != kekSize {
		t.Fatalf("KEK file mode %#o size %d, want 0600 and %d bytes", st.Mode().Perm(), st.Size(), kekSize)
	}
	k2, err := LoadOrCreateKEKFile(path)
	if err != nil || k2.ID() != k1.ID() {
		t.Fatalf("reloading the KEK: id %v vs %v, %v", k2, k1.ID(), err)
	}
	if other := newKEK(t); other.ID() == k1.ID() {
		t.Fatal("two fresh KEKs share an id")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var me *private.ModeError
	if _, err := LoadOrCreateKEKFile(path); !errors.As(err, &me) || me.Path != path {
		t.Fatalf("a world-readable KEK file: %v, want a *private.ModeError naming it", err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKEKFile(short); err == nil {
		t.Fatal("a KEK file of the wrong size was accepted")
	}
	if _, err := LoadOrCreateKEKFile(filepath.Join(dir, "missing", "kek")); err == nil {
		t.Fatal("a KEK in a missing directory was created")
	}
	// Concurrent first starts agree on one KEK.
	racy := filepath.Join(dir, "racy")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k, err := LoadOrCreateKEKFile(racy); err == nil {
				ids[i] = k.ID()
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("concurrent creators got KEK ids %v", ids)
		}
	}
}

func TestWrongKEK(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	kr := New(store, newKEK(t), Options{})
	ct, err := kr.Encrypt(ctx, logA, "2026-11", []byte("secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(store, newKEK(t), Options{}).Decrypt(ctx, logA, ct, nil); !errors.Is(err, ErrWrongKEK) {
		t.Fatalf("another KEK: err = %v, want ErrWrongKEK", err)
	}
	// A wrapper that claims the right id but holds other bytes cannot unwrap.
	impostor := newKEK(t)
	impostor.id = kr.kek.ID()
	if _, err := New(store, impostor, Options{}).Decrypt(ctx, logA, ct, nil); !errors.Is(err, ErrUnwrap) {
		t.Fatalf("impostor KEK: err = %v, want ErrUnwrap", err)
	}
	// A wrapped key moved to another row does not unwrap (wrap AD binds it).
	row, err := store.DataKey(ctx, logA, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kr.kek.Unwrap(ctx, row.Wrapped, wrapAD(logA, "2026-12", row.KeyID)); !errors.Is(err, ErrUnwrap) {
		t.Fatalf("unwrap with another epoch: err = %v, want ErrUnwrap", err)
	}
	if _, err := kr.kek.Unwrap(ctx, row.Wrapped[:5], wrapAD(logA, "2026-11", row.KeyID)); !errors.Is(err, ErrUnwrap) {
		t.Fatalf("unwrap of truncated bytes: err = %v, want ErrUnwrap", err)
	}
}

// TestConcurrentFirstUse has two keyrings (two replicas) encrypt into a new epoch at
// once: both must end up on one stored key, so each can read the other's ciphertexts.
func TestConcurrentFirstUse(t *testing.T) {
	ctx := context.Background()
	store, kek := newStore(t), newKEK(t)
	krs := []*Keyring{New(store, kek, Options{}), New(store, kek, Options{})}
	cts := make([][]byte, 16)
	var wg sync.WaitGroup
	for i := range cts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ct, err := krs[i%2].Encrypt(ctx, logA, "2026-11-21", []byte(fmt.Sprint(i)), nil)
			if err != nil {
				t.Error(err)
			}
			cts[i] = ct
		}()
	}
	wg.Wait()
	for i, ct := range cts {
		for _, kr := range krs {
			if pt, err := kr.Decrypt(ctx, logA, ct, nil); err != nil || string(pt) != fmt.Sprint(i) {
				t.Fatalf("ciphertext %d: %q, %v", i, pt, err)
			}
		}
	}
}

func TestCacheBound(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{CacheSize: 2})
	var cts [][]byte
	for d := 1; d <= 5; d++ {
		ct, err := kr.Encrypt(ctx, logA, fmt.Sprintf("2026-11-%02d", d), []byte{byte(d)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
		if n := kr.cache.len(); n > 2 {
			t.Fatalf("cache holds %d keys, bound is 2", n)
		}
	}
	for i, ct := range cts {
		if pt, err := kr.Decrypt(ctx, logA, ct, nil); err != nil || pt[0] != byte(i+1) {
			t.Fatalf("epoch %d after eviction: %v, %v", i+1, pt, err)
		}
	}
}

func TestSealOpenByTime(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{Granularity: Daily})
	at := time.Date(2026, 11, 21, 23, 59, 59, 0, time.UTC)
	ct, err := kr.Seal(ctx, logA, at, []byte("p"), []byte("ad"))
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := CiphertextEpoch(ct); e != "2026-11-21" {
		t.Fatalf("Seal used epoch %q, want the receive day", e)
	}
	if pt, err := kr.Open(ctx, logA, ct, []byte("ad")); err != nil || string(pt) != "p" {
		t.Fatalf("Open = %q, %v", pt, err)
	}
	if err := kr.Destroy(ctx, logA, "2026-11-21"); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Open(ctx, logA, ct, []byte("ad")); !errors.Is(err, ErrShredded) {
		t.Fatalf("Open after Destroy: err = %v, want ErrShredded", err)
	}
}

func TestEpoch(t *testing.T) {
	ts := time.Date(2026, 11, 30, 23, 30, 0, 0, time.FixedZone("x", -2*3600)) // 2026-12-01 01:30 UTC
	if got := Monthly.Epoch(ts); got != "2026-12" {
		t.Errorf("Monthly = %q", got)
	}
	if got := Daily.Epoch(ts); got != "2026-12-01" {
		t.Errorf("Daily = %q", got)
	}
}

func BenchmarkEncrypt(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	kek, err := LoadOrCreateKEKFile(filepath.Join(b.TempDir(), "kek"))
	if err != nil {
		b.Fatal(err)
	}
	kr := New(db, kek, Options{})
	msg := bytes.Repeat([]byte("x"), 1024)
	b.SetBytes(int64(len(msg)))
	for i := 0; i < b.N; i++ {
		if _, err := kr.Encrypt(ctx, logA, "2026-11", msg, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSealer checks the batch encrypter: its ciphertexts share a salt, differ in
// nonce, open with Decrypt under their own additional data only, and a destroyed epoch
// gets no Sealer.
func TestSealer(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{})
	s, err := kr.NewSealer(ctx, logA, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"action":"user.login"}`)
	var cts [][]byte
	for i := range 3 {
		ct, err := s.Seal(msg, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
	}
	h0, err := parseHeader(cts[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, ct := range cts {
		h, err := parseHeader(ct)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(h.salt, h0.salt) || (i > 0 && bytes.Equal(h.nonce, h0.nonce)) {
			t.Fatalf("ciphertext %d: salt shared %v, nonce repeated %v", i, bytes.Equal(h.salt, h0.salt), bytes.Equal(h.nonce, h0.nonce))
		}
		if pt, err := kr.Decrypt(ctx, logA, ct, []byte{byte(i)}); err != nil || !bytes.Equal(pt, msg) {
			t.Fatalf("Decrypt %d = %q, %v", i, pt, err)
		}
		if _, err := kr.Decrypt(ctx, logA, ct, []byte{byte(i + 1)}); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("ciphertext %d opened under another event's data: %v", i, err)
		}
	}
	// SealPrefixed seals the concatenation, as Seal of it would.
	ct, err := s.SealPrefixed(msg[:7], msg[7:], []byte("ad"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := kr.Decrypt(ctx, logA, ct, []byte("ad")); err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("Decrypt of SealPrefixed = %q, %v", pt, err)
	}
	// SealPrefixedTo appends to dst, in its spare room when it has SealedLen of it.
	dst := make([]byte, 3, 3+s.SealedLen(len(msg)))
	ct, err = s.SealPrefixedTo(dst, msg[:7], msg[7:], []byte("ad"))
	if err != nil || len(ct) != 3+s.SealedLen(len(msg)) || &ct[0] != &dst[0] {
		t.Fatalf("SealPrefixedTo: %d bytes (want %d), in place %v, %v", len(ct), 3+s.SealedLen(len(msg)), err == nil && &ct[0] == &dst[0], err)
	}
	if pt, err := kr.Decrypt(ctx, logA, ct[3:], []byte("ad")); err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("Decrypt of SealPrefixedTo = %q, %v", pt, err)
	}
	if ct, err = s.SealPrefixedTo([]byte{1}, nil, msg, nil); err != nil || ct[0] != 1 {
		t.Fatalf("SealPrefixedTo without room: %v, %v", ct, err)
	}
	if pt, err := kr.Decrypt(ctx, logA, ct[1:], nil); err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("Decrypt of SealPrefixedTo without room = %q, %v", pt, err)
	}
	// NewSealer hands out the same Sealer (and salt) until it has sealed
	// sealerMessages payloads, then a new one with a fresh salt.
	again, err := kr.NewSealer(ctx, logA, "2026-11")
	if err != nil || again != s {
		t.Fatalf("second NewSealer: %p, %v; want the first one, %p", again, err, s)
	}
	if got := s.used.Load(); got != 6 {
		t.Fatalf("the Sealer counts %d payloads, want 6", got)
	}
	s.used.Store(sealerMessages)
	s2, err := kr.NewSealer(ctx, logA, "2026-11")
	if err != nil || s2 == s {
		t.Fatalf("NewSealer after %d payloads: %p, %v; want a new Sealer", sealerMessages, s2, err)
	}
	ct2, _ := s2.Seal(msg, nil)
	if h2, _ := parseHeader(ct2); bytes.Equal(h2.salt, h0.salt) {
		t.Fatal("a new Sealer kept the old salt")
	}
	if pt, err := kr.Decrypt(ctx, logA, ct2, nil); err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("Decrypt with the new salt = %q, %v", pt, err)
	}
	// Another epoch, or another stream, has a Sealer of its own.
	s3, err := kr.NewSealer(ctx, logA, "2026-12")
	if err != nil || s3 == s2 || bytes.Equal(s3.hdr, s2.hdr) {
		t.Fatalf("NewSealer of another epoch: %p, %v; shares the Sealer %v", s3, err, s3 == s2)
	}
	if err := kr.Destroy(ctx, logA, "2026-11"); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.NewSealer(ctx, logA, "2026-11"); !errors.Is(err, ErrShredded) {
		t.Fatalf("Sealer for a destroyed epoch: %v, want ErrShredded", err)
	}
	if _, err := kr.NewSealer(ctx, logA, ""); err == nil {
		t.Fatal("empty epoch accepted")
	}
}

// TestOpenerMemo: Decrypt keeps the message cipher of the last salt per data key and
// reuses it only for that salt: messages of two Sealers interleaved, and one whose
// salt was changed, open as they would without it, and shredding drops it.
func TestOpenerMemo(t *testing.T) {
	ctx := context.Background()
	kr := New(newStore(t), newKEK(t), Options{})
	a, err := kr.NewSealer(ctx, logA, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	a.used.Store(sealerMessages) // the next NewSealer makes another salt
	b, err := kr.NewSealer(ctx, logA, "2026-11")
	if err != nil || b == a {
		t.Fatalf("second Sealer: %p, %v", b, err)
	}
	msg := []byte(`{"action":"user.login"}`)
	var cts [][]byte
	for i := range 6 {
		s := a
		if i%3 == 1 {
			s = b
		}
		ct, err := s.Seal(append(msg, byte('0'+i)), []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
	}
	for round := range 2 { // the second round starts on the memo of the last salt
		for i, ct := range cts {
			if pt, err := kr.Decrypt(ctx, logA, ct, []byte{byte(i)}); err != nil || !bytes.Equal(pt, append(msg, byte('0'+i))) {
				t.Fatalf("round %d: Decrypt %d = %q, %v", round, i, pt, err)
			}
		}
	}
	dk, err := kr.key(ctx, logA, "2026-11", false)
	if err != nil {
		t.Fatal(err)
	}
	o := dk.opener.Load()
	if h, _ := parseHeader(cts[len(cts)-1]); o == nil || !bytes.Equal(o.salt[:], h.salt) {
		t.Fatalf("memo %v after opening a message of salt %x", o, h.salt)
	}
	// The last message (a's) with b's salt in its header does not open under the memo
	// of a's salt: the key is b's, which the message was not sealed with.
	h, _ := parseHeader(cts[0])
	salt := h.len - nonceSize - saltSize
	other := bytes.Clone(cts[len(cts)-1])
	copy(other[salt:], cts[1][salt:salt+saltSize])
	if bytes.Equal(other, cts[len(cts)-1]) {
		t.Fatal("a's and b's salts are the same")
	}
	if _, err := kr.Decrypt(ctx, logA, other, []byte{byte(len(cts) - 1)}); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("a message with another salt opened: %v", err)
	}
	if err := kr.Destroy(ctx, logA, "2026-11"); err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Decrypt(ctx, logA, cts[0], []byte{0}); !errors.Is(err, ErrShredded) {
		t.Fatalf("Decrypt after shredding: %v, want ErrShredded", err)
	}
}
