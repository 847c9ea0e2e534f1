package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/sealtrail/sealtrail/tiles"
)

var _ tiles.Lister = (*Store)(nil)

// List calls fn with every key under prefix (tiles.Lister). It walks the folder of the
// prefix's directory part; temporary files (dot names) are not keys and are skipped.
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	dir := path.Dir(prefix + "x") // the folder holding every key with this prefix
	start := s.root
	if dir != "." {
		start = filepath.Join(s.root, filepath.FromSlash(dir))
	}
	err := filepath.WalkDir(start, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != start {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return ctx.Err()
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) || tiles.CheckKey(key) != nil {
			return nil
		}
		return fn(key)
	})
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	return err
}
