package tiles

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"

	sttlog "github.com/sealtrail/sealtrail/tlog"
)

// A version 2 payload bundle (payloadMagicV2) holds each record's leaf in a compact
// binary form instead of its leaf data. The leaf data of a one-project event is about
// 230 bytes of JSON, a fifth of a 1 KB event's record, and its entry bundle holds the
// same bytes; most of them are member names, the project id and stream repeated in
// every record, the sequence the record's place implies, and hex. The compact form
// keeps only what varies, and the reader rebuilds the leaf data from it with
// tlog.Leaf.Encode, the one encoder the sealer used, so the bytes are the same:
//
//	timestamp    int64, Unix milliseconds (the leaf's timestamp, TimeLayout)
//	payloadHash  32 bytes
//	idLen uint8, id
//	when signed: keyIDLen uint16, signingKeyId, signature (64 bytes, raw)
//
// The project id and stream are in the bundle's header, once; the sequence is the
// bundle's first sequence plus the record's index.

// compactLeafLen returns the length of l's compact form, or an error if l has no
// compact form (a field beyond the form's limits, a signature that is not 64 bytes of
// lowercase hex).
func compactLeafLen(l *sttlog.Leaf) (int, error) {
	if len(l.ID) == 0 || len(l.ID) > 255 {
		return 0, fmt.Errorf("tiles: leaf %d: event id of %d bytes", l.Sequence, len(l.ID))
	}
	n := 8 + 32 + 1 + len(l.ID)
	if l.Signature != "" || l.SigningKeyID != "" {
		if len(l.SigningKeyID) == 0 || len(l.SigningKeyID) > 0xffff || len(l.Signature) != 2*64 {
			return 0, fmt.Errorf("tiles: leaf %d: signing key id of %d bytes, signature of %d", l.Sequence, len(l.SigningKeyID), len(l.Signature))
		}
		n += 2 + len(l.SigningKeyID) + 64
	}
	return n, nil
}

// putCompactLeaf writes l's compact form into b, which has exactly compactLeafLen(l)
// bytes; ms is l's timestamp in Unix milliseconds.
func putCompactLeaf(b []byte, l *sttlog.Leaf, ms int64) error {
	binary.BigEndian.PutUint64(b, uint64(ms))
	copy(b[8:], l.PayloadHash[:])
	b[40] = byte(len(l.ID))
	at := 41 + copy(b[41:], l.ID)
	if l.Signature == "" {
		return nil
	}
	binary.BigEndian.PutUint16(b[at:], uint16(len(l.SigningKeyID)))
	at += 2 + copy(b[at+2:], l.SigningKeyID)
	sig, err := sttlog.ParseSignature(l.Signature)
	if err != nil {
		return fmt.Errorf("tiles: leaf %d: %w", l.Sequence, err)
	}
	copy(b[at:], sig)
	return nil
}

// errCompactLeaf wraps every reason a compact leaf does not decode.
var errCompactLeaf = errors.New("compact leaf")

// appendExpandedLeaf decodes the compact leaf c of sequence seq of the log projectID's
// stream, whose header readPayloadHeader checked, and appends its leaf data to b. It
// accepts only compact leaves of valid leaves (tlog.Leaf.Validate), checking what
// the form leaves open: the sequence, the id and the timestamp's year (the signature
// is hex of 64 bytes by construction); Validate would parse back the timestamp and
// signature it has just formatted, half the cost of a decode.
func appendExpandedLeaf(b []byte, projectID, stream string, seq uint64, c []byte) ([]byte, error) {
	if len(c) < 41 || len(c) < 41+int(c[40]) {
		return nil, fmt.Errorf("%w of %d bytes", errCompactLeaf, len(c))
	}
	ts, ok := sttlog.FormatUnixMilli(int64(binary.BigEndian.Uint64(c)))
	if !ok {
		return nil, fmt.Errorf("%w: timestamp %d ms is outside years 0-9999", errCompactLeaf, int64(binary.BigEndian.Uint64(c)))
	}
	if seq < 1 || seq > 1<<53 {
		return nil, fmt.Errorf("%w: sequence %d", errCompactLeaf, seq)
	}
	l := sttlog.Leaf{ProjectID: projectID, Stream: stream, Sequence: seq, Timestamp: ts, ID: string(c[41 : 41+int(c[40])])}
	if !sttlog.ValidEventID(l.ID) {
		return nil, fmt.Errorf("%w: event id %q", errCompactLeaf, l.ID)
	}
	copy(l.PayloadHash[:], c[8:40])
	rest := c[41+int(c[40]):]
	if len(rest) > 0 {
		if len(rest) < 2 {
			return nil, fmt.Errorf("%w: %d bytes after the id", errCompactLeaf, len(rest))
		}
		n := int(binary.BigEndian.Uint16(rest))
		if n == 0 || len(rest) != 2+n+64 {
			return nil, fmt.Errorf("%w: signing key id of %d bytes in %d", errCompactLeaf, n, len(rest))
		}
		l.SigningKeyID, l.Signature = string(rest[2:2+n]), hex.EncodeToString(rest[2+n:])
		if !utf8.ValidString(l.SigningKeyID) {
			return nil, fmt.Errorf("%w: signing key id is not UTF-8", errCompactLeaf)
		}
	}
	return l.AppendEncoded(b), nil
}
