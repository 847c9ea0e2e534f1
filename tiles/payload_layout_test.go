package tiles

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	sttlog "github.com/sealtrail/sealtrail/tlog"
)

// layoutLeaves returns n valid leaves of a project's events stream from sequence
// first, every third of them signed.
func layoutLeaves(t testing.TB, first uint64, n int) []sttlog.Leaf {
	t.Helper()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	ts := time.Date(2026, 11, 28, 14, 30, 0, 123_456_789, time.UTC)
	var leaves []sttlog.Leaf
	for i := range n {
		l := sttlog.Leaf{ProjectID: "prj_01jd0000000000000000000000", Stream: sttlog.StreamEvents,
			Sequence: first + uint64(i), ID: fmt.Sprintf("evt_%026d", i),
			Timestamp: sttlog.FormatTime(ts.Add(time.Duration(i) * 7 * time.Millisecond))}
		l.PayloadHash[0], l.PayloadHash[31] = byte(i), 0xee
		if i%3 == 1 {
			l.SigningKeyID = fmt.Sprintf("key-%d", i)
			l.Signature = hex.EncodeToString(ed25519.Sign(key, []byte(l.ID)))
		}
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, l)
	}
	return leaves
}

// fillLayout lays out leaves with ciphertexts of i*3 bytes of i, filled in any order.
func fillLayout(t testing.TB, first uint64, leaves []sttlog.Leaf) []byte {
	t.Helper()
	ctLens := make([]int, len(leaves))
	for i := range ctLens {
		ctLens[i] = i * 3
	}
	l, err := NewPayloadLayout(first, leaves[0].ProjectID, leaves[0].Stream, leaves, ctLens)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(leaves) - 1; i >= 0; i-- { // any order
		ct := append(l.Ciphertext(i), bytes.Repeat([]byte{byte(i)}, i*3)...)
		if cap(l.Ciphertext(i)) != len(ct) {
			t.Fatalf("record %d: ciphertext slot of %d bytes, want %d", i, cap(l.Ciphertext(i)), len(ct))
		}
	}
	return l.Bytes()
}

