package sequencer

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
	sumdb "golang.org/x/mod/sumdb/tlog"
)

// RebuildResult is the outcome of a full rebuild of one project-stream.
type RebuildResult struct {
	// Live is the tree proofs are served from (the committed checkpoint).
	Live tiles.Tree
	// Checked counts the leaves rebuilt before the first break (all when valid).
	Checked uint64
	// Size and Root are those of the rebuilt tree.
	Size uint64
	Root tlog.Hash
	// Break is the first break, or nil when the rebuild reproduces the live tree.
	Break *tlog.ChainBreak
}

// rebuildPage is how many index rows a rebuild reads at once.
const rebuildPage = 5000

// Rebuild rebuilds log's whole tree from storage, reading everything afresh (no
// caches): the catalog's index rows, the payload bundles, the entry bundles and the
// tiles. It decrypts every payload, re-derives every commitment, checks sequence
// contiguity, every customer signature (signingKeys returns the registered public keys
// of a signingKeyId; nil skips the check), every leaf, and that the rebuilt tree is
// the live tree, and reports the first break. An error means the rebuild could not run
// (the store or catalog failed), not that the log is broken.
func (s *Sequencer) Rebuild(ctx context.Context, log catalog.LogID, signingKeys func(string) []ed25519.PublicKey) (RebuildResult, error) {
	var res RebuildResult
	// Materialized first: the rebuild reads every entry bundle and tile.
	live, err := s.Materialize(ctx, log)
	if err != nil {
		return res, err
	}
	res.Live = live
	rb := tlog.NewRebuilder(tlog.RebuildOptions{SigningKeys: signingKeys, ProjectID: log.ProjectID, Stream: string(log.Stream)})
	finish := func(brk *tlog.ChainBreak) (RebuildResult, error) {
		res.Checked, res.Size, res.Root, res.Break = rb.Stats.Events, rb.Size(), rb.Root(), brk
		return res, nil
	}
	asBreak := func(err error) (*tlog.ChainBreak, bool) {
		var cb *tlog.ChainBreak
		ok := errors.As(err, &cb)
		return cb, ok
	}
	r := &rebuildReader{s: s, log: log, prefix: prefixOf(log), live: live,
		tiles: tiles.NewReader(s.cfg.Store, prefixOf(log), live, nil)}
	var cursor uint64
	for cursor < live.Size {
		rows, err := s.queryIndex(ctx, log, cursor)
		if err != nil {
			return res, err
		}
		if len(rows) == 0 {
			break
		}
		for _, row := range rows {
			if row.Sequence > live.Size {
				break
			}
			next := rb.Size() + 1
			if row.Sequence != next {
				return finish(&tlog.ChainBreak{Sequence: next, Reason: tlog.BreakSequenceGap,
					Detail: fmt.Sprintf("index row %d is missing (next row is %d)", next, row.Sequence)})
			}
			rec, brk, err := r.record(ctx, row)
			if err != nil {
				return res, err
			}
			if brk != nil {
				return finish(brk)
			}
			if err := rb.Add(&rec); err != nil {
				if cb, ok := asBreak(err); ok {
					return finish(cb)
				}
				return res, err
			}
			if len(r.leafHashes) == tileCheckChunk || rb.Size() == live.Size {
				if brk, err := r.checkTileChunk(ctx, rb.Size()-uint64(len(r.leafHashes))); err != nil || brk != nil {
					if err != nil {
						return res, err
					}
					return finish(brk)
				}
			}
		}
		cursor = rows[len(rows)-1].Sequence
	}
	if err := rb.CheckRoot(live.Size, live.Root); err != nil {
		if cb, ok := asBreak(err); ok {
			return finish(cb)
		}
		return res, err
	}
	if brk, err := s.checkRoot(ctx, log, live); err != nil || brk != nil {
		if err != nil {
			return res, err
		}
		return finish(brk)
	}
	return finish(nil)
}

func (s *Sequencer) queryIndex(ctx context.Context, log catalog.LogID, after uint64) ([]catalog.Event, error) {
	rows, err := s.cfg.Catalog.QueryEvents(ctx, catalog.Query{Log: log, Cursor: after, Limit: rebuildPage})
	if err != nil {
		return nil, fmt.Errorf("sequencer: index rows after %d: %w", after, err)
	}
	return rows, nil
}

