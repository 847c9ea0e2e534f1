// Package fsck checks a deployment's storage offline: that the catalog and the object
// store hold one consistent set of logs. For every project-stream it checks
//
//   - every committed batch (catalog batch rows 1..size, contiguous) has its payload
//     bundle, which decodes, starts where the row says and holds the row's count;
//   - the leaves of those bundles rebuild the committed root of the checkpoint row;
//   - the published checkpoint note verifies under a service key and names a size
//     not beyond the committed one, with the root the leaves give for that size;
//   - every hash tile and entry bundle of the tree the note names exists with exactly
//     the bytes the leaves determine;
//   - every payload object that no committed batch names (an orphan, left by a batch
//     that failed before its commit) is listed, and with Sweep deleted.
//
// It reads the catalog through a narrow interface and never writes to it; the only
// write to the store is Sweep's delete of orphans. It is safe against a running
// deployment on PostgreSQL: it reads each checkpoint row before anything else of that
// log, and treats as an orphan only a payload object of sequences that row already
// covers, so a batch being sealed meanwhile (whose sequences lie beyond it) is never
// an orphan. It holds the leaf hashes and data of one project-stream at a time in
// memory.
package fsck

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	sttlog "github.com/sealtrail/sealtrail/tlog"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"
)

// Catalog is what fsck reads of a catalog driver.
type Catalog interface {
	ListProjects(ctx context.Context, afterID string, limit int) ([]catalog.Project, error)
	Checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error)
	BatchesCovering(ctx context.Context, log catalog.LogID, first, last uint64) ([]catalog.Batch, error)
}

// Store is the object store fsck reads; it must list (every driver does).
type Store interface {
	tiles.Store
	tiles.Lister
}

// Options configures a check.
type Options struct {
	Catalog Catalog
	Store   Store
	// Origin is the service origin of the checkpoint notes.
	Origin string
	// Keys are the service public keys a checkpoint note may be signed by: the
	// current key and those of the key history.
	Keys []ed25519.PublicKey
	// Sweep deletes the orphan payload objects found.
	Sweep  bool
	Logger *slog.Logger
}

// Kinds of problem.
const (
	BatchGap          = "batch_gap"          // batch rows do not cover 1..size contiguously
	PayloadMissing    = "payload_missing"    // a committed batch's payload bundle is absent
	PayloadCorrupt    = "payload_corrupt"    // it does not decode or disagrees with its row
	RootMismatch      = "root_mismatch"      // the bundles' leaves do not give the committed root
	CheckpointMissing = "checkpoint_missing" // nothing published although the row says so
	CheckpointBad     = "checkpoint_bad"     // the note does not verify or names another tree
	TileMissing       = "tile_missing"
	TileMismatch      = "tile_mismatch"
	BundleMissing     = "bundle_missing"
	BundleMismatch    = "bundle_mismatch"
	Orphan            = "orphan_payload" // a payload object no committed batch names
)

// A Problem is one thing found wrong. Orphans are problems too (garbage, not
// damage): Report.Damaged ignores them.
type Problem struct {
	Log    catalog.LogID
	Kind   string
	Key    string // the object concerned, if any
	Detail string
}

func (p Problem) String() string {
	s := p.Kind
	if p.Log != (catalog.LogID{}) { // a group payload object belongs to no one log
		s = p.Log.String() + ": " + s
	}
	if p.Key != "" {
		s += " " + p.Key
	}
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// Report is the outcome of a check.
type Report struct {
	Logs      int    // project-streams checked
	Leaves    uint64 // committed leaves checked
	Published uint64 // leaves covered by published checkpoint notes
	Objects   int    // tiles and entry bundles compared
	Problems  []Problem
	Swept     []string // orphans deleted (Sweep)
}

// Damaged reports whether any problem other than an orphan was found.
func (r *Report) Damaged() bool {
	return slices.ContainsFunc(r.Problems, func(p Problem) bool { return p.Kind != Orphan })
}

// Run checks every project-stream of the catalog. An error means the check could not
// be completed (the catalog or the store failed); what was found is in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Report{}
	g := &groupCheck{named: map[string]bool{}, before: time.Now().Add(-GroupGrace)}
	after := ""
	for {
		ps, err := o.Catalog.ListProjects(ctx, after, 1000)
		if err != nil {
			return r, fmt.Errorf("fsck: list projects: %w", err)
		}
		for _, p := range ps {
			for _, s := range []catalog.Stream{catalog.StreamEvents, catalog.StreamProjectAudit} {
				if err := checkLog(ctx, o, r, g, catalog.LogID{ProjectID: p.ID, Stream: s}); err != nil {
					return r, err
				}
			}
		}
		if len(ps) < 1000 {
			return r, groupOrphans(ctx, o, r, g)
		}
		after = ps[len(ps)-1].ID
	}
}

