package tiles

import (
	"fmt"
	"strconv"
	"strings"

	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
)

// TileHeight is the height of every tile: a full tile holds TileWidth hashes, and a
// full entry bundle TileWidth entries (C2SP tlog-tiles).
const (
	TileHeight = 8
	TileWidth  = 1 << TileHeight
)

// EntriesLevel is the tile level that names entry bundles, as in x/mod's Tile.L.
const EntriesLevel = -1

// CheckpointPath is the path of the checkpoint, relative to a log's prefix.
const CheckpointPath = "checkpoint"

// A Prefix is the key prefix of one log, "<projectId>/<stream>/". Keys of the log's
// objects are the prefix followed by their paths.
type Prefix string

// StreamPrefix returns the prefix of the log of project projectID's stream, which must
// be tlog.StreamEvents or tlog.StreamProjectAudit. projectID must be a valid key
// segment.
func StreamPrefix(projectID, stream string) (Prefix, error) {
	if !sttlog.ValidStream(stream) {
		return "", fmt.Errorf("tiles: unknown stream %q", stream)
	}
	if strings.Contains(projectID, "/") || CheckKey(projectID) != nil {
		return "", fmt.Errorf("tiles: invalid project id %q", projectID)
	}
	return Prefix(projectID + "/" + stream + "/"), nil
}

// Key returns the object key of path within the log.
func (p Prefix) Key(path string) string { return string(p) + path }

// TilePath returns the C2SP tlog-tiles path of t, "tile/<L>/<N>[.p/<W>]", or for
// t.L == EntriesLevel the entry bundle path "tile/entries/<N>[.p/<W>]". N is written
// in groups of three digits, all but the last prefixed with "x" (1234067 is
// x001/x234/067); the ".p/<W>" suffix marks a partial tile, 1 <= W < 256.
// t.H is ignored: every tile has height TileHeight.
func TilePath(t tlog.Tile) string {
	var b strings.Builder
	b.WriteString("tile/")
	if t.L == EntriesLevel {
		b.WriteString("entries")
	} else {
		b.WriteString(strconv.Itoa(t.L))
	}
	b.WriteByte('/')
	n := uint64(t.N)
	var groups []uint64
	for {
		groups = append(groups, n%1000)
		n /= 1000
		if n == 0 {
			break
		}
	}
	for i := len(groups) - 1; i >= 0; i-- {
		if i > 0 {
			fmt.Fprintf(&b, "x%03d/", groups[i])
		} else {
			fmt.Fprintf(&b, "%03d", groups[i])
		}
	}
	if t.W > 0 && t.W < TileWidth {
		fmt.Fprintf(&b, ".p/%d", t.W)
	}
	return b.String()
}

// ParseTilePath parses a hash tile or entry bundle path as TilePath writes it and
// returns the tile, with H = TileHeight and L = EntriesLevel for a bundle. It accepts
// exactly the paths TilePath produces (no leading zeros beyond the 3-digit groups).
func ParseTilePath(path string) (tlog.Tile, error) {
	bad := func() (tlog.Tile, error) { return tlog.Tile{}, fmt.Errorf("tiles: malformed tile path %q", path) }
	rest, ok := strings.CutPrefix(path, "tile/")
	if !ok || len(path) > 100 {
		return bad()
	}
	lvl, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return bad()
	}
	t := tlog.Tile{H: TileHeight, W: TileWidth}
	if lvl == "entries" {
		t.L = EntriesLevel
	} else {
		l, err := strconv.Atoi(lvl)
		if err != nil || l < 0 || l > 7 {
			return bad()
		}
		t.L = l
	}
	if i := strings.Index(rest, ".p/"); i >= 0 {
		w, err := strconv.Atoi(rest[i+3:])
		if err != nil || w < 1 || w >= TileWidth {
			return bad()
		}
		t.W = w
		rest = rest[:i]
	}
	var n uint64
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if i < len(segs)-1 {
			var ok bool
			if s, ok = strings.CutPrefix(s, "x"); !ok {
				return bad()
			}
		}
		if len(s) != 3 {
			return bad()
		}
		d, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return bad()
		}
		if n > (1<<63-1)/1000 {
			return bad()
		}
		n = n*1000 + d
	}
	t.N = int64(n)
	if TilePath(t) != path {
		return bad()
	}
	return t, nil
}

// PayloadPath returns the path of the payload bundle of the batch whose first event
// has sequence first and whose random id is batchID (1 to 64 letters, digits, '-' or
// '_'): "payload/<first>-<batchID>".
func PayloadPath(first uint64, batchID string) (string, error) {
	if len(batchID) == 0 || len(batchID) > 64 {
		return "", fmt.Errorf("tiles: invalid batch id %q", batchID)
	}
	for i := 0; i < len(batchID); i++ {
		if c := batchID[i]; c == '.' || !keyByte(c) {
			return "", fmt.Errorf("tiles: invalid batch id %q", batchID)
		}
	}
	return "payload/" + strconv.FormatUint(first, 10) + "-" + batchID, nil
}

// edgeTile returns the partial hash tile at level on the right edge of a tree of size
// n; ok is false if that level of the tree ends on a tile boundary.
func edgeTile(level int, n uint64) (tlog.Tile, bool) {
	count := n >> (uint(level) * TileHeight)
	w := int(count % TileWidth)
	return tlog.Tile{H: TileHeight, L: level, N: int64(count / TileWidth), W: w}, w > 0
}

// storedTile returns the tile at t's position (hash tile or entry bundle) as stored for
// a tree of size n: full if the tree fills it, else partial with the tree's width. ok
// is false if the tree of size n has nothing in that tile.
func storedTile(t tlog.Tile, n uint64) (tlog.Tile, bool) {
	shift := uint(0)
	if t.L > 0 {
		shift = uint(t.L) * TileHeight
	}
	count := n >> shift
	start := uint64(t.N) * TileWidth
	if count <= start {
		return tlog.Tile{}, false
	}
	t.W = int(min(count-start, TileWidth))
	return t, true
}
