package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

var _ tiles.GroupPublisher = (*Store)(nil)

// CreateAll implements tiles.BatchCreator, with Create's guarantees for every object
// at the cost of two filesystem syncs in all rather than two fsyncs per object (on a
// virtual disk each fsync is a journal commit and a device flush, and the tiles of one
// publication are a dozen objects in as many directories):
//
//  1. each object that does not exist yet is written to a temporary file beside its
//     final name, creating directories as needed, without syncing;
//  2. syncfs makes all of that durable at once: data, temporary names, directories;
//  3. each temporary file is moved to its final name without replacing, which fails
//     if the name exists (then the bytes there are compared, as Create does);
//  4. syncfs makes the links durable.
//
// A crash leaves some objects in place with their full bytes and others absent, never
// a partial one, as a crash during a series of Creates would. syncfs flushes the whole
// filesystem the store lives on, so other writers' dirty data on it is flushed too;
// where the platform has no syncfs, CreateAll calls Create for each object.
func (s *Store) CreateAll(ctx context.Context, objs []tiles.Object, a tiles.Attrs) error {
	return s.createAll(ctx, objs, a, nil, tiles.Attrs{})
}

// CreateAllThenPut implements tiles.BatchPublisher: CreateAll, with put's bytes
// written to a temporary file beside its name in step 1 (made durable by the first
// syncfs), and renamed over its name after step 4, then its directory fsynced. So a
// publication costs two filesystem syncs and a directory fsync, where CreateAll and
// then Put cost two syncs and two fsyncs. put replaces its object only after every
// object of objs is durable, as a Put after CreateAll would. Where the filesystem
// can, put's bytes go to its spare instead of a new file, exchanged with the object
// (replace, spareOf).
func (s *Store) CreateAllThenPut(ctx context.Context, objs []tiles.Object, a tiles.Attrs, put tiles.Object, pa tiles.Attrs) error {
	return s.createAll(ctx, objs, a, []tiles.Object{put}, pa)
}

// CreateAllThenPutAll implements tiles.GroupPublisher: CreateAllThenPut with many
// objects to replace, all written in step 1 and renamed after step 4; one of them is
// made durable by an fsync of its directory, more by one more filesystem sync. So a
// publication round of any number of logs costs three filesystem syncs.
func (s *Store) CreateAllThenPutAll(ctx context.Context, objs []tiles.Object, a tiles.Attrs, puts []tiles.Object, pa tiles.Attrs) error {
	return s.createAll(ctx, objs, a, puts, pa)
}

