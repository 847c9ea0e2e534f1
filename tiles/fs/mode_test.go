//go:build unix

package fs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
)

// TestModes: with umask 0, the root, every folder on the way to an object, every object
// (created or put) the batch path's, and the temporary files objects are written through are private to
// the service's user: folders 0700, files 0600.
func TestModes(t *testing.T) {
	testenv.Umask(t, 0)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "objects")
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "p/events/tile/0/x001/000", []byte("tile"), tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "p/events/checkpoint", []byte("head"), tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	// The batch path (the sequencer's) creates folders and files its own way.
	if err := s.CreateAllThenPut(ctx, []tiles.Object{{Key: "q/events/tile/entries/000", Data: []byte("bundle")}},
		tiles.ImmutableAttrs, tiles.Object{Key: "q/events/checkpoint", Data: []byte("head")}, tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	tmp, err := writeTemp(filepath.Join(root, "p"), []byte("temp"), false)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := private.FileMode
		if d.IsDir() {
			want = private.DirMode
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %#o, want %#o", p, fi.Mode().Perm(), want)
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// root; p, events, tile, 0, x001, 000, checkpoint, the temporary file; q, events,
	// tile, entries, 000, checkpoint
	if seen != 15 {
		t.Fatalf("walked %d entries, want 15", seen)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
}
