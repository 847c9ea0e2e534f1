// Package fs is the filesystem driver of tiles.Store, the default: one file per
// object under a root directory, with the key's slashes as directories. A mirror can
// serve the root with any static file server running as the service's user (the files
// are private to it, see below).
//
// Durability follows the POSIX recipe: data goes to a temporary file in the target
// directory, which is fsynced, then moved into place without replacing (Create:
// renameat2 RENAME_NOREPLACE on Linux, else a hard link and an unlink) or renamed over
// the old file (Put), and the directory is fsynced; directories created on the way are
// fsynced into their parents. Temporary files are named ".tmp-*"; a crash can leave
// one behind, which is harmless and never read (keys cannot start with a dot).
//
// The commit ticks' payloads are the exception (segment.go, tiles.PayloadAppender):
// they are appended to an open segment file, one write and one fdatasync per tick,
// instead of a new file each; only the ranges batch rows name are ever read.
//
// Files are created with mode 0600 and folders with mode 0700 (package
// internal/private): only the service's user reads the store.
package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/tiles"
)

// A Store keeps objects as files under a directory.
type Store struct {
	root string
	seg  segments // the open payload segment file (segment.go)
}

var _ tiles.Store = (*Store)(nil)

// New returns a Store rooted at dir, creating it if needed.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("fs: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	if err := private.MkdirAll(abs); err != nil {
		return nil, fmt.Errorf("fs: create root: %w", err)
	}
	return &Store{root: abs}, nil
}

func (s *Store) path(key string) (string, error) {
	if err := tiles.CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Get implements tiles.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
			return nil, fmt.Errorf("fs: get %s: %w", key, tiles.ErrNotFound)
		}
		return nil, fmt.Errorf("fs: get %s: %w", key, err)
	}
	return data, nil
}

// GetRange implements tiles.Store with one positioned read (ReadAt).
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := tiles.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("fs: get %s: %w", key, tiles.ErrNotFound)
		}
		return nil, fmt.Errorf("fs: get %s: %w", key, err)
	}
	defer f.Close()
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	switch {
	case errors.Is(err, io.EOF) || err == nil && int64(got) < n:
		return nil, fmt.Errorf("fs: get %s range %d+%d: %d bytes: %w", key, off, n, got, tiles.ErrShortObject)
	case errors.Is(err, syscall.EISDIR):
		return nil, fmt.Errorf("fs: get %s: %w", key, tiles.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("fs: get %s range %d+%d: %w", key, off, n, err)
	}
	return buf, nil
}

// Create implements tiles.Store. The file is linked into place, which fails if the
// name exists, so the first writer wins atomically.
func (s *Store) Create(ctx context.Context, key string, data []byte, _ tiles.Attrs) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if existing, err := os.ReadFile(p); err == nil {
		return compare(key, existing, data)
	}
	tmp, err := s.writeTempFor(p, data)
	if err != nil {
		return fmt.Errorf("fs: create %s: %w", key, err)
	}
	defer os.Remove(tmp)
	if err := moveNoReplace(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return compareFile(key, p, data)
		}
		return fmt.Errorf("fs: create %s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("fs: create %s: %w", key, err)
	}
	return nil
}

// linkOnce gives the file tmp the name p unless p exists (an error wrapping
// fs.ErrExist), by a hard link and the removal of tmp. moveNoReplace uses it where the
// platform or filesystem cannot rename without replacing.
func linkOnce(tmp, p string) error {
	if err := os.Link(tmp, p); err != nil {
		return err
	}
	return os.Remove(tmp)
}

// compareFile is compare against the file p, which another writer created first.
func compareFile(key, p string, data []byte) error {
	existing, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("fs: create %s: read existing: %w", key, err)
	}
	return compare(key, existing, data)
}

func compare(key string, existing, data []byte) error {
	if bytes.Equal(existing, data) {
		return nil
	}
	return fmt.Errorf("fs: create: %w", &tiles.ConflictError{Key: key})
}

// Put implements tiles.Store: the file is renamed over any old one.
func (s *Store) Put(ctx context.Context, key string, data []byte, _ tiles.Attrs) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := s.writeTempFor(p, data)
	if err != nil {
		return fmt.Errorf("fs: put %s: %w", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fs: put %s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("fs: put %s: %w", key, err)
	}
	return nil
}

// Delete implements tiles.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("fs: delete %s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("fs: delete %s: %w", key, err)
	}
	return nil
}

// writeTempFor writes data to a new fsynced temporary file beside p, creating p's
// directory durably if needed, and returns its name.
func (s *Store) writeTempFor(p string, data []byte) (string, error) {
	dir := filepath.Dir(p)
	if err := s.mkdirAll(dir, true); err != nil {
		return "", err
	}
	return writeTemp(dir, data, true)
}

// writeTemp writes data to a new temporary file in dir, fsynced if sync is set, and
// returns its name.
func writeTemp(dir string, data []byte, sync bool) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	err = f.Chmod(private.FileMode) // 0600 whatever the umask
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// mkdirAll creates dir and its missing parents below the root; with sync, it fsyncs
// each new directory's parent so the new entry survives a crash (without, the caller
// syncs the filesystem later).
func (s *Store) mkdirAll(dir string, sync bool) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(s.root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("directory %s outside root", dir)
	}
	return s.mkdir(dir, sync)
}

// mkdir creates dir below the root, first its missing parents (one mkdir per level
// only when that level is missing, instead of one per level from the root), and
// fsyncs its parent. A directory another writer just created counts as created: its
// parent is fsynced again, since that writer may not have done so yet.
func (s *Store) mkdir(dir string, sync bool) error {
	parent := filepath.Dir(dir)
	err := private.Mkdir(dir)
	if errors.Is(err, fs.ErrNotExist) && dir != s.root && parent != dir {
		if err := s.mkdir(parent, sync); err != nil {
			return err
		}
		err = private.Mkdir(dir)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err != nil {
		if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
			return err
		}
	}
	if !sync {
		return nil
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
