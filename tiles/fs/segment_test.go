package fs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// appendPayload reserves len(data) bytes and writes data there.
func appendPayload(t *testing.T, s *Store, data []byte) (tiles.PayloadSlot, error) {
	t.Helper()
	slot, err := s.ReservePayload(t.Context(), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return slot, slot.Write(t.Context(), data)
}

// wantRange requires the segment at slot to read back as data.
func wantRange(t *testing.T, s *Store, slot tiles.PayloadSlot, data []byte) {
	t.Helper()
	got, err := s.GetRange(t.Context(), slot.Key, slot.Off, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetRange(%s, %d, %d) = %q, %v; want %q", slot.Key, slot.Off, len(data), got, err, data)
	}
}

func payload(i, n int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, n) }

// TestSegmentAppends: successive appends go end to end into one file named by a group
// payload key, each readable by its range at once, and a restarted store (a new
// Store on the same root) starts a file of its own.
func TestSegmentAppends(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	var slots []tiles.PayloadSlot
	off := int64(0)
	for i := range 5 {
		slot, err := appendPayload(t, s, payload(i, 100+i))
		if err != nil {
			t.Fatal(err)
		}
		if slot.Key != slots0(slots, slot).Key || slot.Off != off {
			t.Fatalf("append %d at %s@%d, want %s@%d", i, slot.Key, slot.Off, slots0(slots, slot).Key, off)
		}
		off += int64(100 + i)
		slots = append(slots, slot)
	}
	if _, ok := tiles.GroupPayloadTime(slots[0].Key); !ok {
		t.Fatalf("segment key %q is not a group payload key", slots[0].Key)
	}
	for i, slot := range slots {
		wantRange(t, s, slot, payload(i, 100+i))
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(slots[0].Key)))
	if err != nil || fi.Size() != off || fi.Mode().Perm() != 0o600 {
		t.Fatalf("segment file: %v, %v; want %d bytes, mode 0600", fi, err, off)
	}

	again, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	slot, err := appendPayload(t, again, payload(9, 10))
	if err != nil || slot.Key == slots[0].Key || slot.Off != 0 {
		t.Fatalf("after a restart: %s@%d, %v; want a new file", slot.Key, slot.Off, err)
	}
	for i, slot := range slots {
		wantRange(t, again, slot, payload(i, 100+i))
	}
}

// slots0 is the first slot, or slot itself when there is none yet.
func slots0(slots []tiles.PayloadSlot, slot tiles.PayloadSlot) tiles.PayloadSlot {
	if len(slots) == 0 {
		return slot
	}
	return slots[0]
}

// TestSegmentRolls: a file takes no append that would grow it past its size limit (an
// append larger than the limit gets a file of its own) nor any after its age limit.
func TestSegmentRolls(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.seg.maxSize = 100
	var got []tiles.PayloadSlot
	for i, n := range []int{60, 40, 1, 250, 10} {
		slot, err := appendPayload(t, s, payload(i, n))
		if err != nil {
			t.Fatal(err)
		}
		wantRange(t, s, slot, payload(i, n))
		got = append(got, slot)
	}
	// 60 and 40 fill the first file; 1 starts the second; 250 is too large for it
	// and gets the third alone; 10 starts the fourth.
	if got[1].Key != got[0].Key || got[1].Off != 60 ||
		got[2].Key == got[1].Key || got[3].Key == got[2].Key || got[4].Key == got[3].Key ||
		got[2].Off != 0 || got[3].Off != 0 || got[4].Off != 0 {
		t.Fatalf("appends went to %+v", got)
	}

	s.seg.maxSize, s.seg.maxAge = 0, time.Nanosecond
	a, err := appendPayload(t, s, payload(1, 10))
	if err != nil {
		t.Fatal(err)
	}
	b, err := appendPayload(t, s, payload(2, 10))
	if err != nil || b.Key == a.Key || b.Off != 0 {
		t.Fatalf("an append past the age limit went to %s@%d (%v), after %s", b.Key, b.Off, err, a.Key)
	}
}

