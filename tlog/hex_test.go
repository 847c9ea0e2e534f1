package tlog

import (
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

// refDecodeLowerHex is decodeLowerHex as it was: check every digit, then hex.Decode.
func refDecodeLowerHex(dst []byte, s string) (bool, int) {
	if len(s) != 2*len(dst) {
		return false, -1
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false, i
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil, -1
}

// FuzzDecodeLowerHex checks the table decoder against the reference: the same
// acceptance, the same bytes, the same first bad position.
func FuzzDecodeLowerHex(f *testing.F) {
	for _, s := range []string{"", "00", "ff", "FF", "0g", "g0", "a1b2", "zz", strings.Repeat("ab", 32), strings.Repeat("ab", 31) + "aG"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := len(s) / 2
		got, want := make([]byte, n), make([]byte, n)
		err := decodeLowerHex(got, s)
		ok, bad := refDecodeLowerHex(want, s)
		if (err == nil) != ok {
			t.Fatalf("decodeLowerHex(%q) = %v, reference ok %v", s, err, ok)
		}
		if ok && string(got) != string(want) {
			t.Fatalf("decodeLowerHex(%q) = %x, want %x", s, got, want)
		}
		if bad >= 0 && !strings.HasSuffix(err.Error(), "position "+strconv.Itoa(bad)) {
			t.Fatalf("decodeLowerHex(%q) = %v, want position %d", s, err, bad)
		}
	})
}
