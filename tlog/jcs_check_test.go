package tlog

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlainASCII compares the eight-bytes-at-a-time scan with the byte rule, for every
// byte value at every position of inputs up to 24 bytes long.
func TestPlainASCII(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' && c < 0x80 }
	for n := 0; n <= 24; n++ {
		for at := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[at] = byte(c)
				want := n
				if !plain(byte(c)) {
					want = at
				}
				if got := plainASCII(b); got != want {
					t.Fatalf("plainASCII(%q) = %d, want %d", b, got, want)
				}
			}
		}
		if got := plainASCII(bytes.Repeat([]byte{'a'}, n)); got != n {
			t.Fatalf("plainASCII of %d plain bytes = %d", n, got)
		}
	}
}

// TestIsCanonicalLimited: canonical text within the limits is recognized; anything
// CanonicalizeLimited would change or refuse is not.
func TestIsCanonicalLimited(t *testing.T) {
	lim := Limits{MaxDepth: 4, MaxMembers: 3}
	nest := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"a":1,"b":{"c":1,"d":2,"e":3},"f":[1,2,3,4,5]}`, true},
		{`{"a":"` + strings.Repeat("x", 1000) + `\"\\\n\u001f` + "\x7f" + ` é😂"}`, true},
		{`[true,false,null,-1,0.5,1e+21,"",{}]`, true},
		{nest(4), true},
		{`{"a":1,"b":2,"c":3,"d":4}`, false}, // members beyond the limit
		{`{"a":{"b":1,"c":2,"d":3,"e":4}}`, false},
		{nest(5), false}, // depth beyond the limit
		{`[[[[[1]]]]]`, false},
		{`{"b":1,"a":2}`, false},    // order
		{`{"a":1,"a":1}`, false},    // duplicate
		{`{"a":1 }`, false},         // whitespace
		{` 1`, false},               // whitespace
		{`"\u00e9"`, false},         // escape with a literal form
		{`"\/"`, false},             // escape JCS does not write
		{`"\u000a"`, false},         // \n has a short form
		{"\"\x01\"", false},         // control character
		{"\"\xff\"", false},         // invalid UTF-8
		{`1.0`, false},              // number not in its shortest form
		{`1E30`, false},             // exponent spelling
		{`-0`, false},               // negative zero
		{`9007199254740993`, false}, // beyond 2^53
		{`{"a":1}x`, false},         // trailing data
		{`"abc`, false},             // unterminated
		{``, false},
	} {
		got := IsCanonicalLimited([]byte(tc.in), lim)
		if got != tc.want {
			t.Errorf("IsCanonicalLimited(%.60q) = %v, want %v", tc.in, got, tc.want)
		}
		if got {
			out, err := CanonicalizeLimited([]byte(tc.in), lim)
			if err != nil || string(out) != tc.in {
				t.Errorf("IsCanonicalLimited(%.60q), but CanonicalizeLimited gives %.60q, %v", tc.in, out, err)
			}
		}
	}
}

// FuzzIsCanonicalLimited checks on any input that whatever IsCanonicalLimited accepts,
// CanonicalizeLimited returns unchanged, with and without limits, and that the
// canonical form of any accepted input is recognized unless a key holds an escape.
func FuzzIsCanonicalLimited(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x"]}`, `{"a":[true,false,null,"x"],"b":1}`, `1e+21`, `"\ud83d\ude02"`,
		`{"a":1,"a":2}`, "\"\xff\"", `[1,2,{"c":{"d":[]}}]`, `"` + strings.Repeat("y", 40) + `\\"`,
		`{"\u0000":"\u0000"}`, `[-0,1e-400,5e-324]`, `{"a":{"b":{"c":{"d":{"e":1}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, lim := range []Limits{{}, {MaxDepth: 4, MaxMembers: 3}} {
			out, err := CanonicalizeLimited(in, lim)
			if IsCanonicalLimited(in, lim) && (err != nil || !bytes.Equal(out, in)) {
				t.Fatalf("IsCanonicalLimited(%q, %+v), but CanonicalizeLimited gives %q, %v", in, lim, out, err)
			}
			if err == nil && !bytes.Contains(out, []byte(`\`)) && !IsCanonicalLimited(out, lim) {
				t.Fatalf("canonical form %q of %q not recognized with %+v", out, in, lim)
			}
		}
	})
}