// logCheck is the state of one project-stream's check.
type logCheck struct {
	o      Options
	r      *Report
	log    catalog.LogID
	prefix tiles.Prefix
	named  map[string]bool // payload paths the batch rows name
	groups *groupCheck
	leaves [][]byte // leaf data of sequences 1..n, as far as the bundles go
	hashes []tlog.Hash
}

func (c *logCheck) problem(kind, key, format string, args ...any) {
	p := Problem{Log: c.log, Kind: kind, Key: key, Detail: fmt.Sprintf(format, args...)}
	c.o.Logger.Warn("fsck: "+kind, "log", c.log.String(), "key", key, "detail", p.Detail)
	c.r.Problems = append(c.r.Problems, p)
}

func checkLog(ctx context.Context, o Options, r *Report, g *groupCheck, log catalog.LogID) error {
	// The checkpoint row first: everything committed after it lies beyond cp.Size.
	cp, err := o.Catalog.Checkpoint(ctx, log)
	if errors.Is(err, catalog.ErrNotFound) {
		cp = catalog.Checkpoint{Log: log}
	} else if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	prefix, err := tiles.StreamPrefix(log.ProjectID, string(log.Stream))
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	c := &logCheck{o: o, r: r, log: log, prefix: prefix, named: map[string]bool{}, groups: g}
	r.Logs++
	complete, err := c.readBatches(ctx, cp.Size)
	if err != nil {
		return err
	}
	r.Leaves += cp.Size
	if complete {
		if root := c.root(cp.Size); root != cp.Root {
			c.problem(RootMismatch, "", "the payload bundles' leaves give root %x for size %d, the catalog holds %x", root, cp.Size, cp.Root)
			complete = false
		}
	}
	if err := c.checkPublished(ctx, cp, complete); err != nil {
		return err
	}
	return c.orphans(ctx, cp.Size)
}

// batchWindow is how many sequences' batch rows are read at once.
const batchWindow = 1 << 16

// readBatches reads the batch rows of 1..size and their payload bundles, collecting
// the leaves. It reports whether every leaf was read.
func (c *logCheck) readBatches(ctx context.Context, size uint64) (bool, error) {
	next := uint64(1)
	complete := true
	for lo := uint64(1); lo <= size; lo += batchWindow {
		hi := min(size, lo+batchWindow-1)
		bs, err := c.o.Catalog.BatchesCovering(ctx, c.log, lo, hi)
		if err != nil {
			return false, fmt.Errorf("fsck: %w", err)
		}
		for _, b := range bs {
			if b.End() <= next { // read in the previous window
				continue
			}
			ref, err := tiles.BatchPayloadRef(c.prefix, b.First, b.BatchID, b.Object, b.Offset, b.Length)
			if err != nil {
				c.problem(PayloadCorrupt, "", "batch row %d-%s: %v", b.First, b.BatchID, err)
				complete = false
				continue
			}
			if b.Object != "" {
				c.groups.named[b.Object] = true
			} else {
				c.named[strings.TrimPrefix(ref.Key, string(c.prefix))] = true
			}
			if b.First != next {
				c.problem(BatchGap, ref.String(), "expected a batch starting at %d", next)
				complete = false
			}
			next = b.End()
			if !complete {
				continue // the leaves can no longer be placed; keep naming payloads
			}
			pb, problem, err := c.readPayload(ctx, ref, b)
			if err != nil {
				return false, err
			}
			if problem != "" {
				complete = false
				continue
			}
			for _, rec := range pb.Records {
				c.leaves = append(c.leaves, rec.LeafData)
				c.hashes = append(c.hashes, sttlog.LeafHash(rec.LeafData))
			}
		}
	}
	if next != size+1 && complete {
		c.problem(BatchGap, "", "batch rows end at sequence %d, the checkpoint at %d", next-1, size)
		complete = false
	}
	return complete, nil
}