// rebuildReader reads one stream's stored objects in sequence order for a rebuild,
// keeping the current payload and entry bundles.
type rebuildReader struct {
	s      *Sequencer
	log    catalog.LogID
	prefix tiles.Prefix
	live   tiles.Tree
	tiles  *tiles.Reader // authenticating, no cache

	batch      catalog.Batch
	payload    *tiles.PayloadBundle
	entriesN   int64 // index of the entry bundle in entries, -1 when none
	entries    [][]byte
	leafHashes []tlog.Hash // rebuilt leaf hashes not yet compared with the tiles
}

// tileCheckChunk is how many rebuilt leaf hashes are compared with the tiles at once.
const tileCheckChunk = 1 << 16

// record assembles the stored event of an index row, or the break that prevents it.
func (r *rebuildReader) record(ctx context.Context, row catalog.Event) (tlog.Record, *tlog.ChainBreak, error) {
	seq := row.Sequence
	brk := func(reason, format string, args ...any) (tlog.Record, *tlog.ChainBreak, error) {
		return tlog.Record{}, &tlog.ChainBreak{Sequence: seq, Reason: reason, Detail: fmt.Sprintf(format, args...)}, nil
	}
	if r.payload == nil || seq >= r.batch.End() {
		bs, err := r.s.cfg.Catalog.BatchesCovering(ctx, r.log, seq, seq)
		if err != nil {
			return tlog.Record{}, nil, fmt.Errorf("sequencer: batch of %d: %w", seq, err)
		}
		if len(bs) != 1 {
			return brk(tlog.BreakSequenceGap, "no committed batch holds sequence %d", seq)
		}
		path, err := tiles.PayloadPath(bs[0].First, bs[0].BatchID)
		if err != nil {
			return tlog.Record{}, nil, err
		}
		data, err := r.s.cfg.Store.Get(ctx, r.prefix.Key(path))
		if errors.Is(err, tiles.ErrNotFound) {
			return brk(tlog.BreakContentTampered, "payload bundle %s is missing", path)
		}
		if err != nil {
			return tlog.Record{}, nil, fmt.Errorf("sequencer: read %s: %w", path, err)
		}
		var pb tiles.PayloadBundle
		if err := pb.UnmarshalBinary(data); err != nil || pb.First != bs[0].First || uint64(len(pb.Records)) != bs[0].Count {
			return brk(tlog.BreakContentTampered, "payload bundle %s does not decode to the batch's %d records", path, bs[0].Count)
		}
		r.batch, r.payload = bs[0], &pb
	}
	pr := r.payload.Records[seq-r.batch.First]

	entry, brkE, err := r.entry(ctx, seq)
	if err != nil || brkE != nil {
		return tlog.Record{}, brkE, err
	}
	leaf, err := tlog.DecodeLeaf(entry)
	if err != nil {
		return brk(tlog.BreakLeafMismatch, "entry bundle leaf does not decode: %v", err)
	}
	if !bytes.Equal(entry, pr.LeafData) {
		return brk(tlog.BreakLeafMismatch, "entry bundle leaf differs from the sealed batch's leaf")
	}
	rec := tlog.Record{Leaf: leaf, LeafHash: row.LeafHash}
	plain, err := r.s.cfg.Keyring.Open(ctx, r.log, pr.Ciphertext, payloadAAD(r.log, seq, leaf.ID))
	switch {
	case errors.Is(err, ErrShredded):
	case err != nil || len(plain) < tlog.NonceSize:
		return brk(tlog.BreakContentTampered, "payload ciphertext does not decrypt")
	default:
		var n tlog.Nonce
		copy(n[:], plain)
		rec.Nonce, rec.Payload = &n, plain[tlog.NonceSize:]
	}
	r.leafHashes = append(r.leafHashes, tlog.LeafHash(entry))
	return rec, nil, nil
}

