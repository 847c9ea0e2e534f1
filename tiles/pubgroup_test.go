package tiles_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"golang.org/x/mod/sumdb/tlog"
)

// TestPublishGroup publishes three logs in rounds with PublishGroup, on the
// filesystem store (a GroupPublisher) and the memory store (not one), and checks
// that every object and note is what each log's own Publish writes; a log whose
// tile conflicts (a fork) fails alone and the others complete.
func TestPublishGroup(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) tiles.Store{
		"fs": func(t *testing.T) tiles.Store {
			s, err := fs.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"mem": func(*testing.T) tiles.Store { return mem.New() },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			got, want := open(t), mem.New()
			prefixes := []tiles.Prefix{"p/a/", "p/b/", "p/c/"}
			steps := [][]uint64{{3, 300, 301}, {256, 257, 600}, {1, 2, 70000}}
			gotW := make([]*tiles.Writer, len(prefixes))
			for i, p := range prefixes {
				gotW[i] = tiles.NewWriter(got, p, nil)
			}
			// A conflicting object at the first new tile of log b in round 2 (a fork).
			fork := prefixes[1].Key(tiles.TilePath(tlog.Tile{H: tiles.TileHeight, L: 0, N: 2, W: 88}))
			if err := got.Create(ctx, fork, bytes.Repeat([]byte{1}, 88*tlog.HashSize), tiles.ImmutableAttrs); err != nil {
				t.Fatal(err)
			}
			ref := newRefTree(synthLeaf)
			ref.grow(70000)
			olds := make([]uint64, len(prefixes))
			for round := range 3 {
				var pubs []tiles.Publication
				for i, p := range prefixes {
					n := steps[i][round]
					leaves := synthLeaves(olds[i], n)
					root := ref.root(n)
					note := fmt.Appendf(nil, "note %s %d\n", p, n)
					pubs = append(pubs, tiles.Publication{Writer: gotW[i], OldSize: olds[i], LeafData: leaves, Root: root, Note: note})
					if round != 2 || i != 1 {
						if err := tiles.NewWriter(want, p, nil).Publish(ctx, olds[i], leaves, root, note); err != nil {
							t.Fatal(err)
						}
					}
				}
				errs := tiles.PublishGroup(ctx, got, pubs)
				for i, err := range errs {
					if round == 2 && i == 1 {
						if !errors.Is(err, tiles.ErrConflict) {
							t.Fatalf("round %d, log %s: %v, want a conflict", round, prefixes[i], err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("round %d, log %s: %v", round, prefixes[i], err)
					}
					olds[i] = steps[i][round]
				}
			}
			for _, k := range want.Keys("") {
				w, _ := want.Get(ctx, k)
				g, err := got.Get(ctx, k)
				if err != nil || !bytes.Equal(g, w) {
					t.Errorf("%s: got %d bytes (%v), want %d", k, len(g), err, len(w))
				}
			}
			if olds[1] != 257 {
				t.Fatalf("log b reached %d after its fork, want 257", olds[1])
			}
		})
	}
}
