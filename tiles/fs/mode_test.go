//go:build unix

package fs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
)

// TestModes: with umask 0, the root, every folder on the way to an object, every object
// (created, put, or written by the batch path) and the temporary files objects are
// written through are private to the service's user: folders 0700, files 0600.
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
	got := testenv.PrivateTree(t, root)
	rel, err := filepath.Rel(root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".", filepath.ToSlash(rel), "p", "p/events", "p/events/checkpoint", "p/events/tile", "p/events/tile/0",
		"p/events/tile/0/x001", "p/events/tile/0/x001/000", "q", "q/events", "q/events/checkpoint", "q/events/tile",
		"q/events/tile/entries", "q/events/tile/entries/000"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("walked %q, want %q", got, want)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
}