// readPayload reads and decodes the payload bundle of batch b at ref. It returns the
// kind of problem found ("" if none); an error means the store failed.
func (c *logCheck) readPayload(ctx context.Context, ref tiles.PayloadRef, b catalog.Batch) (tiles.PayloadBundle, string, error) {
	pb, err := tiles.ReadPayloadRef(ctx, c.o.Store, ref, b.First, b.Count)
	switch {
	case errors.Is(err, tiles.ErrNotFound):
		c.problem(PayloadMissing, ref.String(), "batch of sequences %d-%d", b.First, b.End()-1)
		return pb, PayloadMissing, nil
	case errors.Is(err, tiles.ErrPayloadCorrupt):
		c.problem(PayloadCorrupt, ref.String(), "%v", err)
		return pb, PayloadCorrupt, nil
	case err != nil:
		return pb, "", fmt.Errorf("fsck: %w", err)
	}
	return pb, "", nil
}

// root is the RFC 6962 root of the first n leaves read.
func (c *logCheck) root(n uint64) tlog.Hash {
	if n == 0 {
		return tlog.Hash{}
	}
	rf := &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	rng := rf.NewEmptyRange(0)
	for _, h := range c.hashes[:n] {
		_ = rng.Append(h[:], nil) // appending a leaf to a range starting at 0 cannot fail
	}
	root, _ := rng.GetRootHash(nil)
	return tlog.Hash(root)
}

// checkPublished checks the checkpoint note and, when the leaves are complete, every
// tile and entry bundle of the tree it names.
func (c *logCheck) checkPublished(ctx context.Context, cp catalog.Checkpoint, complete bool) error {
	key := c.prefix.Key(tiles.CheckpointPath)
	opened, ok, err := c.readNote(ctx, cp)
	if err != nil || !ok {
		return err
	}
	if opened.Size < cp.PublishedSize || opened.Size > cp.Size {
		// A running deployment may have published since the row was read: read the
		// row again, and judge by it.
		if cp, err = c.o.Catalog.Checkpoint(ctx, c.log); err != nil {
			return fmt.Errorf("fsck: %w", err)
		}
		if opened.Size < cp.PublishedSize {
			c.problem(CheckpointBad, key, "the note names size %d; the catalog says %d are published", opened.Size, cp.PublishedSize)
			return nil
		}
		if opened.Size > cp.Size {
			c.problem(CheckpointBad, key, "the note names size %d beyond the %d committed", opened.Size, cp.Size)
			return nil
		}
		return nil // the log moved on during the check; its tiles are checked next time
	}
	if !complete {
		return nil // the leaves to compare with are not all known
	}
	c.r.Published += opened.Size
	if root := c.root(opened.Size); root != opened.Root {
		c.problem(CheckpointBad, key, "the note's root for size %d is %x, the committed leaves give %x", opened.Size, opened.Root, root)
		return nil
	}
	return c.checkTiles(ctx, opened.Size)
}

// readNote reads and opens the checkpoint note; ok is false when there is none (a
// problem if the catalog says something was published).
func (c *logCheck) readNote(ctx context.Context, cp catalog.Checkpoint) (sttlog.Checkpoint, bool, error) {
	key := c.prefix.Key(tiles.CheckpointPath)
	note, err := tiles.ReadCheckpoint(ctx, c.o.Store, c.prefix)
	switch {
	case errors.Is(err, tiles.ErrNotFound):
		if cp.PublishedSize > 0 {
			c.problem(CheckpointMissing, key, "the catalog says %d leaves are published", cp.PublishedSize)
		}
		return sttlog.Checkpoint{}, false, nil
	case err != nil:
		return sttlog.Checkpoint{}, false, fmt.Errorf("fsck: %w", err)
	}
	origin := sttlog.CheckpointOrigin(c.o.Origin, c.log.ProjectID, string(c.log.Stream))
	for _, k := range c.o.Keys {
		if got, err := sttlog.OpenCheckpoint(k, origin, note); err == nil {
			return got, true, nil
		}
	}
	c.problem(CheckpointBad, key, "the note does not verify under any service key for origin %s", origin)
	return sttlog.Checkpoint{}, false, nil
}