// createAll is CreateAll, then the replacement of every object of puts.
func (s *Store) createAll(ctx context.Context, objs []tiles.Object, a tiles.Attrs, puts []tiles.Object, pa tiles.Attrs) error {
	paths, err := s.paths(objs)
	if err != nil {
		return err
	}
	putPaths, err := s.paths(puts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// One object alone (a tick's payload bundle) costs less through Create: an fsync of
	// its file and one of its directory, where two syncs of the whole filesystem also
	// wait for every other writer's dirty data on it.
	if !haveSyncFS || (len(objs) == 1 && len(puts) == 0) {
		for _, o := range objs {
			if err := s.Create(ctx, o.Key, o.Data, a); err != nil {
				return err
			}
		}
		for _, o := range puts {
			if err := s.Put(ctx, o.Key, o.Data, pa); err != nil {
				return err
			}
		}
		return nil
	}
	type pending struct {
		i   int
		tmp string
	}
	var todo []pending
	defer func() {
		for _, t := range todo {
			if t.tmp != "" { // "": renamed into place
				os.Remove(t.tmp)
			}
		}
	}()
	for i, o := range objs {
		if existing, err := os.ReadFile(paths[i]); err == nil {
			if err := compare(o.Key, existing, o.Data); err != nil {
				return err
			}
			continue
		}
		dir := filepath.Dir(paths[i])
		if err := s.mkdirAll(dir, false); err != nil {
			return fmt.Errorf("fs: create %s: %w", o.Key, err)
		}
		tmp, err := writeTemp(dir, o.Data, false)
		if err != nil {
			return fmt.Errorf("fs: create %s: %w", o.Key, err)
		}
		todo = append(todo, pending{i, tmp})
	}
	// Each object of puts goes to its spare (spareOf), rewritten in place, or else to
	// a new temporary file.
	putTmps := make([]string, len(puts))
	spares := make([]bool, len(puts))
	defer func() {
		for i, tmp := range putTmps {
			if tmp != "" && !spares[i] {
				os.Remove(tmp)
			}
		}
	}()
	now := clock()
	for i, o := range puts {
		dir := filepath.Dir(putPaths[i])
		if err := s.mkdirAll(dir, false); err != nil {
			return fmt.Errorf("fs: put %s: %w", o.Key, err)
		}
		if spare := spareOf(putPaths[i]); rewriteSpare(spare, o.Data, now) {
			putTmps[i], spares[i] = spare, true
			continue
		}
		tmp, err := writeTemp(dir, o.Data, false)
		if err != nil {
			return fmt.Errorf("fs: put %s: %w", o.Key, err)
		}
		putTmps[i] = tmp
	}
	if len(todo) == 0 && len(puts) == 0 {
		return nil
	}
	if err := s.syncAll(ctx); err != nil {
		return err
	}
	for k, t := range todo {
		o := objs[t.i]
		if err := moveNoReplace(t.tmp, paths[t.i]); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("fs: create %s: %w", o.Key, err)
			}
			if err := compareFile(o.Key, paths[t.i], o.Data); err != nil {
				return err
			}
			continue
		}
		todo[k].tmp = ""
	}
	if len(todo) > 0 {
		if err := s.syncAll(ctx); err != nil {
			return err
		}
	}
	for i, o := range puts {
		if err := replace(putTmps[i], putPaths[i], spares[i]); err != nil {
			return fmt.Errorf("fs: put %s: %w", o.Key, err)
		}
		putTmps[i] = ""
	}
	switch len(puts) {
	case 0:
	case 1:
		if err := syncDir(filepath.Dir(putPaths[0])); err != nil {
			return fmt.Errorf("fs: put %s: %w", puts[0].Key, err)
		}
	default:
		if err := s.syncAll(ctx); err != nil {
			return fmt.Errorf("fs: put %d objects: %w", len(puts), err)
		}
	}
	return nil
}

// spareRest is how long a spare must have been left alone (its status unchanged)
// before it is rewritten: a reader that opened it while it still held the object
// (before the exchange that made it the spare) has finished by then.
const spareRest = 2 * time.Second

// spareOf returns the name of the spare of the replaceable object at p: a dot name
// beside it (never a key, skipped by List) holding the object's previous bytes.
func spareOf(p string) string {
	return filepath.Join(filepath.Dir(p), ".prev-"+filepath.Base(p))
}

// replace gives src's file the name p, src being p's spare (rewritten in place) if
// spare is set, else a new temporary file. Where the filesystem can, it exchanges the
// two names, so p's old file becomes the spare, to be rewritten by a later
// replacement instead of creating a file (on ext4 a new inode, and the one a rename
// over p would free, cost far more CPU time than the write). Else, or when p does not
// exist yet, src is renamed over p. Either way p changes from its old bytes to src's
// at once.
func replace(src, p string, spare bool) error {
	err := exchange(src, p)
	switch {
	case err == nil:
		if !spare {
			// The old bytes, in src now, become the spare (replacing an older spare
			// that was too recent to reuse). Best effort: without it the next
			// replacement writes a temporary file again.
			if os.Rename(src, spareOf(p)) != nil {
				os.Remove(src)
			}
		}
		return nil
	case errors.Is(err, errNoExchange), errors.Is(err, fs.ErrNotExist):
		return os.Rename(src, p)
	default:
		return err
	}
}

// clock returns the time spares' rest is measured at (tests move it).
var clock = time.Now

// errNoExchange: the platform or filesystem cannot exchange two names atomically.
var errNoExchange = errors.New("atomic exchange not supported")

// paths returns the file names of objs' keys.
func (s *Store) paths(objs []tiles.Object) ([]string, error) {
	out := make([]string, len(objs))
	for i, o := range objs {
		p, err := s.path(o.Key)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// syncAll flushes the filesystem holding the store's root.
func (s *Store) syncAll(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	root, err := os.Open(s.root)
	if err != nil {
		return fmt.Errorf("fs: sync: %w", err)
	}
	defer root.Close()
	if err := syncFS(root); err != nil {
		return fmt.Errorf("fs: sync filesystem of %s: %w", s.root, err)
	}
	return nil
}
