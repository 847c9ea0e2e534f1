package tiles

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// A PayloadBundle is the private object one sealed batch writes before its commit:
// for each event of the batch, in sequence order, its leaf data and its encrypted
// payload. It lives at PayloadPath(First, batchID) and is never served to mirrors.
type PayloadBundle struct {
	First   uint64          // sequence of the first record
	Records []PayloadRecord // one per event, in sequence order
}

// A PayloadRecord is one event of a PayloadBundle.
type PayloadRecord struct {
	LeafData   []byte // the leaf, at most MaxLeafSize bytes
	Ciphertext []byte // the encrypted payload
}

// Limits of a payload bundle.
const (
	MaxPayloadRecords    = 1 << 20
	MaxPayloadCiphertext = 1 << 26
)

// payloadMagic starts every payload bundle of version 1, payloadMagicV2 of version 2;
// the last byte is the format version.
var (
	payloadMagic   = [8]byte{'S', 'T', 'P', 'A', 'Y', 'L', 'D', 1}
	payloadMagicV2 = [8]byte{'S', 'T', 'P', 'A', 'Y', 'L', 'D', 2}
)

// Encoding of version 1 (MarshalBinary), all integers big-endian:
//
//	magic    8 bytes "STPAYLD" 0x01
//	first    uint64
//	count    uint32
//	count times:
//	  leafLen uint32, leaf data, ctLen uint32, ciphertext
//
// Version 2 (PayloadLayout, what the sequencer writes) adds the log's name to the
// header and holds each leaf in a compact form (payload_leaf.go):
//
//	magic    8 bytes "STPAYLD" 0x02
//	first    uint64
//	count    uint32
//	projectLen uint8, project id, streamLen uint8, stream
//	count times:
//	  leafLen uint32, compact leaf, ctLen uint32, ciphertext
//
// Both decode to the same PayloadBundle: a version 2 record's LeafData is the leaf
// data its compact leaf stands for.

// MarshalBinary encodes b. It rejects an empty bundle, a record whose leaf is empty
// or longer than MaxLeafSize, and sizes beyond the limits above.
func (b PayloadBundle) MarshalBinary() ([]byte, error) {
	size, err := payloadSize(len(b.Records), func(i int) int { return len(b.Records[i].LeafData) },
		func(i int) int { return len(b.Records[i].Ciphertext) })
	if err != nil {
		return nil, err
	}
	out := appendPayloadHeader(make([]byte, 0, size), b.First, len(b.Records))
	for _, r := range b.Records {
		out = binary.BigEndian.AppendUint32(out, uint32(len(r.LeafData)))
		out = append(out, r.LeafData...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(r.Ciphertext)))
		out = append(out, r.Ciphertext...)
	}
	return out, nil
}

// payloadSize checks the sizes of a bundle of n records (record i with a leaf of
// leafLen(i) bytes and a ciphertext of ctLen(i)) against the limits and returns its
// encoded size.
func payloadSize(n int, leafLen, ctLen func(int) int) (int, error) {
	if n == 0 || n > MaxPayloadRecords {
		return 0, fmt.Errorf("tiles: payload bundle of %d records", n)
	}
	size := len(payloadMagic) + 8 + 4
	for i := range n {
		if l := leafLen(i); l == 0 || l > MaxLeafSize {
			return 0, fmt.Errorf("tiles: payload record %d: leaf of %d bytes", i, l)
		}
		if c := ctLen(i); c > MaxPayloadCiphertext {
			return 0, fmt.Errorf("tiles: payload record %d: ciphertext of %d bytes", i, c)
		}
		size += 8 + leafLen(i) + ctLen(i)
	}
	return size, nil
}

func appendPayloadHeader(out []byte, first uint64, n int) []byte {
	out = append(out, payloadMagic[:]...)
	out = binary.BigEndian.AppendUint64(out, first)
	return binary.BigEndian.AppendUint32(out, uint32(n))
}

// UnmarshalBinary decodes data into b, strictly: a wrong magic or version, truncated
// data, trailing bytes or a value MarshalBinary (or PayloadLayout) would reject is an
// error. The ciphertexts alias data; so do the leaves of version 1, while those of
// version 2 are rebuilt into a buffer of their own.
func (b *PayloadBundle) UnmarshalBinary(data []byte) error {
	h, err := readPayloadHeader(data)
	if err != nil {
		return err
	}
	data = data[h.len:]
	// Each record takes at least 9 bytes, which bounds count before allocating.
	if h.count == 0 || h.count > MaxPayloadRecords || uint64(h.count)*9 > uint64(len(data)) {
		return fmt.Errorf("tiles: payload bundle claims %d records in %d bytes", h.count, len(data))
	}
	recs := make([]PayloadRecord, h.count)
	field := func(i uint32, what string, limit int) ([]byte, error) {
		if len(data) < 4 {
			return nil, fmt.Errorf("tiles: payload record %d truncated before its %s length", i, what)
		}
		n := binary.BigEndian.Uint32(data)
		if uint64(n) > uint64(limit) || uint64(n) > uint64(len(data)-4) {
			return nil, fmt.Errorf("tiles: payload record %d: %s of %d bytes (%d left, limit %d)", i, what, n, len(data)-4, limit)
		}
		f := data[4 : 4+n : 4+n]
		data = data[4+n:]
		return f, nil
	}
	var leaves []byte // version 2: the rebuilt leaf data of every record
	if h.version == 2 {
		leaves = make([]byte, 0, expandedSize(h, data))
	}
	for i := range h.count {
		leaf, err := field(i, "leaf", MaxLeafSize)
		if err != nil {
			return err
		}
		if len(leaf) == 0 {
			return fmt.Errorf("tiles: payload record %d: empty leaf", i)
		}
		if h.version == 2 {
			at := len(leaves)
			if leaves, err = appendExpandedLeaf(leaves, h.projectID, h.stream, h.first+uint64(i), leaf); err != nil {
				return fmt.Errorf("tiles: payload record %d: %w", i, err)
			}
			leaf = leaves[at:len(leaves):len(leaves)]
		}
		ct, err := field(i, "ciphertext", MaxPayloadCiphertext)
		if err != nil {
			return err
		}
		recs[i] = PayloadRecord{LeafData: leaf, Ciphertext: ct}
	}
	if len(data) != 0 {
		return fmt.Errorf("tiles: payload bundle has %d trailing bytes", len(data))
	}
	*b = PayloadBundle{First: h.first, Records: recs}
	return nil
}

