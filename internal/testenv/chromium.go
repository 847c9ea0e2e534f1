package testenv

import (
	"os"
	"testing"
)

// Chromium returns the path of the Debian chromium (.ci/install.d/40-chromium.sh).
// Without it the test skips, or fails under CI=true.
func Chromium(t testing.TB) string {
	t.Helper()
	const path = "/usr/bin/chromium"
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		if InCI() {
			t.Fatalf("chromium is required under CI=true but is not installed (.ci/install.d/40-chromium.sh)")
		}
		t.Skip("chromium not installed: run .ci/install.d/40-chromium.sh")
	}
	return path
}
