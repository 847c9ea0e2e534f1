package sequencer

import (
	"context"
	"errors"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
	sumdb "golang.org/x/mod/sumdb/tlog"
)

// maxEdge bounds the committed but unpublished leaves a proof is computed over; a
// longer edge (a publication far behind, after an outage of the store) is published
// first, as proofs used to be served.
const maxEdge = 1 << 16

// edgeCache keeps, per project-stream, the leaf hashes this process committed and has
// not yet published (seqruns.go): the right edge proofs are computed over until the
// publish loop catches up. It only saves reading them from the catalog, which holds
// the same hashes in its index rows; memory is bounded by maxEdge per stream and
// edgeBytes over all streams.
type edgeCache struct{ seqRuns[tlog.Hash] }

// edgeBytes bounds the leaf hashes the edge cache holds over all project-streams.
const edgeBytes = 64 << 20

func newEdgeCache() *edgeCache {
	return &edgeCache{newSeqRuns(func(tlog.Hash) int { return len(tlog.Hash{}) }, edgeBytes, maxEdge)}
}

// add records the committed events (sequences first...) of log.
func (c *edgeCache) add(log catalog.LogID, first uint64, events []catalog.Event) {
	hashes := make([]tlog.Hash, len(events))
	for i := range events {
		hashes[i] = events[i].LeafHash
	}
	c.put(log, first, hashes)
}

// edgeLeaves returns the leaf hashes of the committed sequences (from, to] of log:
// from the edge cache when this process committed them, else from the catalog's
// index rows.
func (s *Sequencer) edgeLeaves(ctx context.Context, log catalog.LogID, from, to uint64) ([]tlog.Hash, error) {
	if hs, ok := s.edges.get(log, from+1, to); ok {
		return hs, nil
	}
	out := make([]tlog.Hash, 0, to-from)
	for cursor := from; cursor < to; {
		rows, err := s.cfg.Catalog.EventLeaves(ctx, log, cursor, int(min(to-cursor, catalog.MaxLimit)))
		if err != nil {
			return nil, fmt.Errorf("sequencer: leaf hashes %d-%d: %w", from+1, to, err)
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("%w: index rows of %s end at %d, the checkpoint at %d", ErrCorrupt, log, cursor, to)
		}
		for _, r := range rows {
			if r.Sequence != cursor+1 {
				return nil, fmt.Errorf("%w: index row %d of %s is missing", ErrCorrupt, cursor+1, log)
			}
			if r.Sequence > to {
				break
			}
			out = append(out, r.LeafHash)
			cursor++
		}
	}
	return out, nil
}

// Tree returns the live committed tree of log: the size and root that signed heads
// and proofs are served against. Every event acknowledged is in it, whether or not its
// tiles are materialized yet. A log with no events has size 0 and the empty root.
func (s *Sequencer) Tree(ctx context.Context, log catalog.LogID) (tiles.Tree, error) {
	h, err := s.head(ctx, log, 0, true)
	if err != nil {
		return tiles.Tree{}, err
	}
	return h.tree, nil
}

// Proofs returns a reader of proofs over the live committed tree of log, and that
// tree. Leaves not yet materialized are proved from the committed leaf hashes
// (tiles.NewEdgeReader), so an event has a verifying inclusion proof as soon as it is
// acknowledged. The Reader is shared by the requests against the same tree (heads.go).
func (s *Sequencer) Proofs(ctx context.Context, log catalog.LogID) (*tiles.Reader, tiles.Tree, error) {
	return s.proofs(ctx, log, 0, true)
}

// ProofsOver is Proofs for a caller that needs a committed tree of at least size
// leaves, not necessarily the live one: a proof that names its tree size, or of a leaf
// that must be in the tree. It answers from memory when it can (heads.go); if no
// committed tree is that large, the tree it returns is the live one, smaller.
func (s *Sequencer) ProofsOver(ctx context.Context, log catalog.LogID, size uint64) (*tiles.Reader, tiles.Tree, error) {
	return s.proofs(ctx, log, size, false)
}

// Materialize publishes log up to its committed size now, rather than when the publish
// loop gets to it, and returns the tree it published: for the tile endpoints, whose
// readers (mirrors) expect the checkpoint note of the latest head, and for a full
// rebuild, which reads every entry bundle.
func (s *Sequencer) Materialize(ctx context.Context, log catalog.LogID) (tiles.Tree, error) {
	cp, err := s.checkpoint(ctx, log)
	if err != nil || cp.PublishedSize >= cp.Size {
		return treeOf(cp), err
	}
	if cp, err = s.publish(ctx, log, tiles.NewWriter(s.cfg.Store, prefixOf(log), s.cfg.Logger)); err != nil {
		return tiles.Tree{}, fmt.Errorf("sequencer: publish: %w", err)
	}
	s.heads.note(cp)
	return treeOf(cp), nil
}

// checkpoint reads log's checkpoint; a log never sealed has the empty one.
func (s *Sequencer) checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error) {
	cp, err := s.cfg.Catalog.Checkpoint(ctx, log)
	if errors.Is(err, catalog.ErrNotFound) {
		return catalog.Checkpoint{Log: log}, nil
	}
	if err != nil {
		return cp, fmt.Errorf("sequencer: checkpoint: %w", err)
	}
	return cp, nil
}

func treeOf(cp catalog.Checkpoint) tiles.Tree {
	if cp.Size == 0 {
		return tiles.Tree{Root: tlog.EmptyRoot}
	}
	return tiles.Tree{Size: cp.Size, Root: cp.Root}
}

// TileData returns the bytes of tile t (a hash tile or an entry bundle, full or
// partial) of log's committed tree, computed from committed state: what the object
// holds once materialized, for a reader asking before the publish loop wrote it (or
// for a partial width publication skipped). A tile beyond the committed tree is
// tiles.ErrNotFound.
func (s *Sequencer) TileData(ctx context.Context, log catalog.LogID, t sumdb.Tile) ([]byte, error) {
	rd, tree, err := s.Proofs(ctx, log)
	if err != nil {
		return nil, err
	}
	if t.L != tiles.EntriesLevel {
		return rd.HashTile(ctx, t)
	}
	if t.N < 0 || t.W < 1 || t.W > tiles.TileWidth || uint64(t.N) > tree.Size/tiles.TileWidth ||
		uint64(t.N)*tiles.TileWidth+uint64(t.W) > tree.Size {
		return nil, fmt.Errorf("sequencer: entry bundle %v beyond tree size %d: %w", t, tree.Size, tiles.ErrNotFound)
	}
	first := uint64(t.N)*tiles.TileWidth + 1 // sequences
	last := first + uint64(t.W) - 1
	leaves, err := s.leafData(ctx, log, first, last)
	if err != nil {
		return nil, err
	}
	hashes, err := rd.LeafHashes(ctx, first-1, last)
	if err != nil {
		return nil, err
	}
	for i, d := range leaves {
		if tlog.LeafHash(d) != hashes[i] {
			return nil, fmt.Errorf("%w: leaf %d of %s does not match its committed leaf hash", ErrCorrupt, first+uint64(i), log)
		}
	}
	return tiles.MarshalEntryBundle(leaves)
}
