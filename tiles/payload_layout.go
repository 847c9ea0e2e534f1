package tiles

import (
	"encoding/binary"
)

// A PayloadLayout is a payload bundle encoded in place: its records' sizes are known
// before their contents, so the leaf data and the ciphertexts are written (encrypted)
// straight into the encoding instead of into buffers of their own that MarshalBinary
// then copies. Once every record is filled in, Bytes is what MarshalBinary returns
// for the same records. Records may be filled in concurrently.
type PayloadLayout struct {
	data []byte
	at   []int // offset of each record's leaf; its ciphertext follows it and its length
}

// NewPayloadLayout lays out a bundle starting at sequence first whose record i has a
// leaf of leafLens[i] bytes and a ciphertext of ctLens[i] bytes, with MarshalBinary's
// limits.
func NewPayloadLayout(first uint64, leafLens, ctLens []int) (*PayloadLayout, error) {
	size, err := payloadSize(len(leafLens), func(i int) int { return leafLens[i] }, func(i int) int { return ctLens[i] })
	if err != nil {
		return nil, err
	}
	l := &PayloadLayout{data: appendPayloadHeader(make([]byte, 0, size), first, len(leafLens))[:size], at: make([]int, len(leafLens))}
	off := len(payloadMagic) + 8 + 4 // the header's length
	for i := range leafLens {
		binary.BigEndian.PutUint32(l.data[off:], uint32(leafLens[i]))
		l.at[i] = off + 4
		off += 4 + leafLens[i]
		binary.BigEndian.PutUint32(l.data[off:], uint32(ctLens[i]))
		off += 4 + ctLens[i]
	}
	return l, nil
}

// Leaf is where record i's leaf data goes, of exactly its length.
func (l *PayloadLayout) Leaf(i int) []byte {
	n := int(binary.BigEndian.Uint32(l.data[l.at[i]-4:]))
	return l.data[l.at[i] : l.at[i]+n : l.at[i]+n]
}

// Ciphertext is where record i's ciphertext goes: empty, with exactly its length as
// capacity, to append (or Seal) the ciphertext to.
func (l *PayloadLayout) Ciphertext(i int) []byte {
	at := l.at[i] + len(l.Leaf(i)) + 4
	n := int(binary.BigEndian.Uint32(l.data[at-4:]))
	return l.data[at : at : at+n]
}

// Bytes returns the encoded bundle.
func (l *PayloadLayout) Bytes() []byte { return l.data }
