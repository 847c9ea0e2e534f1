// Package private keeps the service's local files to the user it runs as: it creates
// files with mode 0600 and folders with mode 0700, set explicitly rather than left to
// the umask, and refuses secrets and data folders that group or others can reach
// (docs/operations.md, "File modes").
package private

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The modes of every file and folder the service creates.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// ModeError is a secret file or a data folder that group or others can access.
type ModeError struct {
	What string // "service key", "data directory", ...
	Path string
	Mode fs.FileMode // permission bits found
	Dir  bool
}

func (e *ModeError) Error() string {
	want := "600"
	if e.Dir {
		want = "700"
	}
	return fmt.Sprintf("%s %s has mode %#o; it must not be accessible to group or others (chmod %s %s)",
		e.What, e.Path, e.Mode, want, e.Path)
}

// check returns a *ModeError when fi grants group or others any access.
func check(what, path string, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &ModeError{What: what, Path: path, Mode: perm, Dir: fi.IsDir()}
	}
	return nil
}

// ReadSecret reads the regular file at path, what it holds named by what for messages.
// It refuses a file that group or others can access (*ModeError) and a file longer than
// max bytes. A missing file gives an error wrapping fs.ErrNotExist.
func ReadSecret(what, path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if err := check(what, path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s is longer than %d bytes", what, path, max)
	}
	return data, nil
}

// CheckDir refuses the folder at path when group or others can access it.
func CheckDir(what, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a directory", what, path)
	}
	return check(what, path, fi)
}

// Mkdir creates the folder dir with mode 0700. Like os.Mkdir, it fails with an error
// wrapping fs.ErrExist when dir exists, whose mode it leaves as it is.
func Mkdir(dir string) error {
	if err := os.Mkdir(dir, DirMode); err != nil {
		return err
	}
	// The umask may have taken bits off; set the mode itself.
	return os.Chmod(dir, DirMode)
}

// MkdirAll creates dir and its missing parents with mode 0700, like os.MkdirAll.
// Folders that exist keep their modes.
func MkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("mkdir %s: not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := Mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Create creates the file at path for writing with mode 0600, failing with an error
// wrapping fs.ErrExist when it exists.
func Create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}