// entry returns the leaf data of seq from its entry bundle.
func (r *rebuildReader) entry(ctx context.Context, seq uint64) ([]byte, *tlog.ChainBreak, error) {
	idx := seq - 1
	n := int64(idx / tiles.TileWidth)
	if r.entries == nil || r.entriesN != n {
		w := min(uint64(tiles.TileWidth), r.live.Size-uint64(n)*tiles.TileWidth)
		t := sumdb.Tile{H: tiles.TileHeight, L: tiles.EntriesLevel, N: n, W: int(w)}
		path := tiles.TilePath(t)
		data, err := r.s.cfg.Store.Get(ctx, r.prefix.Key(path))
		if errors.Is(err, tiles.ErrNotFound) {
			return nil, &tlog.ChainBreak{Sequence: seq, Reason: tlog.BreakLeafMismatch, Detail: "entry bundle " + path + " is missing"}, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("sequencer: read %s: %w", path, err)
		}
		es, err := tiles.ParseEntryBundle(data, t.W)
		if err != nil {
			return nil, &tlog.ChainBreak{Sequence: seq, Reason: tlog.BreakLeafMismatch, Detail: "entry bundle " + path + " does not decode"}, nil
		}
		r.entries, r.entriesN = es, n
	}
	return r.entries[idx%tiles.TileWidth], nil, nil
}

// checkTileChunk compares the leaf hashes in the hash tiles, read through the
// authenticating reader, with the rebuilt ones starting at leaf index start.
func (r *rebuildReader) checkTileChunk(ctx context.Context, start uint64) (*tlog.ChainBreak, error) {
	end := start + uint64(len(r.leafHashes))
	hs, err := r.tiles.LeafHashes(ctx, start, end)
	if errors.Is(err, tiles.ErrMismatch) || errors.Is(err, tiles.ErrNotFound) {
		return &tlog.ChainBreak{Sequence: r.live.Size, Reason: tlog.BreakRootMismatch,
			Detail: fmt.Sprintf("hash tiles of leaves %d-%d do not reproduce the live root: %v", start+1, end, err)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sequencer: read tiles: %w", err)
	}
	for i, h := range hs {
		if h != r.leafHashes[i] {
			return &tlog.ChainBreak{Sequence: start + uint64(i) + 1, Reason: tlog.BreakRootMismatch,
				Detail: "hash tile leaf differs from the rebuilt leaf"}, nil
		}
	}
	r.leafHashes = r.leafHashes[:0]
	return nil, nil
}

// checkRoot checks that the hash tiles reproduce the live root and that the published
// checkpoint note agrees with the live tree.
func (s *Sequencer) checkRoot(ctx context.Context, log catalog.LogID, live tiles.Tree) (*tlog.ChainBreak, error) {
	if live.Size == 0 {
		return nil, nil
	}
	rd := tiles.NewReader(s.cfg.Store, prefixOf(log), live, nil)
	mismatch := func(detail string) (*tlog.ChainBreak, error) {
		return &tlog.ChainBreak{Sequence: live.Size, Reason: tlog.BreakRootMismatch, Detail: detail}, nil
	}
	root, err := rd.TreeHash(ctx, live.Size)
	if err != nil || root != live.Root {
		return mismatch(fmt.Sprintf("hash tiles do not reproduce the live root: %v", err))
	}
	note, err := s.cfg.Store.Get(ctx, prefixOf(log).Key(tiles.CheckpointPath))
	if err != nil {
		return mismatch(fmt.Sprintf("checkpoint note unreadable: %v", err))
	}
	cp, err := tlog.OpenCheckpoint(s.cfg.Key.Public().(ed25519.PublicKey),
		tlog.CheckpointOrigin(s.cfg.Origin, log.ProjectID, string(log.Stream)), note)
	if err != nil {
		return mismatch(fmt.Sprintf("checkpoint note: %v", err))
	}
	if cp.Size == live.Size && cp.Root != live.Root {
		return mismatch(fmt.Sprintf("checkpoint note names size %d root %s", cp.Size, tlog.Hex(cp.Root)))
	}
	if cp.Size > live.Size {
		// Published since the rebuild began: the note must name a committed tree
		// that extends the live one.
		now, _, err := s.Proofs(ctx, log)
		if err != nil {
			return nil, err
		}
		if root, err := now.TreeHash(ctx, cp.Size); err != nil || root != cp.Root {
			return mismatch(fmt.Sprintf("checkpoint note names size %d root %s, not a committed tree", cp.Size, tlog.Hex(cp.Root)))
		}
	}
	return nil, nil
}
