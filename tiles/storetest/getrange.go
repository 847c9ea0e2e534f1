package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
)

// testGetRange checks ranged reads: any range inside the object returns exactly its
// bytes (first byte, last byte, the whole object, a range inside a large object), a
// missing key is ErrNotFound, a range past the end is ErrShortObject, and invalid
// arguments are rejected.
func testGetRange(t *testing.T, s tiles.Store, o Options) {
	key := "payload/1732460000000-range"
	data := random(t, 1000)
	if err := s.Create(ctx(t), key, data, tiles.PrivateAttrs); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ off, n int64 }{{0, 1}, {999, 1}, {0, 1000}, {17, 300}, {500, 500}} {
		got, err := s.GetRange(ctx(t), key, r.off, r.n)
		if err != nil {
			t.Fatalf("GetRange(%d, %d): %v", r.off, r.n, err)
		}
		if !bytes.Equal(got, data[r.off:r.off+r.n]) {
			t.Fatalf("GetRange(%d, %d) returned %d other bytes", r.off, r.n, len(got))
		}
	}
	if _, err := s.GetRange(ctx(t), "payload/missing", 0, 1); !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("GetRange of a missing key: %v, want ErrNotFound", err)
	}
	for _, r := range []struct{ off, n int64 }{{999, 2}, {1000, 1}, {5000, 10}} {
		if _, err := s.GetRange(ctx(t), key, r.off, r.n); !errors.Is(err, tiles.ErrShortObject) {
			t.Fatalf("GetRange(%d, %d) of 1000 bytes: %v, want ErrShortObject", r.off, r.n, err)
		}
	}
	for _, r := range []struct{ off, n int64 }{{-1, 1}, {0, 0}, {0, -5}, {1 << 62, 1 << 62}} {
		if _, err := s.GetRange(ctx(t), key, r.off, r.n); err == nil || errors.Is(err, tiles.ErrNotFound) {
			t.Fatalf("GetRange(%d, %d): %v, want an invalid-range error", r.off, r.n, err)
		}
	}
	if _, err := s.GetRange(ctx(t), "../etc/passwd", 0, 1); err == nil {
		t.Fatal("GetRange accepted an invalid key")
	}
	// A segment in the middle of a large object costs only its bytes.
	large := random(t, 3<<20)
	if err := s.Create(ctx(t), "payload/1732460000000-large", large, tiles.PrivateAttrs); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRange(ctx(t), "payload/1732460000000-large", 2<<20+5, 4096)
	if err != nil || !bytes.Equal(got, large[2<<20+5:2<<20+5+4096]) {
		t.Fatalf("GetRange inside a large object: %d bytes, %v", len(got), err)
	}
}