// expandedSize returns about the size of the leaf data of the compact leaves of the
// records in data (after header h), for a buffer that will seldom grow: a leaf's data
// is its compact form with the hash and signature in hex, its log's name, the member
// names and the sequence's digits.
func expandedSize(h payloadHeader, data []byte) int {
	size := 0
	for i := uint32(0); i < h.count && len(data) >= 4; i++ {
		n := uint64(binary.BigEndian.Uint32(data))
		size += 2*int(min(n, MaxLeafSize)) + len(h.projectID) + len(h.stream) + 140
		if n+8 > uint64(len(data)) {
			break
		}
		data = data[4+n:]
		data = data[min(4+uint64(binary.BigEndian.Uint32(data)), uint64(len(data))):]
	}
	return min(size, MaxPayloadRecords*(2*MaxLeafSize+650))
}

// A payloadHeader is the header of an encoded payload bundle.
type payloadHeader struct {
	version           int // 1 or 2
	first             uint64
	count             uint32
	projectID, stream string // version 2
	len               int    // bytes
}

var errNotPayload = errors.New("tiles: not a payload bundle (bad magic, version or length)")

// readPayloadHeader decodes the header at the start of data.
func readPayloadHeader(data []byte) (payloadHeader, error) {
	if len(data) < len(payloadMagic)+12 {
		return payloadHeader{}, errNotPayload
	}
	h := payloadHeader{first: binary.BigEndian.Uint64(data[8:]), count: binary.BigEndian.Uint32(data[16:]), len: len(payloadMagic) + 12}
	switch [8]byte(data[:8]) {
	case payloadMagic:
		h.version = 1
	case payloadMagicV2:
		h.version = 2
		name := func() (string, bool) {
			if len(data) <= h.len || len(data) <= h.len+int(data[h.len]) || data[h.len] == 0 {
				return "", false
			}
			s := string(data[h.len+1 : h.len+1+int(data[h.len])])
			h.len += 1 + len(s)
			return s, true
		}
		var ok1, ok2 bool
		h.projectID, ok1 = name()
		h.stream, ok2 = name()
		if !ok1 || !ok2 {
			return payloadHeader{}, errors.New("tiles: payload bundle header truncated before its log's name")
		}
		if _, err := StreamPrefix(h.projectID, h.stream); err != nil {
			return payloadHeader{}, fmt.Errorf("tiles: payload bundle header: %w", err)
		}
	default:
		return payloadHeader{}, errNotPayload
	}
	return h, nil
}

// WritePayloadBundle writes b, the payload bundle of batch batchID of the log under p,
// at PayloadPath(b.First, batchID), write-once and private. Because batchID is random,
// a batch that failed before its commit never collides with the one replacing it.
func WritePayloadBundle(ctx context.Context, s Store, p Prefix, batchID string, b PayloadBundle) error {
	path, err := PayloadPath(b.First, batchID)
	if err != nil {
		return err
	}
	data, err := b.MarshalBinary()
	if err != nil {
		return err
	}
	if err := s.Create(ctx, p.Key(path), data, PrivateAttrs); err != nil {
		return fmt.Errorf("tiles: write payload bundle %s%s: %w", p, path, err)
	}
	return nil
}

// ReadPayloadBundle reads and decodes the payload bundle of the batch (first,
// batchID) of the log under p, checking that it starts at first.
func ReadPayloadBundle(ctx context.Context, s Store, p Prefix, first uint64, batchID string) (PayloadBundle, error) {
	path, err := PayloadPath(first, batchID)
	if err != nil {
		return PayloadBundle{}, err
	}
	data, err := s.Get(ctx, p.Key(path))
	if err != nil {
		return PayloadBundle{}, fmt.Errorf("tiles: read payload bundle %s%s: %w", p, path, err)
	}
	var b PayloadBundle
	if err := b.UnmarshalBinary(data); err != nil {
		return PayloadBundle{}, fmt.Errorf("tiles: payload bundle %s%s: %w", p, path, err)
	}
	if b.First != first {
		return PayloadBundle{}, fmt.Errorf("tiles: payload bundle %s%s starts at %d", p, path, b.First)
	}
	return b, nil
}
