package fs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
	"github.com/sealtrail/sealtrail/tiles/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) tiles.Store {
		s, err := fs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{})
}

// TestLayout checks that objects are plain files at their keys (so any static file
// server can serve a log to mirrors) and that no temporary file is left behind; the
// one other file is the checkpoint's spare, a dot name holding the previous note.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"p/events/tile/0/x001/x234/067.p/5", "p/events/checkpoint", "p/events/tile/entries/000"}
	for _, k := range keys {
		if err := s.Create(ctx, k, []byte(k), tiles.ImmutableAttrs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, keys[1], []byte("new"), tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	tile := tiles.Object{Key: "p/events/tile/1/000.p/1", Data: []byte("t")}
	if err := s.CreateAllThenPut(ctx, []tiles.Object{tile}, tiles.ImmutableAttrs,
		tiles.Object{Key: keys[1], Data: []byte("newer")}, tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, tile.Key)
	err = s.CreateAllThenPut(ctx, []tiles.Object{{Key: keys[0], Data: []byte("other")}}, tiles.ImmutableAttrs,
		tiles.Object{Key: keys[1], Data: []byte("forked")}, tiles.CheckpointAttrs)
	if !errors.Is(err, tiles.ErrConflict) {
		t.Fatalf("CreateAllThenPut over a different object = %v, want a conflict", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, keys[1])); err != nil || string(got) != "newer" {
		t.Fatalf("checkpoint %q, %v; want the one before the conflict", got, err)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".prev-checkpoint" {
			if b, err := os.ReadFile(p); err != nil || string(b) != "new" {
				t.Errorf("the checkpoint's spare holds %q (%v), want the previous note", b, err)
			}
			return nil
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(keys) {
		t.Fatalf("files %v, want exactly %v", files, keys)
	}
	for _, f := range files {
		if strings.Contains(f, ".tmp-") {
			t.Errorf("temporary file %s left behind", f)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "p/events/tile/0/x001/x234/067.p/5"))
	if err != nil || string(got) != keys[0] {
		t.Fatalf("file content %q, %v", got, err)
	}
}
