package tlog

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// jcsVectorsModule holds the official RFC 8785 vectors in its testdata directory.
const jcsVectorsModule = "github.com/cyberphone/json-canonicalization@v0.0.0-20241213102144-19d51d7fe467"

// jcsVectorDir downloads the vectors module through the Go module proxy (cached after the
// first run) and returns its testdata directory.
func jcsVectorDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", jcsVectorsModule).Output()
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("go mod download %s: %v", jcsVectorsModule, err)
		}
		t.Skipf("RFC 8785 vectors not available: go mod download %s: %v", jcsVectorsModule, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download output %q: %v", out, err)
	}
	return filepath.Join(info.Dir, "testdata")
}

func TestCanonicalizeOfficialVectors(t *testing.T) {
	dir := jcsVectorDir(t)
	inputs, err := filepath.Glob(filepath.Join(dir, "input", "*.json"))
	if err != nil || len(inputs) < 6 {
		t.Fatalf("want the 6 official input files, found %d (%v)", len(inputs), err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(src)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestNumberSerialization checks the IEEE 754 samples of RFC 8785 appendix B.
func TestNumberSerialization(t *testing.T) {
	for _, tc := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		if got := string(AppendNumber(nil, math.Float64frombits(tc.bits))); got != tc.want {
			t.Errorf("%#016x: got %s, want %s", tc.bits, got, tc.want)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		kind error
	}{
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey},
		{"duplicate key nested", `{"x":{"b":true,"b":true}}`, ErrDuplicateKey},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`, ErrDuplicateKey},
		{"invalid UTF-8 in string", "{\"a\":\"\xff\"}", ErrInvalidUTF8},
		{"invalid UTF-8 in key", "{\"\xc3\x28\":1}", ErrInvalidUTF8},
		{"overlong UTF-8", "\"\xc0\xaf\"", ErrInvalidUTF8},
		{"encoded surrogate in UTF-8", "\"\xed\xa0\x80\"", ErrInvalidUTF8},
		{"lone high surrogate", `"\ud800"`, ErrLoneSurrogate},
		{"lone high surrogate then text", `"\ud83dabc"`, ErrLoneSurrogate},
		{"high then high", `"\ud83d\ud83d"`, ErrLoneSurrogate},
		{"lone low surrogate", `"\udc00"`, ErrLoneSurrogate},
		{"integer above 2^53", `9007199254740993`, ErrIntegerRange},
		{"integer below -2^53", `[-9007199254740993]`, ErrIntegerRange},
		{"huge integer", `{"n":123456789012345678901234567890}`, ErrIntegerRange},
		{"integral float above 2^53", `1e16`, ErrIntegerRange},
		{"integral fraction above 2^53", `12345678901234567890.5`, ErrIntegerRange},
		// Spellings of 2^53+1, which the float64 rounds to 2^53 (issue 14, item 7).
		{"2^53+1 with a fraction", `9007199254740993.0`, ErrIntegerRange},
		{"2^53+1 with an exponent", `9007199254740993e0`, ErrIntegerRange},
		{"2^53+1 scaled down", `90071992547409930e-1`, ErrIntegerRange},
		{"2^53+1 scaled up", `0.9007199254740993E+16`, ErrIntegerRange},
		{"-(2^53+1) with a fraction", `[-9007199254740993.0]`, ErrIntegerRange},
		{"2^53 and a half", `9007199254740992.5`, ErrIntegerRange},
		{"2^53 and a tiny fraction", `9007199254740992.000000000000000000001`, ErrIntegerRange},
		// Just below 1e21, where the float64 rounds up to 1e21.
		{"just below 1e21", `999999999999999999999.5`, ErrIntegerRange},
		{"just below 1e21 with an exponent", `9.999999999999999999999e20`, ErrIntegerRange},
		{"overflow to infinity", `1e400`, ErrNonFinite},
		{"negative overflow", `-1.5e309`, ErrNonFinite},
		{"NaN literal", `NaN`, ErrSyntax},
		{"Infinity literal", `[Infinity]`, ErrSyntax},
		{"trailing data", `{} {}`, ErrSyntax},
		{"trailing comma", `[1,]`, ErrSyntax},
		{"leading zero", `01`, ErrSyntax},
		{"bare fraction", `.5`, ErrSyntax},
		{"empty", ``, ErrSyntax},
		{"unterminated string", `"abc`, ErrSyntax},
		{"control char in string", "\"a\x01\"", ErrSyntax},
		{"single quotes", `{'a':1}`, ErrSyntax},
		{"bad escape", `"\x41"`, ErrSyntax},
		{"deep nesting", strings.Repeat("[", 300) + strings.Repeat("]", 300), ErrLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Canonicalize([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted %q as %q", tc.in, out)
			}
			var ce *CanonError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CanonError", err)
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v, want kind %v", err, tc.kind)
			}
		})
	}
}

func TestCanonicalizeAccepts(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`9007199254740992`, `9007199254740992`},
		{`-9007199254740992`, `-9007199254740992`},
		{`1E30`, `1e+30`},
		{`-0`, `0`},
		{`-0.0`, `0`},
		{`1e-400`, `0`},
		{`0.1`, `0.1`},
		{`1e300`, `1e+300`},
		{`-1.5e-300`, `-1.5e-300`},
		// 2^53 exactly, however spelled.
		{`9007199254740992.0`, `9007199254740992`},
		{`9007199254740992e0`, `9007199254740992`},
		{`90071992547409920e-1`, `9007199254740992`},
		{`-0.9007199254740992e16`, `-9007199254740992`},
		// Fractions below 2^53 round like any other; in [2^52, 2^53) to an integer.
		{`9007199254740991.5`, `9007199254740992`},
		{`4503599627370496.5`, `4503599627370496`},
		{`9007199254740991`, `9007199254740991`},
		// 1e21 and above print in exponent form and are accepted.
		{`1e21`, `1e+21`},
		{`1000000000000000000000.0`, `1e+21`},
		{`10000000000000000000000e-1`, `1e+21`},
		{`1000000000000000000000.5`, `1e+21`},
		{`0e99999999999999999999`, `0`},
		{` { "b" : [ 1 , 2.50 , true , null ] , "a" : "\u00e9\/" } `, `{"a":"é/","b":[1,2.5,true,null]}`},
		{`"\ud83d\ude02"`, `"😂"`},
		{`"\u001f\u007f"`, "\"\\u001f\x7f\""},
		{`{"\ufb33":1,"\ud83d\ude02":2}`, "{\"😂\":2,\"\ufb33\":1}"},
		{`"\b\f\n\r\t\"\\"`, `"\b\f\n\r\t\"\\"`},
	} {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonicalize(%q): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzCanonicalize checks, on any input: only *CanonError failures; the output is
// valid JSON and a fixed point (Canonicalize(Canonicalize(x)) == Canonicalize(x)); only
// valid JSON is accepted; and, differentially against encoding/json, the output holds
// the same values as the input (numbers compared as float64, which is what JCS keeps).
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x"]}`, `1e21`, `-0.000001`, `"\ud83d\ude02"`,
		`{"a":1,"a":2}`, "\"\xff\"", `[1,2,{"c":{"d":[]}}]`, `333333333.33333329`,
		`9007199254740993.0`, `90071992547409920e-1`, `999999999999999999999.5`, `{"\u0000":"\u0000"}`,
		`{"\ufb33":1,"\ud83d\ude02":2,"\u20ac":3}`, `[-0,1e-400,5e-324]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			var ce *CanonError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CanonError", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not valid JSON", out)
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("canonical form %q is not a fixed point: %q, %v", out, again, err)
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		var want, got any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", in, err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("encoding/json refuses the canonical form %q: %v", out, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("canonical form %q does not hold the values of %q", out, in)
		}
	})
}
