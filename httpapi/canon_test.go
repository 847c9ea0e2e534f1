package httpapi

import "testing"

// TestStringEnd: the closing quote is the first one after an even run of backslashes.
func TestStringEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`""`, 1},
		{`"abc",`, 4},
		{`"a\"b"`, 5},
		{`"a\\"b"`, 4},
		{`"\\\""x`, 5},
		{`"\\\\"`, 5},
		{`"\""`, 3},
		{`"abc`, 4},
		{`"abc\"`, 6},
	} {
		if got := stringEnd([]byte(tc.in), 0); got != tc.want {
			t.Errorf("stringEnd(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
