package tiles

import (
	"encoding/binary"
	"fmt"

	sttlog "github.com/sealtrail/sealtrail/tlog"
)

// A PayloadLayout is a payload bundle of version 2 encoded in place: its records'
// sizes are known before their ciphertexts, so the compact leaves are written first
// and the ciphertexts are then written (encrypted) straight into the encoding instead
// of into buffers of their own that an encoder would copy. Once every ciphertext is
// filled in, Bytes decodes (UnmarshalBinary) to the leaves' data and the ciphertexts.
// Ciphertexts may be filled in concurrently.
type PayloadLayout struct {
	data []byte
	at   []int // offset of each record's ciphertext
}

// NewPayloadLayout lays out a bundle of the leaves of projectID's stream, which must
// be valid (tlog.Leaf.Validate) and hold the sequences first, first+1, and so on; the
// ciphertext of record i has ctLens[i] bytes. The limits are MarshalBinary's.
func NewPayloadLayout(first uint64, projectID, stream string, leaves []sttlog.Leaf, ctLens []int) (*PayloadLayout, error) {
	if _, err := StreamPrefix(projectID, stream); err != nil || len(projectID) > 255 {
		return nil, fmt.Errorf("tiles: payload bundle of log %q/%q", projectID, stream)
	}
	leafLens := make([]int, len(leaves))
	for i := range leaves {
		l := &leaves[i]
		if l.ProjectID != projectID || l.Stream != stream || l.Sequence != first+uint64(i) {
			return nil, fmt.Errorf("tiles: payload record %d is leaf %s/%s#%d, not %s/%s#%d", i,
				l.ProjectID, l.Stream, l.Sequence, projectID, stream, first+uint64(i))
		}
		n, err := compactLeafLen(l)
		if err != nil {
			return nil, err
		}
		leafLens[i] = n
	}
	size, err := payloadSize(len(leaves), func(i int) int { return leafLens[i] }, func(i int) int { return ctLens[i] })
	if err != nil {
		return nil, err
	}
	head := 2 + len(projectID) + len(stream)
	data := make([]byte, 0, size+head)
	data = append(data, payloadMagicV2[:]...)
	data = binary.BigEndian.AppendUint64(data, first)
	data = binary.BigEndian.AppendUint32(data, uint32(len(leaves)))
	data = append(append(data, byte(len(projectID))), projectID...)
	data = append(append(data, byte(len(stream))), stream...)
	off := len(data)
	data = data[:size+head]
	l := &PayloadLayout{data: data, at: make([]int, len(leaves))}
	// A batch's leaves share one timestamp: it is parsed once, not once per leaf.
	var stamp string
	var ms int64
	for i := range leaves {
		if i == 0 || leaves[i].Timestamp != stamp {
			t, err := sttlog.ParseTime(leaves[i].Timestamp)
			if err != nil {
				return nil, fmt.Errorf("tiles: leaf %d: %w", leaves[i].Sequence, err)
			}
			stamp, ms = leaves[i].Timestamp, t.UnixMilli()
		}
		binary.BigEndian.PutUint32(data[off:], uint32(leafLens[i]))
		if err := putCompactLeaf(data[off+4:off+4+leafLens[i]], &leaves[i], ms); err != nil {
			return nil, err
		}
		off += 4 + leafLens[i]
		binary.BigEndian.PutUint32(data[off:], uint32(ctLens[i]))
		l.at[i] = off + 4
		off += 4 + ctLens[i]
	}
	return l, nil
}

// Ciphertext is where record i's ciphertext goes: empty, with exactly its length as
// capacity, to append (or Seal) the ciphertext to.
func (l *PayloadLayout) Ciphertext(i int) []byte {
	n := int(binary.BigEndian.Uint32(l.data[l.at[i]-4:]))
	return l.data[l.at[i] : l.at[i] : l.at[i]+n]
}

// Bytes returns the encoded bundle.
func (l *PayloadLayout) Bytes() []byte { return l.data }

// MarshalCompact encodes b as version 2, as the sequencer writes it: every record's
// leaf data must be a valid leaf (tlog.DecodeLeaf) of one project-stream, at the
// sequences First, First+1, and so on.
func (b PayloadBundle) MarshalCompact() ([]byte, error) {
	if len(b.Records) == 0 {
		return nil, fmt.Errorf("tiles: payload bundle of 0 records")
	}
	leaves := make([]sttlog.Leaf, len(b.Records))
	ctLens := make([]int, len(b.Records))
	for i, r := range b.Records {
		l, err := sttlog.DecodeLeaf(r.LeafData)
		if err != nil {
			return nil, fmt.Errorf("tiles: payload record %d: %w", i, err)
		}
		leaves[i], ctLens[i] = l, len(r.Ciphertext)
	}
	l, err := NewPayloadLayout(b.First, leaves[0].ProjectID, leaves[0].Stream, leaves, ctLens)
	if err != nil {
		return nil, err
	}
	for i, r := range b.Records {
		_ = append(l.Ciphertext(i), r.Ciphertext...)
	}
	return l.Bytes(), nil
}
