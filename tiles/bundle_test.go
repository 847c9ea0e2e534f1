package tiles_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	sttlog "github.com/sealtrail/sealtrail/tlog"
)

func TestEntryBundle(t *testing.T) {
	entries := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte{7}, tiles.MaxLeafSize)}
	b, err := tiles.MarshalEntryBundle(entries)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0, 1, 'a', 0, 0, 0xff, 0xff, 7}) || len(b) != 2+1+2+2+tiles.MaxLeafSize {
		t.Fatalf("encoding %x...", b[:8])
	}
	got, err := tiles.ParseEntryBundle(b, 3)
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("ParseEntryBundle = %d entries, %v", len(got), err)
	}
	for _, w := range []int{2, 4, 0, 257} {
		if _, err := tiles.ParseEntryBundle(b, w); err == nil {
			t.Errorf("ParseEntryBundle with width %d succeeded", w)
		}
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(bytes.Clone(b), 0), b[:1], {}} {
		if _, err := tiles.ParseEntryBundle(bad, 3); err == nil {
			t.Errorf("ParseEntryBundle of %d bytes succeeded", len(bad))
		}
	}
	if _, err := tiles.MarshalEntryBundle([][]byte{make([]byte, tiles.MaxLeafSize+1)}); err == nil {
		t.Error("MarshalEntryBundle accepted a too long entry")
	}
	if _, err := tiles.MarshalEntryBundle(nil); err == nil {
		t.Error("MarshalEntryBundle accepted no entries")
	}
	if _, err := tiles.MarshalEntryBundle(make([][]byte, 257)); err == nil {
		t.Error("MarshalEntryBundle accepted 257 entries")
	}
}

func TestPayloadBundle(t *testing.T) {
	in := tiles.PayloadBundle{First: 42, Records: []tiles.PayloadRecord{
		{LeafData: []byte(`{"v":1}`), Ciphertext: []byte("sealed-1")},
		{LeafData: []byte(`{"v":1,"x":2}`), Ciphertext: []byte{}},
	}}
	b, err := in.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var out tiles.PayloadBundle
	if err := out.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if out.First != 42 || len(out.Records) != 2 || string(out.Records[0].Ciphertext) != "sealed-1" ||
		string(out.Records[1].LeafData) != `{"v":1,"x":2}` || len(out.Records[1].Ciphertext) != 0 {
		t.Fatalf("round trip: %+v", out)
	}
	again, _ := out.MarshalBinary()
	if !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
	// Every strict prefix and every extension is rejected.
	for i := range len(b) {
		if err := new(tiles.PayloadBundle).UnmarshalBinary(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
	if err := new(tiles.PayloadBundle).UnmarshalBinary(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	bad := bytes.Clone(b)
	bad[7] = 3 // version
	if err := new(tiles.PayloadBundle).UnmarshalBinary(bad); err == nil {
		t.Fatal("version 3 accepted")
	}
	huge := bytes.Clone(b[:20])
	binary.BigEndian.PutUint32(huge[16:], 1<<20)
	if err := new(tiles.PayloadBundle).UnmarshalBinary(huge); err == nil {
		t.Fatal("record count beyond the data accepted")
	}
	for _, p := range []tiles.PayloadBundle{
		{},
		{Records: []tiles.PayloadRecord{{LeafData: nil}}},
		{Records: []tiles.PayloadRecord{{LeafData: make([]byte, tiles.MaxLeafSize+1)}}},
	} {
		if _, err := p.MarshalBinary(); err == nil {
			t.Errorf("MarshalBinary(%d records) accepted an invalid bundle", len(p.Records))
		}
	}
}

func FuzzEntryBundle(f *testing.F) {
	f.Add([]byte{0, 1, 'a', 0, 0}, 2)
	f.Add([]byte{0, 5, 'a'}, 1)
	f.Fuzz(func(t *testing.T, data []byte, width int) {
		es, err := tiles.ParseEntryBundle(data, width)
		if err != nil {
			return
		}
		b, err := tiles.MarshalEntryBundle(es)
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("parsed bundle re-encodes as %x, %v; was %x", b, err, data)
		}
	})
}

func FuzzPayloadBundle(f *testing.F) {
	seed, _ := tiles.PayloadBundle{First: 1, Records: []tiles.PayloadRecord{{LeafData: []byte("l"), Ciphertext: []byte("c")}}}.MarshalBinary()
	f.Add(seed)
	f.Add([]byte(strings.Repeat("STPAYLD\x01", 3)))
	leaf := sttlog.Leaf{ProjectID: "prj_a", Stream: sttlog.StreamEvents, Sequence: 3, ID: "evt_1",
		Timestamp: "2026-11-28T14:30:00.123Z"}
	if l, err := tiles.NewPayloadLayout(3, "prj_a", sttlog.StreamEvents, []sttlog.Leaf{leaf}, []int{2}); err == nil {
		_ = append(l.Ciphertext(0), "ct"...)
		f.Add(l.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p tiles.PayloadBundle
		if err := p.UnmarshalBinary(data); err != nil {
			return
		}
		b, err := p.MarshalBinary()
		if data[7] == 2 {
			b, err = p.MarshalCompact()
		}
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("decoded bundle re-encodes as %x, %v; was %x", b, err, data)
		}
	})
}

func TestPayloadBundleStore(t *testing.T) {
	ctx := t.Context()
	s := mem.New()
	b := tiles.PayloadBundle{First: 7, Records: []tiles.PayloadRecord{{LeafData: []byte("l"), Ciphertext: []byte("c")}}}
	if err := tiles.WritePayloadBundle(ctx, s, testPrefix, "batch1", b); err != nil {
		t.Fatal(err)
	}
	if err := tiles.WritePayloadBundle(ctx, s, testPrefix, "batch1", b); err != nil {
		t.Fatalf("identical rewrite: %v", err)
	}
	if a, _ := s.Attrs(testPrefix.Key("payload/7-batch1")); a != tiles.PrivateAttrs {
		t.Fatalf("payload written with %+v", a)
	}
	got, err := tiles.ReadPayloadBundle(ctx, s, testPrefix, 7, "batch1")
	if err != nil || len(got.Records) != 1 || string(got.Records[0].Ciphertext) != "c" {
		t.Fatalf("ReadPayloadBundle = %+v, %v", got, err)
	}
	if _, err := tiles.ReadPayloadBundle(ctx, s, testPrefix, 7, "batch2"); !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("missing bundle: %v", err)
	}
	// A bundle whose content names another first sequence than its path.
	other, _ := tiles.PayloadBundle{First: 8, Records: b.Records}.MarshalBinary()
	s.Set(testPrefix.Key("payload/7-batch3"), other)
	if _, err := tiles.ReadPayloadBundle(ctx, s, testPrefix, 7, "batch3"); err == nil {
		t.Fatal("bundle with a wrong first sequence accepted")
	}
}
