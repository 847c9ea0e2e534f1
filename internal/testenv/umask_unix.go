//go:build unix

package testenv

import (
	"syscall"
	"testing"
)

// Umask sets the process's umask to mask for the rest of the test and restores it at
// cleanup. Tests of file modes use Umask(t, 0) to show that a mode is set explicitly
// rather than narrowed by the umask. The umask is per process: such a test must not
// call t.Parallel.
func Umask(t testing.TB, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}
