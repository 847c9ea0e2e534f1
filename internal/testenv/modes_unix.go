//go:build unix

package testenv

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sealtrail/sealtrail/internal/private"
)

// Umask sets the process's umask to mask for the rest of the test and restores it at
// cleanup. Tests of file modes use Umask(t, 0) to show that a mode is set explicitly
// rather than narrowed by the umask. The umask is per process: such a test must not
// call t.Parallel.
func Umask(t testing.TB, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// PrivateTree walks root and fails the test for each folder whose mode is not 0700 and
// each file whose mode is not 0600. Entries that vanish during the walk (temporary
// files of a running service) are skipped. It returns the paths it checked, relative
// to root ("." for root itself), in lexical order.
func PrivateTree(t testing.TB, root string) []string {
	t.Helper()
	var checked []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		var fi fs.FileInfo
		if err == nil {
			fi, err = d.Info()
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		want := private.FileMode
		if d.IsDir() {
			want = private.DirMode
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %#o, want %#o", filepath.Join(filepath.Base(root), rel), fi.Mode().Perm(), want)
		}
		checked = append(checked, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checked
}
