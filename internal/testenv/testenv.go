// Package testenv gives tests the real servers that scripts/testenv/*.sh started for them
// (PostgreSQL, an S3-compatible server, the GCS emulator). Each server exports an
// environment variable; a test that needs a server asks for it here. When the variable is
// missing the test is skipped with a one-line reason, except under CI=true, where a
// missing server is a failure and never a silent skip.
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where every server must exist.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require returns the value of the environment variable env, which names how to reach
// the server what. If it is unset the test skips, or fails under CI.
func Require(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v != "" {
		return v
	}
	if InCI() {
		t.Fatalf("%s is required under CI=true but %s is not set (scripts/testenv did not start it)", what, env)
	}
	t.Skipf("%s not available: %s is not set (run .ci/install.d scripts, then make test)", what, env)
	return ""
}
