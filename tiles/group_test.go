package tiles_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
)

func TestGroupPayloadKey(t *testing.T) {
	at := time.Date(2026, 11, 24, 18, 5, 0, 123e6, time.UTC)
	key, err := tiles.GroupPayloadKey(at, "abc_1")
	if err != nil || key != "payload/20261124T18/1795543500123-abc_1" {
		t.Fatalf("GroupPayloadKey = %q, %v", key, err)
	}
	if got, ok := tiles.GroupPayloadTime(key); !ok || !got.Equal(at) {
		t.Fatalf("GroupPayloadTime(%q) = %v, %v", key, got, ok)
	}
	for _, bad := range []string{"payload/1-abc", "prj_a/events/payload/1-abc", "payload/20261124T17/1795543500123-abc_1",
		"payload/20261124T18/x-abc", "payload/20261124T18/1795543500123-", "payload/20261124T18/1795543500123-a/b"} {
		if _, ok := tiles.GroupPayloadTime(bad); ok {
			t.Errorf("GroupPayloadTime(%q) accepted it", bad)
		}
	}
	for _, bad := range []string{"", "a.b", "a/b", string(make([]byte, 65))} {
		if _, err := tiles.GroupPayloadKey(at, bad); err == nil {
			t.Errorf("GroupPayloadKey(%q) accepted it", bad)
		}
	}
}

// TestPayloadRefs: a batch row without a segment names its own object under the
// log's prefix; one with a segment reads only its bytes of the group object, and a
// segment that is not its batch's bundle is ErrPayloadCorrupt.
func TestPayloadRefs(t *testing.T) {
	ctx := context.Background()
	s := mem.New()
	p := tiles.Prefix("prj_a/events/")
	b1 := tiles.PayloadBundle{First: 1, Records: []tiles.PayloadRecord{{LeafData: []byte("l1"), Ciphertext: []byte("c1")}}}
	b2 := tiles.PayloadBundle{First: 7, Records: []tiles.PayloadRecord{{LeafData: []byte("l7"), Ciphertext: []byte("c7")}, {LeafData: []byte("l8")}}}
	e1, _ := b1.MarshalBinary()
	e2, _ := b2.MarshalBinary()
	key, _ := tiles.GroupPayloadKey(time.Now(), "tick")
	if err := s.Create(ctx, key, append(bytes.Clone(e1), e2...), tiles.PrivateAttrs); err != nil {
		t.Fatal(err)
	}
	if err := tiles.WritePayloadBundle(ctx, s, p, "old", b1); err != nil {
		t.Fatal(err)
	}
	ref, err := tiles.BatchPayloadRef(p, 1, "old", "", 0, 0)
	if err != nil || ref.Key != "prj_a/events/payload/1-old" || ref.Len != 0 {
		t.Fatalf("per-batch ref %+v, %v", ref, err)
	}
	if got, err := tiles.ReadPayloadRef(ctx, s, ref, 1, 1); err != nil || string(got.Records[0].Ciphertext) != "c1" {
		t.Fatalf("per-batch read %+v, %v", got, err)
	}
	ref, err = tiles.BatchPayloadRef(p, 7, "b", key, uint64(len(e1)), uint64(len(e2)))
	if err != nil || ref.String() != key+"@"+strconv.Itoa(len(e1))+"+"+strconv.Itoa(len(e2)) {
		t.Fatalf("segment ref %+v, %v", ref, err)
	}
	got, err := tiles.ReadPayloadRef(ctx, s, ref, 7, 2)
	if err != nil || string(got.Records[1].LeafData) != "l8" {
		t.Fatalf("segment read %+v, %v", got, err)
	}
	for _, r := range []struct {
		off, n, first, count uint64
	}{{0, uint64(len(e1)), 7, 2}, {1, uint64(len(e2)), 7, 2}, {uint64(len(e1)), uint64(len(e2)) + 5, 7, 2}, {uint64(len(e1)), uint64(len(e2)), 7, 3}} {
		ref, err := tiles.BatchPayloadRef(p, r.first, "b", key, r.off, r.n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tiles.ReadPayloadRef(ctx, s, ref, r.first, r.count); !errors.Is(err, tiles.ErrPayloadCorrupt) {
			t.Errorf("segment %+v: %v, want ErrPayloadCorrupt", r, err)
		}
	}
	missing, _ := tiles.GroupPayloadKey(time.Now(), "missing")
	ref, _ = tiles.BatchPayloadRef(p, 7, "b", missing, 0, 10)
	if _, err := tiles.ReadPayloadRef(ctx, s, ref, 7, 2); !errors.Is(err, tiles.ErrNotFound) {
		t.Errorf("missing group object: %v, want ErrNotFound", err)
	}
	for _, bad := range [][2]uint64{{0, 0}, {1 << 63, 1}} {
		if _, err := tiles.BatchPayloadRef(p, 7, "b", key, bad[0], bad[1]); err == nil {
			t.Errorf("segment %v accepted", bad)
		}
	}
	if _, err := tiles.BatchPayloadRef(p, 7, "b", "prj_a/events/payload/7-b", 0, 5); err == nil {
		t.Error("a segment of an object that is not a group object was accepted")
	}
	all, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if lens, err := tiles.SplitGroupPayload(all); err != nil || !slices.Equal(lens, []int{len(e1), len(e2)}) {
		t.Fatalf("SplitGroupPayload = %v, %v", lens, err)
	}
	if _, err := tiles.SplitGroupPayload(all[:len(all)-1]); err == nil {
		t.Fatal("SplitGroupPayload accepted a truncated object")
	}
}
