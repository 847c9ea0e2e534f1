package tlog

import (
	"encoding/binary"
	"math/bits"
)

// IsCanonicalLimited reports whether in is already its own RFC 8785 form within lim:
// whether CanonicalizeLimited(in, lim) would return in itself, byte for byte. It
// builds nothing, so a caller that holds canonical text (the clients send it) skips
// the copy; false says only that CanonicalizeLimited must decide (it may still
// succeed, with other bytes, or fail with its error).
func IsCanonicalLimited(in []byte, lim Limits) bool {
	s := canonScan{in: in, lim: lim}
	return s.value(0) && s.pos == len(in)
}

// Bytes of eight copies of one value, for plainASCII.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// plainASCII returns the length of the longest prefix of b made of printable ASCII
// other than '"' and '\\': the bytes a JSON string holds as they are, in its RFC 8785
// form too. It reads eight bytes at a time; the byte that stops it is left to the
// caller's per-byte rules.
func plainASCII(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A lane is flagged if its byte is below 0x20, is '"' or '\\' (a zero lane
		// after the xor), or has its high bit set. Borrows may also flag lanes
		// above a flagged one, never below it, so the lowest flag is exact.
		q, bs := x^(lanes01*'"'), x^(lanes01*'\\')
		m := ((x - lanes01*0x20) &^ x) | ((q - lanes01) &^ q) | ((bs - lanes01) &^ bs) | x
		if m &= lanes80; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			break
		}
	}
	return i
}