// TestPayloadLayout: a bundle laid out in place (version 2, compact leaves) decodes
// to the leaves' data and the ciphertexts, every byte of it counts, it is smaller
// than version 1 of the same records, and leaves it cannot hold are refused.
func TestPayloadLayout(t *testing.T) {
	leaves := layoutLeaves(t, 7, 6)
	data := fillLayout(t, 7, leaves)
	var back PayloadBundle
	if err := back.UnmarshalBinary(data); err != nil || back.First != 7 || len(back.Records) != len(leaves) {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	v1 := PayloadBundle{First: 7}
	for i, r := range back.Records {
		if want := leaves[i].Encode(); !bytes.Equal(r.LeafData, want) {
			t.Fatalf("record %d: leaf data\n%s\nwant\n%s", i, r.LeafData, want)
		}
		if !bytes.Equal(r.Ciphertext, bytes.Repeat([]byte{byte(i)}, i*3)) {
			t.Fatalf("record %d: ciphertext %x", i, r.Ciphertext)
		}
		v1.Records = append(v1.Records, PayloadRecord{LeafData: leaves[i].Encode(), Ciphertext: r.Ciphertext})
	}
	old, err := v1.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// About 160 bytes less per unsigned leaf, 290 per signed one.
	if saved := len(old) - len(data); saved < 6*150 {
		t.Errorf("version 2 is %d bytes, version 1 %d: saved only %d", len(data), len(old), saved)
	}
	// A group object of a version 1 and a version 2 segment splits at their border.
	if lens, err := SplitGroupPayload(append(bytes.Clone(old), data...)); err != nil || len(lens) != 2 || lens[0] != len(old) || lens[1] != len(data) {
		t.Fatalf("SplitGroupPayload: %v, %v", lens, err)
	}
	// Every strict prefix, every extension and every changed byte of a compact leaf's
	// fixed part is rejected or decodes to other leaf data, never to the same.
	for i := range len(data) {
		if err := new(PayloadBundle).UnmarshalBinary(data[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
		bad := bytes.Clone(data)
		bad[i] ^= 0x41
		var got PayloadBundle
		if err := got.UnmarshalBinary(bad); err == nil && got.First == 7 && len(got.Records) == len(leaves) {
			same := true
			for j, r := range got.Records {
				same = same && bytes.Equal(r.LeafData, back.Records[j].LeafData) && bytes.Equal(r.Ciphertext, back.Records[j].Ciphertext)
			}
			if same {
				t.Fatalf("byte %d changed: decodes to the same bundle", i)
			}
		}
	}
	if err := new(PayloadBundle).UnmarshalBinary(append(bytes.Clone(data), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}

	for name, mutate := range map[string]func(ls []sttlog.Leaf){
		"another project":   func(ls []sttlog.Leaf) { ls[2].ProjectID = "prj_other" },
		"another stream":    func(ls []sttlog.Leaf) { ls[2].Stream = sttlog.StreamProjectAudit },
		"a sequence gap":    func(ls []sttlog.Leaf) { ls[2].Sequence++ },
		"uppercase hex":     func(ls []sttlog.Leaf) { ls[1].Signature = "AB" + ls[1].Signature[2:] },
		"a short signature": func(ls []sttlog.Leaf) { ls[1].Signature = ls[1].Signature[2:] },
		"a bad timestamp":   func(ls []sttlog.Leaf) { ls[0].Timestamp = "yesterday" },
	} {
		ls := layoutLeaves(t, 7, 3)
		mutate(ls)
		if _, err := NewPayloadLayout(7, ls[0].ProjectID, ls[0].Stream, ls, make([]int, len(ls))); err == nil {
			t.Errorf("%s: NewPayloadLayout accepted", name)
		}
	}
	if _, err := NewPayloadLayout(1, "prj_x", sttlog.StreamEvents, nil, nil); err == nil {
		t.Error("NewPayloadLayout accepted no leaves")
	}
	if _, err := NewPayloadLayout(7, leaves[0].ProjectID, leaves[0].Stream, leaves[:1], []int{MaxPayloadCiphertext + 1}); err == nil {
		t.Error("NewPayloadLayout accepted a ciphertext beyond the limit")
	}
}

// TestCompactLeafTimes: every millisecond in the layout's years comes back as the
// same timestamp, and one outside them does not decode.
func TestCompactLeafTimes(t *testing.T) {
	leaves := layoutLeaves(t, 1, 1)
	for _, ts := range []string{"0000-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z",
		"2026-02-28T23:59:59.001Z", "2028-02-29T12:00:00.500Z", "9999-12-31T23:59:59.999Z"} {
		leaves[0].Timestamp = ts
		var b PayloadBundle
		if err := b.UnmarshalBinary(fillLayout(t, 1, leaves)); err != nil {
			t.Fatalf("%s: %v", ts, err)
		}
		if want := leaves[0].Encode(); !bytes.Equal(b.Records[0].LeafData, want) {
			t.Fatalf("%s: leaf data %s, want %s", ts, b.Records[0].LeafData, want)
		}
	}
	data := fillLayout(t, 1, leaves)
	at := len(payloadMagicV2) + 12 + 1 + len(leaves[0].ProjectID) + 1 + len(leaves[0].Stream) + 4
	binary.BigEndian.PutUint64(data[at:], uint64(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()))
	if err := new(PayloadBundle).UnmarshalBinary(data); err == nil {
		t.Fatal("a timestamp in year 10000 decoded")
	}
}

// BenchmarkPayloadDecode: decoding a bundle of 1,000 records of 1 KiB ciphertexts,
// version 1 against version 2, whose leaves are rebuilt.
func BenchmarkPayloadDecode(b *testing.B) {
	leaves := layoutLeaves(b, 1, 1000)
	ctLens := make([]int, len(leaves))
	v1 := PayloadBundle{First: 1}
	for i := range ctLens {
		ctLens[i] = 1052
		v1.Records = append(v1.Records, PayloadRecord{LeafData: leaves[i].Encode(), Ciphertext: make([]byte, 1052)})
	}
	l, err := NewPayloadLayout(1, leaves[0].ProjectID, leaves[0].Stream, leaves, ctLens)
	if err != nil {
		b.Fatal(err)
	}
	old, err := v1.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"v1", old}, {"v2", l.Bytes()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(float64(len(c.data))/1000, "bytes/record")
			for b.Loop() {
				var p PayloadBundle
				if err := p.UnmarshalBinary(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
