package tlog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	sumdb "golang.org/x/mod/sumdb/tlog"
)

// Hash is a SHA-256 hash; it is x/mod's tlog.Hash so tile code can use that package's
// tile math directly. In JSON Sealtrail writes hashes as lowercase hex (see Hex).
type Hash = sumdb.Hash

// HashSize is the size of a Hash in bytes.
const HashSize = sumdb.HashSize

// LeafHash is the RFC 6962 leaf hash SHA-256(0x00 || data).
func LeafHash(data []byte) Hash {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(data)
	var out Hash
	h.Sum(out[:0])
	return out
}

// NodeHash is the RFC 6962 interior hash SHA-256(0x01 || left || right).
func NodeHash(left, right Hash) Hash {
	var buf [1 + 2*HashSize]byte
	buf[0] = 1
	copy(buf[1:], left[:])
	copy(buf[1+HashSize:], right[:])
	return sha256.Sum256(buf[:])
}

// EmptyRoot is the root of the empty tree, SHA-256 of no bytes.
var EmptyRoot = Hash(sha256.Sum256(nil))

// Hex returns h as lowercase hex.
func Hex(h Hash) string { return hex.EncodeToString(h[:]) }

// ParseHash parses a 64-character lowercase hex hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if err := decodeLowerHex(h[:], s); err != nil {
		return Hash{}, fmt.Errorf("hash: %w", err)
	}
	return h, nil
}

// decodeLowerHex decodes s, which must be exactly 2*len(dst) lowercase hex digits.
func decodeLowerHex(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return fmt.Errorf("want %d hex digits, got %d", 2*len(dst), len(s))
	}
	// One pass over a table: the verifier decodes three of these per export line.
	for i := range dst {
		hi, lo := lowerHex[s[2*i]], lowerHex[s[2*i+1]]
		if hi|lo == 0xff {
			if hi == 0xff {
				return fmt.Errorf("not lowercase hex at position %d", 2*i)
			}
			return fmt.Errorf("not lowercase hex at position %d", 2*i+1)
		}
		dst[i] = hi<<4 | lo
	}
	return nil
}

// lowerHex maps each lowercase hex digit to its value and every other byte to 0xff.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()
