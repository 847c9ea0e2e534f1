package tlog

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// slowDecodeCanonical is DecodeCanonicalExportLine without the fast path.
func slowDecodeCanonical(line []byte) (Record, error) {
	canon, err := Canonicalize(line)
	if err != nil {
		return Record{}, err
	}
	r, err := decodeCanonicalLine(canon)
	if err == nil && !bytes.Equal(canon, line) {
		return Record{}, ErrExportLine
	}
	return r, err
}

// checkFastAgreesWithSlow fails when the fast path accepts a line the slow path
// rejects or decodes differently.
func checkFastAgreesWithSlow(t *testing.T, line []byte) (fastOK bool) {
	t.Helper()
	fast, ok := decodeCanonicalFast(line)
	if !ok {
		return false
	}
	slow, err := slowDecodeCanonical(line)
	if err != nil {
		t.Fatalf("fast path accepted %q, slow path rejects it: %v", line, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast path decodes %q as\n%+v\nslow path as\n%+v", line, fast, slow)
	}
	return true
}

func TestDecodeCanonicalFastMatchesSlow(t *testing.T) {
	recs := makeRecords(t, 60, testKey(7))
	for i := range recs {
		line, err := EncodeStoredEvent(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		if !checkFastAgreesWithSlow(t, line) {
			t.Fatalf("fast path refused the service's own line %s", line)
		}
	}
	// Byte-level mutations of real lines: whatever the fast path still accepts must be
	// what the slow path accepts, record for record.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(" \t\"\\/{}[],:0123456789.eE+-nultrfabu\x00\x1f\x7f\xc3\xa9\xed\xa0\x80")
	accepted := 0
	for range 20_000 {
		line, _ := EncodeStoredEvent(&recs[rng.IntN(len(recs))])
		line = bytes.Clone(line)
		for range 1 + rng.IntN(2) {
			i := rng.IntN(len(line))
			switch rng.IntN(3) {
			case 0:
				line[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				line = append(line[:i], line[i+1:]...)
			default:
				line = append(line[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, line[i:]...)...)
			}
		}
		if checkFastAgreesWithSlow(t, line) {
			accepted++
		}
	}
	if accepted == 0 {
		t.Fatal("no mutated line was accepted: the mutations test nothing")
	}
}

// TestCanonScan compares the one-pass check with Canonicalize(x) == x on values whose
// canonical form is subtle.
func TestCanonScan(t *testing.T) {
	values := []string{
		`0`, `-0`, `1`, `-1`, `01`, `1.0`, `1.5`, `0.1`, `1e2`, `1E+2`, `1e+21`, `1e21`, `1e-7`,
		`0.000001`, `123456789012345`, `1234567890123456`, `9007199254740992`, `9007199254740993`,
		`100000000000000000000`, `1e+400`, `-1.5e-7`, `1.`, `.5`, `-`, `2e`,
		`"a"`, `""`, `"\/"`, `"/"`, `"\u00e9"`, `"é"`, `"\u001f"`, `"\u001F"`, `"\u000a"`, `"\n"`,
		`"\u0008"`, `"\b"`, `"\""`, `"\\"`, "\"\x7f\"", "\"\x1f\"", "\"\xed\xa0\x80\"", "\"\xff\"",
		`"\ud83d\ude00"`, "\"\U0001F600\"", `"\u0000"`, `"\u002f"`,
		`true`, `false`, `null`, `tru`, `nul`,
		`[]`, `[1,2]`, `[1, 2]`, `[1,]`, `{}`, `{"a":1}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
		`{"a":1,"b":[{"d":null,"c":true}]}`, `{"a":{"b":{}}}`, `{"\u00e9":1}`, `{"é":1,"z":2}`,
		"{\"\uff61\":1,\"\U0001F600\":2}", "{\"\U0001F600\":1,\"\uff61\":2}",
	}
	for _, v := range values {
		line := []byte(`{"k":` + v + `}`)
		canon, err := Canonicalize(line)
		want := err == nil && bytes.Equal(canon, line)
		_, got := scanCanonicalObject(line, nil)
		if got && !want {
			t.Errorf("%s: scan accepts, Canonicalize gives %q, %v", line, canon, err)
		}
		// Escaped keys go to the slow path by design; everything else must be decided.
		if want && !got && !bytes.Contains(line, []byte(`{"\`)) {
			t.Errorf("%s: scan refuses a canonical line", line)
		}
	}
}

func FuzzDecodeCanonicalFast(f *testing.F) {
	for _, r := range makeRecords(f, 6, testKey(7)) {
		line, _ := EncodeStoredEvent(&r)
		f.Add(line)
	}
	f.Add([]byte(`{"k":[1,"\u001f",{"a":-0.5}]}`))
	f.Fuzz(func(t *testing.T, line []byte) { checkFastAgreesWithSlow(t, line) })
}

// FuzzCanonScan: whatever object the one-pass check accepts (DecodeLeaf and the export
// fast path rely on it) is its own canonical form.
func FuzzCanonScan(f *testing.F) {
	f.Add([]byte(`{"a":[1,-0.5,"\u001f",{"b":null}],"b":1e+21}`))
	leaf := sampleLeaf()
	f.Add(leaf.Encode())
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, ok := scanCanonicalObject(in, nil); !ok {
			return
		}
		if canon, err := Canonicalize(in); err != nil || !bytes.Equal(canon, in) {
			t.Fatalf("scan accepts %q; Canonicalize gives %q, %v", in, canon, err)
		}
	})
}
