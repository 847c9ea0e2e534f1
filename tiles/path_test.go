package tiles_test

import (
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
	sttlog "github.com/sealtrail/sealtrail/tlog"
	"github.com/transparency-dev/tessera/api/layout"
	"golang.org/x/mod/sumdb/tlog"
)

func TestTilePathMatchesTessera(t *testing.T) {
	for _, n := range []int64{0, 1, 999, 1000, 1001, 1234067, 999999999, 1000000000, 1 << 40, 1<<55 - 1} {
		for _, w := range []int{1, 2, 255, 256} {
			p := uint8(w % 256)
			for level := range 8 {
				tl := tlog.Tile{H: 8, L: level, N: n, W: w}
				if got, want := tiles.TilePath(tl), layout.TilePath(uint64(level), uint64(n), p); got != want {
					t.Errorf("TilePath(%+v) = %q, tessera says %q", tl, got, want)
				}
				back, err := tiles.ParseTilePath(tiles.TilePath(tl))
				if err != nil || back != tl {
					t.Errorf("ParseTilePath(%q) = %+v, %v; want %+v", tiles.TilePath(tl), back, err, tl)
				}
			}
			tl := tlog.Tile{H: 8, L: tiles.EntriesLevel, N: n, W: w}
			if got, want := tiles.TilePath(tl), layout.EntriesPath(uint64(n), p); got != want {
				t.Errorf("TilePath(%+v) = %q, tessera says %q", tl, got, want)
			}
			back, err := tiles.ParseTilePath(tiles.TilePath(tl))
			if err != nil || back != tl {
				t.Errorf("ParseTilePath(%q) = %+v, %v", tiles.TilePath(tl), back, err)
			}
		}
	}
	// The examples of C2SP tlog-tiles.
	if got := tiles.TilePath(tlog.Tile{H: 8, L: 0, N: 1234067, W: 256}); got != "tile/0/x001/x234/067" {
		t.Errorf("got %q", got)
	}
	if got := tiles.TilePath(tlog.Tile{H: 8, L: tiles.EntriesLevel, N: 1234067, W: 20}); got != "tile/entries/x001/x234/067.p/20" {
		t.Errorf("got %q", got)
	}
}

func TestParseTilePathRejects(t *testing.T) {
	for _, p := range []string{
		"", "tile", "tile/0", "tile/0/", "tile/8/000", "tile/-1/000", "tile/data/000", "tile/0/00", "tile/0/0000",
		"tile/0/x000/001", "tile/0/001/002", "tile/0/x001", "tile/0/000.p/0", "tile/0/000.p/256", "tile/0/000.p/01",
		"tile/0/000.p/", "tile/0/000.p", "tile/entries/abc", "tile/0/x001/x234/067.p/5/", "/tile/0/000",
		"tile/0/+01", "tile/00/000", "tile/0/x-01/000", "tile/0/" + strings.Repeat("x999/", 7) + "999",
		"checkpoint", "tile/entries/000.p/-1",
	} {
		if tl, err := tiles.ParseTilePath(p); err == nil {
			t.Errorf("ParseTilePath(%q) = %+v, want an error", p, tl)
		}
	}
}

func TestStreamPrefix(t *testing.T) {
	p, err := tiles.StreamPrefix("proj_01", sttlog.StreamProjectAudit)
	if err != nil || p.Key(tiles.CheckpointPath) != "proj_01/project_audit/checkpoint" {
		t.Fatalf("StreamPrefix = %q, %v", p, err)
	}
	for _, bad := range [][2]string{{"", "events"}, {"a/b", "events"}, {"..", "events"}, {"a", "other"}, {"a b", "events"}, {"a", "project-audit"}} {
		if p, err := tiles.StreamPrefix(bad[0], bad[1]); err == nil {
			t.Errorf("StreamPrefix(%q, %q) = %q, want an error", bad[0], bad[1], p)
		}
	}
}

func TestPayloadPath(t *testing.T) {
	p, err := tiles.PayloadPath(1001, "01J8-abc_Z")
	if err != nil || p != "payload/1001-01J8-abc_Z" {
		t.Fatalf("PayloadPath = %q, %v", p, err)
	}
	for _, bad := range []string{"", "a/b", "a.b", "..", strings.Repeat("a", 65), "a b"} {
		if p, err := tiles.PayloadPath(1, bad); err == nil {
			t.Errorf("PayloadPath(1, %q) = %q, want an error", bad, p)
		}
	}
}

func FuzzParseTilePath(f *testing.F) {
	for _, s := range []string{"tile/0/000", "tile/entries/x001/x234/067.p/20", "tile/7/x999/999.p/255"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tl, err := tiles.ParseTilePath(s)
		if err != nil {
			return
		}
		if got := tiles.TilePath(tl); got != s {
			t.Fatalf("ParseTilePath(%q) = %+v, which formats as %q", s, tl, got)
		}
		if tiles.CheckKey(s) != nil {
			t.Fatalf("tile path %q is not a valid key", s)
		}
	})
}
