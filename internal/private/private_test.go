//go:build unix

package private_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestCreateModes: folders and files are created 0700 and 0600 even with umask 0, which
// would leave os.MkdirAll(dir, 0o755) and os.Create wide open.
func TestCreateModes(t *testing.T) {
	testenv.Umask(t, 0)
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := private.MkdirAll(deep); err != nil {
		t.Fatal(err)
	}
	if err := private.MkdirAll(deep); err != nil {
		t.Fatalf("MkdirAll of an existing folder: %v", err)
	}
	if err := private.Mkdir(filepath.Join(deep, "d")); err != nil {
		t.Fatal(err)
	}
	if err := private.Mkdir(filepath.Join(deep, "d")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Mkdir of an existing folder: %v, want fs.ErrExist", err)
	}
	f, err := private.Create(filepath.Join(deep, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := private.Create(filepath.Join(deep, "secret")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create of an existing file: %v, want fs.ErrExist", err)
	}
	got := testenv.PrivateTree(t, filepath.Join(root, "a"))
	if want := []string{".", "b", "b/c", "b/c/d", "b/c/secret"}; !slices.Equal(got, want) {
		t.Fatalf("walked %q, want %q", got, want)
	}
}

// TestRefuseOpen: a secret or a folder that group or others can access is refused
// with a one-line message that names it and the chmod that fixes it.
func TestRefuseOpen(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "service.key")
	if err := os.WriteFile(secret, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := private.ReadSecret("service key", secret, 1); err != nil || string(data) != "k" {
		t.Fatalf("private secret: %q, %v", data, err)
	}
	if _, err := private.ReadSecret("service key", secret, 0); err == nil {
		t.Fatal("a secret longer than the limit was read")
	}
	for _, mode := range []fs.FileMode{0o640, 0o604, 0o644, 0o620, 0o602} {
		if err := os.Chmod(secret, mode); err != nil {
			t.Fatal(err)
		}
		_, err := private.ReadSecret("service key", secret, 64)
		checkModeError(t, err, secret, "chmod 600 "+secret)
	}
	if _, err := private.ReadSecret("service key", filepath.Join(dir, "missing"), 64); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing secret: %v, want fs.ErrNotExist", err)
	}
	if _, err := private.ReadSecret("service key", dir, 64); err == nil {
		t.Fatal("a folder was read as a secret")
	}

	if err := os.Chmod(dir, 0o700); err != nil { // t.TempDir makes it 0777 less the umask
		t.Fatal(err)
	}
	if err := private.CheckDir("data directory", dir); err != nil {
		t.Fatalf("a 0700 folder: %v", err)
	}
	for _, mode := range []fs.FileMode{0o750, 0o705, 0o755, 0o777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		checkModeError(t, private.CheckDir("data directory", dir), dir, "chmod 700 "+dir)
	}
	if err := private.CheckDir("data directory", secret); err == nil {
		t.Fatal("a file passed as a folder")
	}
}

func checkModeError(t *testing.T, err error, path, fix string) {
	t.Helper()
	var me *private.ModeError
	if !errors.As(err, &me) || me.Path != path {
		t.Fatalf("got %v, want a *private.ModeError for %s", err, path)
	}
	if msg := err.Error(); !strings.Contains(msg, fix) || strings.Contains(msg, "\n") {
		t.Fatalf("message %q is not one line naming the fix %q", msg, fix)
	}
}
