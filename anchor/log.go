package anchor

import (
	"context"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// appendGrown appends one leaf per project-stream whose head grew and commits it with
// the log's new state: the commit point. It returns the state after the run (st when
// nothing grew) and the number of heads appended. A crash before the commit leaves
// nothing; after it, materialize repairs the objects.
func (j *Job) appendGrown(ctx context.Context, st catalog.TreeHeadsLog) (catalog.TreeHeadsLog, int, error) {
	var grown []catalog.Checkpoint
	for after := (catalog.LogID{}); ; {
		page, err := j.cfg.Catalog.GrownLogs(ctx, after, pageSize)
		if err != nil {
			return st, 0, err
		}
		grown = append(grown, page...)
		if len(page) < pageSize {
			break
		}
		after = page[len(page)-1].Log
	}
	if len(grown) == 0 {
		return st, 0, nil
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	hashes := make([][]byte, len(st.Range))
	for i := range st.Range {
		hashes[i] = st.Range[i][:]
	}
	rng, err := rf.NewRange(0, st.Size, hashes)
	if err != nil {
		return st, 0, fmt.Errorf("anchor: tree_heads compact range: %w", err)
	}
	now := catalog.MS(j.cfg.Now())
	heads := make([]catalog.TreeHead, len(grown))
	for i, cp := range grown {
		h := catalog.TreeHead{Log: cp.Log, TreeSize: cp.Size, RootHash: cp.Root, Timestamp: now, Index: st.Size + uint64(i), InLog: true}
		sth := headSTH(h)
		if err := tlog.SignSTH(j.cfg.Key, &sth); err != nil {
			return st, 0, fmt.Errorf("anchor: sign head of %s: %w", cp.Log, err)
		}
		if h.Signature, err = hexBytes(sth.Signature); err != nil {
			return st, 0, err
		}
		leaf, err := tlog.TreeHeadLeaf(&sth)
		if err != nil {
			return st, 0, fmt.Errorf("anchor: leaf of %s: %w", cp.Log, err)
		}
		lh := tlog.LeafHash(leaf)
		if err := rng.Append(lh[:], nil); err != nil {
			return st, 0, fmt.Errorf("anchor: append to tree_heads: %w", err)
		}
		heads[i] = h
	}
	root, err := rng.GetRootHash(nil)
	if err != nil {
		return st, 0, fmt.Errorf("anchor: tree_heads root: %w", err)
	}
	next := catalog.TreeHeadsLog{Size: rng.End(), PublishedSize: st.PublishedSize}
	copy(next.Root[:], root)
	for _, h := range rng.Hashes() {
		next.Range = append(next.Range, catalog.Hash(h))
	}
	// The commit point: heads and state in one transaction, only on top of st.
	if err := j.cfg.Catalog.AppendTreeHeads(ctx, st.Size, heads, next); err != nil {
		return st, 0, err
	}
	return next, len(heads), nil
}

// materialize writes the tiles, entry bundles and signed checkpoint of the committed
// state st from the heads in the catalog, then records them as published. The bytes
// depend only on committed state, so a repeated or concurrent call writes the same.
func (j *Job) materialize(ctx context.Context, st catalog.TreeHeadsLog) error {
	if st.PublishedSize >= st.Size {
		return nil
	}
	leaves := make([][]byte, 0, st.Size-st.PublishedSize)
	for next := st.PublishedSize; next < st.Size; {
		page, err := j.cfg.Catalog.TreeHeadsFrom(ctx, next, int(min(st.Size-next, pageSize)))
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return fmt.Errorf("anchor: tree_heads leaf %d of %d is missing from the catalog", next, st.Size)
		}
		for _, h := range page {
			if h.Index != next {
				return fmt.Errorf("anchor: tree_heads leaf %d is missing from the catalog (found %d)", next, h.Index)
			}
			sth := headSTH(h)
			leaf, err := tlog.TreeHeadLeaf(&sth)
			if err != nil {
				return fmt.Errorf("anchor: tree_heads leaf %d: %w", next, err)
			}
			leaves = append(leaves, leaf)
			next++
		}
	}
	note, err := j.checkpoint(st)
	if err != nil {
		return err
	}
	if err := j.writer.Publish(ctx, st.PublishedSize, leaves, st.Root, note); err != nil {
		return fmt.Errorf("anchor: publish tree_heads %d: %w", st.Size, err)
	}
	return j.cfg.Catalog.AdvanceTreeHeadsPublished(ctx, st.Size)
}