// checkTiles compares every hash tile and entry bundle of the tree of size n with the
// bytes its leaves determine.
func (c *logCheck) checkTiles(ctx context.Context, n uint64) error {
	for _, t := range hashTiles(c.hashes[:n]) {
		if err := c.compare(ctx, t.tile, t.data, TileMissing, TileMismatch); err != nil {
			return err
		}
	}
	for start := uint64(0); start < n; start += tiles.TileWidth {
		end := min(start+tiles.TileWidth, n)
		t := tlog.Tile{H: tiles.TileHeight, L: tiles.EntriesLevel, N: int64(start / tiles.TileWidth), W: int(end - start)}
		bundle, err := tiles.MarshalEntryBundle(c.leaves[start:end])
		if err != nil {
			return fmt.Errorf("fsck: %w", err)
		}
		if err := c.compare(ctx, t, bundle, BundleMissing, BundleMismatch); err != nil {
			return err
		}
	}
	return nil
}

// tileBytes is a hash tile and the bytes it must hold.
type tileBytes struct {
	tile tlog.Tile
	data []byte
}

// hashTiles returns every hash tile (full and, at each level's right edge, partial) of
// the tree whose leaf hashes are leaves, with its bytes.
func hashTiles(leaves []tlog.Hash) []tileBytes {
	var out []tileBytes
	level := leaves // hashes of complete subtrees of 256^l leaves, at level l
	for l := 0; len(level) > 0; l++ {
		for start := 0; start < len(level); start += tiles.TileWidth {
			end := min(start+tiles.TileWidth, len(level))
			data := make([]byte, 0, (end-start)*tlog.HashSize)
			for _, h := range level[start:end] {
				data = append(data, h[:]...)
			}
			out = append(out, tileBytes{tlog.Tile{H: tiles.TileHeight, L: l, N: int64(start / tiles.TileWidth), W: end - start}, data})
		}
		level = parents(level)
	}
	return out
}

// parents returns the roots of the complete groups of TileWidth hashes of level.
func parents(level []tlog.Hash) []tlog.Hash {
	var out []tlog.Hash
	for start := 0; start+tiles.TileWidth <= len(level); start += tiles.TileWidth {
		row := slices.Clone(level[start : start+tiles.TileWidth])
		for len(row) > 1 {
			for i := range len(row) / 2 {
				row[i] = sttlog.NodeHash(row[2*i], row[2*i+1])
			}
			row = row[:len(row)/2]
		}
		out = append(out, row[0])
	}
	return out
}

func (c *logCheck) compare(ctx context.Context, t tlog.Tile, want []byte, missing, mismatch string) error {
	key := c.prefix.Key(tiles.TilePath(t))
	got, err := c.o.Store.Get(ctx, key)
	switch {
	case errors.Is(err, tiles.ErrNotFound):
		c.problem(missing, key, "")
	case err != nil:
		return fmt.Errorf("fsck: %w", err)
	case string(got) != string(want):
		c.problem(mismatch, key, "%d bytes stored differ from the %d the leaves determine", len(got), len(want))
	}
	c.r.Objects++
	return nil
}

// orphans lists the log's payload objects and reports (and with Sweep deletes) those
// of sequences up to size that no batch row names. A payload object starting beyond
// size may belong to a batch being sealed right now: it is left alone.
func (c *logCheck) orphans(ctx context.Context, size uint64) error {
	payloadPrefix := c.prefix.Key("payload/")
	var found []string
	err := c.o.Store.List(ctx, payloadPrefix, func(key string) error {
		path := strings.TrimPrefix(key, string(c.prefix))
		if c.named[path] {
			return nil
		}
		first, _, ok := strings.Cut(strings.TrimPrefix(path, "payload/"), "-")
		n, err := strconv.ParseUint(first, 10, 64)
		if ok && err == nil && n > size {
			return nil // possibly in flight
		}
		found = append(found, key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("fsck: list %s: %w", payloadPrefix, err)
	}
	slices.Sort(found)
	for _, key := range found {
		c.problem(Orphan, key, "no committed batch names it")
		if !c.o.Sweep {
			continue
		}
		if err := c.o.Store.Delete(ctx, key); err != nil {
			return fmt.Errorf("fsck: sweep %s: %w", key, err)
		}
		c.r.Swept = append(c.r.Swept, key)
	}
	return nil
}
