package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSetStringTruncates checks what the enrichment stores for long values: the longest
// prefix of at most maxAttribution UTF-16 code units, never half a character, and
// invalid UTF-8 replaced.
func TestSetStringTruncates(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "curl/8.5.0", "curl/8.5.0"},
		{"exactly the limit", strings.Repeat("a", maxAttribution), strings.Repeat("a", maxAttribution)},
		{"ascii over", strings.Repeat("b", 5000), strings.Repeat("b", maxAttribution)},
		// 1 + 511*2 = 1023 units; the next emoji (2 units) would pass the limit.
		{"surrogate pair at the edge", "x" + strings.Repeat("😀", 600), "x" + strings.Repeat("😀", 511)},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &eventInput{}
			in.setString("userAgent", tc.in)
			var got string
			stored, _ := in.members.get("userAgent")
			if err := json.Unmarshal(stored, &got); err != nil {
				t.Fatalf("stored %q: %v", stored, err)
			}
			if got != tc.want {
				t.Fatalf("stored %d bytes %.40q..., want %d bytes %.40q...", len(got), got, len(tc.want), tc.want)
			}
			if n := utf16Len(got); n > maxAttribution {
				t.Fatalf("stored %d UTF-16 units, limit %d", n, maxAttribution)
			}
		})
	}
}

// TestSetStringLinear is the regression test for the quadratic trim (issue 14, item
// 1): cutting a long header re-encoded the whole value once per removed character.
// The work must not grow with how far the value is over the limit; allocations count
// that work without timing it.
func TestSetStringLinear(t *testing.T) {
	allocs := func(n int) float64 {
		value := strings.Repeat("u", n)
		return testing.AllocsPerRun(3, func() {
			in := &eventInput{}
			in.setString("userAgent", value)
		})
	}
	short, long := allocs(maxAttribution+1), allocs(16*maxAttribution)
	if long > short+2 {
		t.Fatalf("trimming a %d-character value costs %.0f allocations, a %d-character one %.0f: the trim is not linear",
			16*maxAttribution, long, maxAttribution+1, short)
	}
}
