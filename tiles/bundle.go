package tiles

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// MaxLeafSize is the largest leaf an entry bundle can hold (its 2-byte length prefix).
const MaxLeafSize = 1<<16 - 1

// MarshalEntryBundle encodes entries as a C2SP tlog-tiles entry bundle: each entry's
// length as 2 bytes big-endian, then the entry. It accepts 1 to TileWidth entries of
// at most MaxLeafSize bytes.
func MarshalEntryBundle(entries [][]byte) ([]byte, error) {
	if len(entries) == 0 || len(entries) > TileWidth {
		return nil, fmt.Errorf("tiles: entry bundle of %d entries", len(entries))
	}
	size := 0
	for i, e := range entries {
		if len(e) > MaxLeafSize {
			return nil, fmt.Errorf("tiles: entry %d is %d bytes, more than %d", i, len(e), MaxLeafSize)
		}
		size += 2 + len(e)
	}
	b := make([]byte, 0, size)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, uint16(len(e)))
		b = append(b, e...)
	}
	return b, nil
}

// ParseEntryBundle decodes an entry bundle that must hold exactly width entries
// (1 <= width <= TileWidth). Truncated data, trailing bytes or another number of
// entries are errors. The entries alias data.
func ParseEntryBundle(data []byte, width int) ([][]byte, error) {
	if width < 1 || width > TileWidth {
		return nil, fmt.Errorf("tiles: entry bundle width %d", width)
	}
	entries := make([][]byte, 0, width)
	for len(data) > 0 {
		if len(entries) == width {
			return nil, fmt.Errorf("tiles: entry bundle has more than %d entries", width)
		}
		if len(data) < 2 {
			return nil, errors.New("tiles: entry bundle truncated in a length prefix")
		}
		n := int(binary.BigEndian.Uint16(data))
		if len(data)-2 < n {
			return nil, fmt.Errorf("tiles: entry bundle truncated: entry %d needs %d bytes, %d left", len(entries), n, len(data)-2)
		}
		entries = append(entries, data[2:2+n:2+n])
		data = data[2+n:]
	}
	if len(entries) != width {
		return nil, fmt.Errorf("tiles: entry bundle has %d entries, want %d", len(entries), width)
	}
	return entries, nil
}

// ParseHashTile splits the data of a hash tile of the given width into its hashes.
func ParseHashTile(data []byte, width int) ([]tlog.Hash, error) {
	if width < 1 || width > TileWidth || len(data) != width*tlog.HashSize {
		return nil, fmt.Errorf("tiles: hash tile of %d bytes, want %d hashes", len(data), width)
	}
	hs := make([]tlog.Hash, width)
	for i := range hs {
		copy(hs[i][:], data[i*tlog.HashSize:])
	}
	return hs, nil
}
