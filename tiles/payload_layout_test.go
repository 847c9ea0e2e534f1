package tiles

import (
	"bytes"
	"fmt"
	"testing"
)

// TestPayloadLayout: a bundle filled in place encodes as MarshalBinary encodes the
// same records, decodes to them, and sizes beyond the limits are refused alike.
func TestPayloadLayout(t *testing.T) {
	var recs []PayloadRecord
	for i := range 5 {
		recs = append(recs, PayloadRecord{LeafData: []byte(fmt.Sprintf(`{"sequence":%d}`, 7+i)),
			Ciphertext: bytes.Repeat([]byte{byte(i)}, i*3)})
	}
	want, err := PayloadBundle{First: 7, Records: recs}.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	leafLens, ctLens := make([]int, len(recs)), make([]int, len(recs))
	for i, r := range recs {
		leafLens[i], ctLens[i] = len(r.LeafData), len(r.Ciphertext)
	}
	l, err := NewPayloadLayout(7, leafLens, ctLens)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(recs) - 1; i >= 0; i-- { // any order
		if n := copy(l.Leaf(i), recs[i].LeafData); n != len(recs[i].LeafData) {
			t.Fatalf("record %d: leaf slot of %d bytes", i, n)
		}
		ct := append(l.Ciphertext(i), recs[i].Ciphertext...)
		if cap(l.Ciphertext(i)) != len(ct) {
			t.Fatalf("record %d: ciphertext slot of %d bytes, want %d", i, cap(l.Ciphertext(i)), len(ct))
		}
	}
	if !bytes.Equal(l.Bytes(), want) {
		t.Fatalf("layout %x\nwant   %x", l.Bytes(), want)
	}
	var back PayloadBundle
	if err := back.UnmarshalBinary(l.Bytes()); err != nil || back.First != 7 || len(back.Records) != len(recs) {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	for _, bad := range [][2][]int{
		{nil, nil},
		{{0}, {1}},
		{{MaxLeafSize + 1}, {1}},
		{{1}, {MaxPayloadCiphertext + 1}},
	} {
		if _, err := NewPayloadLayout(1, bad[0], bad[1]); err == nil {
			t.Errorf("NewPayloadLayout(%v, %v) accepted", bad[0], bad[1])
		}
	}
}
