package catalog

import (
	"context"
	"fmt"
	"time"
)

// TreeHeadsLog is the committed state of the service-wide tree_heads log (package
// anchor): one leaf per recorded head of a project-stream, in the order the job
// appended them. It is the single row the anchoring job advances, with a compare-and-
// swap on Size, so two runners can never append two different leaves at one index.
type TreeHeadsLog struct {
	// Size is the number of leaves committed; the heads with Index 0..Size-1 exist.
	Size uint64
	// Root is the RFC 6962 root of the Size leaves (zero while Size is 0) and Range
	// the compact range [0, Size), enough to append without reading tiles.
	Root  Hash
	Range []Hash
	// PublishedSize is the size up to which the log's tiles, entry bundles and signed
	// checkpoint are in object storage; PublishedSize <= Size.
	PublishedSize uint64
}

// AnchorCatalog is what the anchoring job needs of a catalog beyond the tree heads of
// [Catalog]. Both drivers implement it; catalogtest.TestAnchor checks them.
//
// Every method may be called concurrently, from many processes. The lease is advice
// that keeps replicas from doing the same work; correctness never depends on it:
// AppendTreeHeads commits only on top of the state its caller read.
type AnchorCatalog interface {
	// AnchorLease takes or renews the job's lease for holder until now+ttl. It
	// returns false, without error, while another holder's lease runs.
	AnchorLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (bool, error)
	// TreeHeadsLog returns the committed state (all zero before the first append).
	TreeHeadsLog(ctx context.Context) (TreeHeadsLog, error)
	// GrownLogs returns up to limit project-streams (Log, Size, Root only) whose
	// committed size is larger than every tree head recorded for them, in SortLogs
	// order after the stream after (the zero LogID starts at the first).
	GrownLogs(ctx context.Context, after LogID, limit int) ([]Checkpoint, error)
	// AppendTreeHeads records heads as the leaves oldSize, oldSize+1, ... of the
	// tree_heads log (each head's Index must say so) and moves the log's state to
	// next, in one transaction, only if the committed size is still oldSize: otherwise
	// it returns ErrConflict and commits nothing. A head whose project-stream and size
	// are already recorded is also ErrConflict (never two heads of one stream and
	// size).
	AppendTreeHeads(ctx context.Context, oldSize uint64, heads []TreeHead, next TreeHeadsLog) error
	// TreeHeadsFrom returns up to limit heads of the tree_heads log from leaf index
	// first on, in index order.
	TreeHeadsFrom(ctx context.Context, first uint64, limit int) ([]TreeHead, error)
	// AdvanceTreeHeadsPublished raises PublishedSize to size (never lowers it); a size
	// beyond the committed size is ErrConflict.
	AdvanceTreeHeadsPublished(ctx context.Context, size uint64) error
	// UnanchoredTreeHeads returns up to limit heads with Index < below and no anchor,
	// in index order, from index first on.
	UnanchoredTreeHeads(ctx context.Context, first, below uint64, limit int) ([]TreeHead, error)
	// SetAnchors records every head's Anchor (as SetAnchor, keyed by Log and
	// TreeSize) in one transaction; heads already anchored keep their anchor.
	SetAnchors(ctx context.Context, heads []TreeHead) error
}

// PublicReadCatalog holds the projects whose tlog-tiles path is readable without an
// API key (issue 15, for mirrors; off by default).
type PublicReadCatalog interface {
	// SetPublicRead turns the project's public read mode on or off; an unknown
	// project is ErrNotFound.
	SetPublicRead(ctx context.Context, projectID string, on bool) error
	// PublicRead reports whether the project's public read mode is on (false for an
	// unknown project).
	PublicRead(ctx context.Context, projectID string) (bool, error)
}

// ValidateAppend checks an AppendTreeHeads call before a driver writes anything.
func ValidateAppend(oldSize uint64, heads []TreeHead, next TreeHeadsLog) error {
	if next.Size != oldSize+uint64(len(heads)) || len(heads) == 0 {
		return fmt.Errorf("%w: %d tree heads do not take the log from %d to %d", ErrInvalid, len(heads), oldSize, next.Size)
	}
	if len(next.Range) > 64 || next.PublishedSize > oldSize {
		return fmt.Errorf("%w: tree_heads state", ErrInvalid)
	}
	for i := range heads {
		h := &heads[i]
		if err := h.Log.Validate(); err != nil {
			return err
		}
		if !h.InLog || h.Index != oldSize+uint64(i) {
			return fmt.Errorf("%w: tree head %d of the batch has index %d, want %d", ErrInvalid, i, h.Index, oldSize+uint64(i))
		}
		if len(h.Signature) == 0 || h.Anchor != nil {
			return fmt.Errorf("%w: tree head %s %d must be signed and unanchored", ErrInvalid, h.Log, h.TreeSize)
		}
	}
	return nil
}

// TreeHeadsLogFrom builds the state from its stored columns (shared by the drivers).
func TreeHeadsLogFrom(size, published int64, root, rng []byte) (TreeHeadsLog, error) {
	l := TreeHeadsLog{Size: uint64(size), PublishedSize: uint64(published)}
	var err error
	if l.Root, err = HashFrom(root); err != nil {
		return l, err
	}
	if l.Range, err = SplitHashes(rng); err != nil {
		return l, err
	}
	return l, nil
}

// ScanGrownLog reads one row of a GrownLogs query: project id, stream, size, root.
func ScanGrownLog(row interface{ Scan(...any) error }) (Checkpoint, error) {
	var (
		cp      Checkpoint
		stream  string
		size    int64
		rootRaw []byte
	)
	if err := row.Scan(&cp.Log.ProjectID, &stream, &size, &rootRaw); err != nil {
		return cp, err
	}
	cp.Log.Stream, cp.Size = Stream(stream), uint64(size)
	var err error
	cp.Root, err = HashFrom(rootRaw)
	return cp, err
}