// TestSegmentFaults fails an append (the write, or a short write), and checks that
// the append reports it, that the next append goes to a new file, and that every
// append that succeeded before still reads back.
func TestSegmentFaults(t *testing.T) {
	boom := errors.New("injected I/O error")
	for _, tc := range []struct {
		name  string
		fault func(f *os.File, b []byte, off int64) (int, error)
	}{
		{"error", func(*os.File, []byte, int64) (int, error) { return 0, boom }},
		{"short", func(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b[:len(b)/2], off) }},
		{"torn", func(f *os.File, b []byte, off int64) (int, error) {
			n, _ := f.WriteAt(b[:len(b)/3], off)
			return n, boom
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			good, err := appendPayload(t, s, payload(0, 64))
			if err != nil {
				t.Fatal(err)
			}
			writeAt = tc.fault
			bad, err := appendPayload(t, s, payload(1, 64))
			writeAt = (*os.File).WriteAt
			if err == nil {
				t.Fatal("a failed append reported success")
			}
			if bad.Key != good.Key {
				t.Fatalf("the failed append went to %s, not the open file %s", bad.Key, good.Key)
			}
			next, err := appendPayload(t, s, payload(2, 64))
			if err != nil || next.Key == good.Key || next.Off != 0 {
				t.Fatalf("after a failed append: %s@%d, %v; want a new file", next.Key, next.Off, err)
			}
			wantRange(t, s, good, payload(0, 64))
			wantRange(t, s, next, payload(2, 64))
		})
	}
}

// TestSegmentSlotMisuse: a slot written with other than its length, or twice, is an
// error, and a slot of no bytes is refused.
func TestSegmentSlotMisuse(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.ReservePayload(ctx, 0); err == nil {
		t.Fatal("a slot of 0 bytes was reserved")
	}
	slot, err := s.ReservePayload(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := slot.Write(ctx, payload(0, 9)); err == nil {
		t.Fatal("9 bytes written to a slot of 10")
	}
	slot, err = s.ReservePayload(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := slot.Write(ctx, payload(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := slot.Write(ctx, payload(2, 10)); err == nil {
		t.Fatal("a slot was written twice")
	}
	wantRange(t, s, slot, payload(1, 10))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ReservePayload(cancelled, 10); err == nil {
		t.Fatal("reserved under a cancelled context")
	}
}

// TestSegmentConcurrent reserves and writes from many goroutines at once (the slots
// of one file written in any order) and reads every append back.
func TestSegmentConcurrent(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.seg.maxSize = 4096
	const n = 64
	slots := make([]tiles.PayloadSlot, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			slots[i], errs[i] = s.ReservePayload(context.Background(), int64(100+i))
			if errs[i] == nil {
				errs[i] = slots[i].Write(context.Background(), payload(i, 100+i))
			}
		})
	}
	wg.Wait()
	files := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		wantRange(t, s, slots[i], payload(i, 100+i))
		files[slots[i].Key] = true
	}
	if len(files) < 2 {
		t.Fatalf("%d appends of about 130 bytes in %d file(s) of at most 4096", n, len(files))
	}
}

// TestSegmentMovedAway: when the open file's key no longer names it (the file was
// removed, or its folder moved away), the next append goes to a new file, never to
// an inode no key reaches; and if no new file can be made there, the append fails.
func TestSegmentMovedAway(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	first, err := appendPayload(t, s, payload(0, 10))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(first.Key))); err != nil {
		t.Fatal(err)
	}
	second, err := appendPayload(t, s, payload(1, 10))
	if err != nil || second.Key == first.Key || second.Off != 0 {
		t.Fatalf("after the file was removed: %s@%d, %v; want a new file", second.Key, second.Off, err)
	}
	wantRange(t, s, second, payload(1, 10))

	dir := filepath.Join(root, "payload")
	if err := os.Rename(dir, dir+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if slot, err := s.ReservePayload(t.Context(), 10); err == nil {
		t.Fatalf("appended at %s@%d with the payload folder moved away", slot.Key, slot.Off)
	}
}
