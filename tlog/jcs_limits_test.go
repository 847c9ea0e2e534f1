package tlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
	"unicode/utf16"
)

// wideObject is an object of n members with distinct keys, in reverse key order.
func wideObject(n int) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i := n - 1; i >= 0; i-- {
		if i < n-1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%07d":%d`, i, i)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// TestSortMembersComparisons counts the key comparisons of a 40,000-member object: the
// sort JCS needs plus nothing per member beyond it, where the old duplicate check made
// n²/2 (800 million) on its own.
func TestSortMembersComparisons(t *testing.T) {
	const n = 40_000
	members := make([]member, n)
	for i := range members {
		members[i] = member{key: fmt.Sprintf("k%07d", (i*7919)%n), keyPos: i}
	}
	calls := 0
	counting := func(a, b member) int { calls++; return compareMembers(a, b) }
	if dup := sortMembers(members, counting); dup != -1 {
		t.Fatalf("distinct keys reported as duplicate at %d", dup)
	}
	if bound := 2 * n * bits.Len(n); calls > bound {
		t.Fatalf("%d comparisons for %d members, want at most 2·n·log2(n) = %d", calls, n, bound)
	}
	for i := 1; i < n; i++ {
		if compareUTF16(members[i-1].key, members[i].key) >= 0 {
			t.Fatalf("not sorted at %d: %q, %q", i, members[i-1].key, members[i].key)
		}
	}

	// A duplicate is found among the neighbours, and the first repetition in input
	// order is the one reported.
	members = []member{{key: "b", keyPos: 1}, {key: "a", keyPos: 2}, {key: "b", keyPos: 3}, {key: "a", keyPos: 4}, {key: "b", keyPos: 5}}
	if dup := sortMembers(members, compareMembers); dup < 0 || members[dup].keyPos != 3 {
		t.Fatalf("duplicate reported at %d, want the key at offset 3", dup)
	}
}

// TestCanonicalizeWideObject canonicalizes a 40,000-member object (accepted: the
// verifier and reads have no member limit) and checks the order against encoding/json,
// which sorts ASCII keys the same way.
func TestCanonicalizeWideObject(t *testing.T) {
	in := wideObject(40_000)
	out, err := Canonicalize(in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int
	if err := json.Unmarshal(in, &m); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(m)
	if string(out) != string(want) {
		t.Fatal("40,000-member object not in key order")
	}
}

func TestDuplicateKeyOffset(t *testing.T) {
	//        0123456789012345678901234
	in := `{"b":1,"a":2,"b":3,"a":4}`
	_, err := Canonicalize([]byte(in))
	var ce *CanonError
	if !errors.As(err, &ce) || !errors.Is(err, ErrDuplicateKey) || ce.Offset != 13 || ce.Detail != `"b"` {
		t.Fatalf("got %v, want the duplicate \"b\" at offset 13", err)
	}
}

func TestCanonicalizeLimited(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
	}
	lim := Limits{MaxDepth: 4, MaxMembers: 3}
	for _, tc := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"members at the limit", []byte(`{"a":1,"b":{"c":1,"d":2,"e":3},"f":[1,2,3,4,5]}`), true},
		{"members beyond the limit", []byte(`{"a":1,"b":2,"c":3,"d":4}`), false},
		{"nested object beyond the limit", []byte(`{"a":{"b":1,"c":2,"d":3,"e":4}}`), false},
		{"depth at the limit", nest(4), true},
		{"depth beyond the limit", nest(5), false},
		{"array depth beyond the limit", []byte(`[[[[[1]]]]]`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := CanonicalizeLimited(tc.in, lim)
			if tc.ok {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("got %q, %v; want ErrLimit", out, err)
			}
		})
	}
	// Canonicalize has the default depth bound and no member bound.
	if _, err := Canonicalize(nest(MaxDepth)); err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	if _, err := Canonicalize(nest(MaxDepth + 1)); !errors.Is(err, ErrLimit) {
		t.Fatalf("depth %d: %v, want ErrLimit", MaxDepth+1, err)
	}
	// A limit above MaxDepth does not lift it.
	if _, err := CanonicalizeLimited(nest(MaxDepth+1), Limits{MaxDepth: math.MaxInt}); !errors.Is(err, ErrLimit) {
		t.Fatalf("depth %d with MaxDepth=MaxInt: %v, want ErrLimit", MaxDepth+1, err)
	}
}

// TestCompareUTF16 checks the byte-wise comparison against the UTF-16 code units
// themselves, on characters from every UTF-8 length and both sides of the surrogate
// range.
func TestCompareUTF16(t *testing.T) {
	chars := []string{"", "a", "z", "\u007f", "\u0080", "é", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\ufb33", "\uffff",
		"\U00010000", "😂", "\U0010ffff"}
	var strs []string
	for _, a := range chars {
		for _, b := range chars {
			strs = append(strs, a+b, a+"x"+b)
		}
	}
	sign := func(n int) int {
		switch {
		case n < 0:
			return -1
		case n > 0:
			return 1
		}
		return 0
	}
	ref := func(a, b string) int {
		ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		for i := 0; i < len(ua) && i < len(ub); i++ {
			if ua[i] != ub[i] {
				return sign(int(ua[i]) - int(ub[i]))
			}
		}
		return sign(len(ua) - len(ub))
	}
	for _, a := range strs {
		for _, b := range strs {
			if got, want := sign(compareUTF16(a, b)), ref(a, b); got != want {
				t.Fatalf("compareUTF16(%+q, %+q) = %d, want %d", a, b, got, want)
			}
		}
	}
}
