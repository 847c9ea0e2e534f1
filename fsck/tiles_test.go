package fsck

import (
	"encoding/binary"
	"testing"

	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
)

// TestHashTilesMatchXMod: the tiles fsck expects are exactly the tiles x/mod's tlog
// computes for the same tree (tlog.NewTiles, tlog.ReadTileData over the stored hashes),
// for sizes at and around tile boundaries and across two tile levels.
func TestHashTilesMatchXMod(t *testing.T) {
	for _, n := range []int64{1, 2, 255, 256, 257, 700, 65535, 65536, 65536 + 257} {
		var stored []tlog.Hash
		leaves := make([]tlog.Hash, n)
		for i := range n {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(i))
			leaves[i] = sttlog.LeafHash(b[:])
			hs, err := tlog.StoredHashesForRecordHash(i, leaves[i], tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
				out := make([]tlog.Hash, len(idx))
				for j, x := range idx {
					out[j] = stored[x]
				}
				return out, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, hs...)
		}
		reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for j, x := range idx {
				out[j] = stored[x]
			}
			return out, nil
		})
		want := map[tlog.Tile][]byte{}
		for _, tile := range tlog.NewTiles(8, 0, n) {
			data, err := tlog.ReadTileData(tile, reader)
			if err != nil {
				t.Fatal(err)
			}
			want[tile] = data
		}
		got := hashTiles(leaves)
		if len(got) != len(want) {
			t.Fatalf("size %d: %d tiles, x/mod has %d", n, len(got), len(want))
		}
		for _, tb := range got {
			if w, ok := want[tb.tile]; !ok || string(w) != string(tb.data) {
				t.Fatalf("size %d: tile %+v differs from x/mod's (present: %v)", n, tb.tile, ok)
			}
		}
	}
}
