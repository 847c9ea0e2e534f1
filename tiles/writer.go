package tiles

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"

	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sync/errgroup"
)

// writeParallelism bounds the object writes one Materialize call has in flight.
const writeParallelism = 16

// A Writer materializes the committed batches of one log into entry bundles and hash
// tiles. It remembers the right edge of the tree it last wrote, so that in the steady
// state a batch costs no reads; after a restart, or when another replica wrote the
// previous batch, it reads that edge (a partial tile per level and the partial entry
// bundle) from the store.
//
// A Writer is not safe for concurrent use: the sequencer of the log owns it. Writers
// in several processes may materialize the same batch at the same time; they write
// identical bytes, which Store.Create accepts.
type Writer struct {
	store  Store
	prefix Prefix
	log    *slog.Logger

	// edge is the right edge of the tree of size edgeSize, as last written and
	// authenticated by a root; nil when unknown. See loadEdge.
	edge     *rightEdge
	edgeSize uint64
}

// rightEdge holds the partial objects on the right edge of a tree: the data of the
// partial hash tile at each level (nil where the level ends on a tile boundary) and
// the entries of the partial entry bundle (nil if there is none).
type rightEdge struct {
	tiles   [][]byte // by level
	entries [][]byte
}

// NewWriter returns a Writer for the log under prefix p in s. log may be nil.
func NewWriter(s Store, p Prefix, log *slog.Logger) *Writer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{store: s, prefix: p, log: log}
}

// Materialize writes the entry bundles and hash tiles of the tree of size
// oldSize+len(leafData), whose leaves from index oldSize on are leafData, given that
// the tiles of the tree of size oldSize are already in the store. root is the root of
// the new tree as committed by the caller.
//
// It is deterministic: the objects it writes depend only on the tree, so running it
// again after a crash, or from another replica, writes the very same bytes, and
// every object is written with Store.Create.
//
// Before writing anything it checks that the old tiles it read plus leafData yield
// root, and that the old partial entry bundle matches the old tiles; otherwise it
// returns an error wrapping ErrMismatch and writes nothing. If a tile or bundle of the
// tree of size oldSize is missing (the previous batch was never materialized), it
// returns an error wrapping ErrNotFound and writes nothing: materialize that batch
// first. With no leafData it writes nothing and only checks that the stored tiles of
// the tree of size oldSize have root root.
//
// On a store error some objects may have been written; they are correct, and calling
// Materialize again with the same arguments completes the work.
func (w *Writer) Materialize(ctx context.Context, oldSize uint64, leafData [][]byte, root tlog.Hash) error {
	return w.materialize(ctx, oldSize, leafData, root, nil)
}

// Publish is Materialize, then, once every object it wrote is durable, the checkpoint
// note written to CheckpointPath (replacing the one there). On a store that is a
// BatchPublisher both go in one CreateAllThenPut and share its syncs. On an error the
// checkpoint may be unchanged while some objects exist, as after a failed
// Materialize; calling Publish again completes the work.
func (w *Writer) Publish(ctx context.Context, oldSize uint64, leafData [][]byte, root tlog.Hash, note []byte) error {
	if len(note) == 0 {
		return fmt.Errorf("tiles: publish %s: empty checkpoint note", w.prefix)
	}
	return w.materialize(ctx, oldSize, leafData, root, note)
}

// materialize is Materialize, then the checkpoint note unless note is nil.
func (w *Writer) materialize(ctx context.Context, oldSize uint64, leafData [][]byte, root tlog.Hash, note []byte) error {
	pl, err := w.prepare(ctx, oldSize, leafData, root)
	if err != nil {
		return err
	}
	if err := w.write(ctx, pl.objs, note); err != nil {
		return err
	}
	w.done(ctx, pl)
	return nil
}

// A plan is what one materialization writes: the objects, and the right edge of the
// tree once they are written.
type plan struct {
	oldSize, newSize uint64
	objs             []object
	edge             *rightEdge
}

// done records that pl's objects are written: its edge becomes the Writer's.
func (w *Writer) done(ctx context.Context, pl *plan) {
	w.edge, w.edgeSize = pl.edge, pl.newSize
	w.log.DebugContext(ctx, "materialized", slog.String("log", string(w.prefix)),
		slog.Uint64("old_size", pl.oldSize), slog.Uint64("new_size", pl.newSize), slog.Int("objects", len(pl.objs)))
}

// prepare computes the objects that materialize the tree of size
// oldSize+len(leafData), and checks them and the old edge against root, writing
// nothing (Materialize's checks).
func (w *Writer) prepare(ctx context.Context, oldSize uint64, leafData [][]byte, root tlog.Hash) (*plan, error) {
	n := uint64(len(leafData))
	newSize := oldSize + n
	if newSize < oldSize || newSize > 1<<62 {
		return nil, fmt.Errorf("tiles: materialize: tree size %d + %d overflows", oldSize, n)
	}
	for i, d := range leafData {
		if len(d) > MaxLeafSize {
			return nil, fmt.Errorf("tiles: materialize: leaf %d is %d bytes, more than %d", oldSize+uint64(i), len(d), MaxLeafSize)
		}
	}
	old, err := w.loadEdge(ctx, oldSize)
	if err != nil {
		return nil, err
	}

	// Compute every object to write, level by level: the new hashes of a level are
	// appended to the old partial tile's, cut into tiles, and each completed tile's
	// hash becomes a new hash of the level above.
	var objs []object
	edge := &rightEdge{}
	hashes := make([]byte, 0, n*tlog.HashSize)
	for _, d := range leafData {
		h := tlog.RecordHash(d)
		hashes = append(hashes, h[:]...)
	}
	for level := 0; newSize>>(uint(level)*TileHeight) > 0; level++ {
		oldCount := oldSize >> (uint(level) * TileHeight)
		var prev []byte
		if level < len(old.tiles) {
			prev = old.tiles[level]
		}
		if len(hashes) == 0 {
			// Nothing new at this level or above; the old partial tile stays the edge.
			edge.tiles = append(edge.tiles, prev)
			continue
		}
		all := append(append(make([]byte, 0, len(prev)+len(hashes)), prev...), hashes...)
		first := int64(oldCount / TileWidth)
		var next, last []byte
		for i := 0; i < len(all); i += TileWidth * tlog.HashSize {
			data := all[i:min(i+TileWidth*tlog.HashSize, len(all))]
			t := tlog.Tile{H: TileHeight, L: level, N: first + int64(i/(TileWidth*tlog.HashSize)), W: len(data) / tlog.HashSize}
			objs = append(objs, object{path: TilePath(t), data: data})
			if t.W == TileWidth {
				th := subtreeHash(data)
				next = append(next, th[:]...)
			} else {
				last = data
			}
		}
		edge.tiles = append(edge.tiles, last)
		hashes = next
	}

	// Entry bundles: the old partial bundle's entries, then the new leaves.
	if n > 0 {
		all := append(append(make([][]byte, 0, len(old.entries)+len(leafData)), old.entries...), leafData...)
		first := oldSize / TileWidth
		for i := 0; i < len(all); i += TileWidth {
			es := all[i:min(i+TileWidth, len(all))]
			data, err := MarshalEntryBundle(es)
			if err != nil {
				return nil, fmt.Errorf("tiles: materialize: %w", err)
			}
			t := tlog.Tile{H: TileHeight, L: EntriesLevel, N: int64(first) + int64(i/TileWidth), W: len(es)}
			objs = append(objs, object{path: TilePath(t), data: data})
			if len(es) < TileWidth {
				// Copies of the new leaves: the caller may reuse leafData's buffers.
				edge.entries = make([][]byte, len(es))
				for j, e := range es {
					if i+j < len(old.entries) {
						edge.entries[j] = e
					} else {
						edge.entries[j] = bytes.Clone(e)
					}
				}
			} else {
				edge.entries = nil
			}
		}
	} else {
		edge.entries = old.entries
	}

	// Authenticate the old edge and the new objects against root before writing.
	got, err := edgeRoot(newSize, edge)
	if err != nil {
		return nil, fmt.Errorf("tiles: materialize %s at size %d: %w", w.prefix, newSize, err)
	}
	if got != root {
		w.edge = nil
		return nil, fmt.Errorf("tiles: materialize %s: tiles give root %v for size %d, committed root is %v: %w", w.prefix, got, newSize, root, ErrMismatch)
	}
	if err := checkEntries(oldSize, old); err != nil {
		w.edge = nil
		return nil, fmt.Errorf("tiles: materialize %s: partial entry bundle at size %d: %w", w.prefix, oldSize, err)
	}

	return &plan{oldSize: oldSize, newSize: newSize, objs: objs, edge: edge}, nil
}

type object struct {
	path string
	data []byte
}

// write creates objs in the store, then, unless note is nil, puts note at
// CheckpointPath: all in one CreateAllThenPut if the store is a BatchPublisher, else
// objs all at once if it is a BatchCreator, or with up to writeParallelism Creates in
// flight, and the note after them.
func (w *Writer) write(ctx context.Context, objs []object, note []byte) error {
	all := make([]Object, len(objs))
	for i, o := range objs {
		all[i] = Object{Key: w.prefix.Key(o.path), Data: o.data}
	}
	if bp, ok := w.store.(BatchPublisher); ok && note != nil {
		cp := Object{Key: w.prefix.Key(CheckpointPath), Data: note}
		if err := bp.CreateAllThenPut(ctx, all, ImmutableAttrs, cp, CheckpointAttrs); err != nil {
			return fmt.Errorf("tiles: publish %s: write %d objects and the checkpoint: %w", w.prefix, len(objs), err)
		}
		return nil
	}
	if bc, ok := w.store.(BatchCreator); ok {
		if err := bc.CreateAll(ctx, all, ImmutableAttrs); err != nil {
			return fmt.Errorf("tiles: materialize %s: write %d objects: %w", w.prefix, len(objs), err)
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(writeParallelism)
		for _, o := range all {
			g.Go(func() error {
				if err := w.store.Create(gctx, o.Key, o.Data, ImmutableAttrs); err != nil {
					return fmt.Errorf("tiles: materialize %s: write %s: %w", w.prefix, o.Key, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	if note == nil {
		return nil
	}
	if err := w.store.Put(ctx, w.prefix.Key(CheckpointPath), note, CheckpointAttrs); err != nil {
		return fmt.Errorf("tiles: publish %s: write checkpoint: %w", w.prefix, err)
	}
	return nil
}

// loadEdge returns the right edge of the tree of size size: the Writer's own if it
// has it, else the partial tiles and partial entry bundle read from the store.
// Nothing read is trusted until Materialize checks it against a root.
func (w *Writer) loadEdge(ctx context.Context, size uint64) (*rightEdge, error) {
	if w.edge != nil && w.edgeSize == size {
		return w.edge, nil
	}
	w.edge = nil
	e := &rightEdge{}
	var ts []tlog.Tile
	for level := 0; size>>(uint(level)*TileHeight) > 0; level++ {
		t, ok := edgeTile(level, size)
		e.tiles = append(e.tiles, nil)
		if ok {
			ts = append(ts, t)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, t := range ts {
		g.Go(func() error {
			data, err := w.store.Get(gctx, w.prefix.Key(TilePath(t)))
			if err != nil {
				return fmt.Errorf("tiles: materialize %s: read edge of size %d: %w", w.prefix, size, err)
			}
			if len(data) != t.W*tlog.HashSize {
				return fmt.Errorf("tiles: materialize %s: %s has %d bytes: %w", w.prefix, TilePath(t), len(data), ErrMismatch)
			}
			e.tiles[t.L] = data
			return nil
		})
	}
	if width := int(size % TileWidth); width > 0 {
		t := tlog.Tile{H: TileHeight, L: EntriesLevel, N: int64(size / TileWidth), W: width}
		g.Go(func() error {
			data, err := w.store.Get(gctx, w.prefix.Key(TilePath(t)))
			if err != nil {
				return fmt.Errorf("tiles: materialize %s: read edge of size %d: %w", w.prefix, size, err)
			}
			es, err := ParseEntryBundle(data, width)
			if err != nil {
				return fmt.Errorf("tiles: materialize %s: %s: %w: %w", w.prefix, TilePath(t), ErrMismatch, err)
			}
			e.entries = es
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return e, nil
}

// edgeRoot returns the root of the tree of size n computed from the partial tiles on
// its right edge (which depend on every hash of the tree's right edge, so a root match
// authenticates them).
func edgeRoot(n uint64, e *rightEdge) (tlog.Hash, error) {
	if n == 0 {
		return sttlog.EmptyRoot, nil
	}
	hr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			t := tlog.TileForIndex(TileHeight, x)
			if t.L >= len(e.tiles) || e.tiles[t.L] == nil || uint64(t.N) != n>>(uint(t.L)*TileHeight)/TileWidth {
				return nil, fmt.Errorf("hash %d not on the right edge of size %d", x, n)
			}
			t.W = len(e.tiles[t.L]) / tlog.HashSize
			h, err := tlog.HashFromTile(t, e.tiles[t.L], x)
			if err != nil {
				return nil, err
			}
			out[i] = h
		}
		return out, nil
	})
	return tlog.TreeHash(int64(n), hr)
}

// checkEntries checks that the entries of the partial bundle on e, the edge of the
// tree of size n, hash to the leaf hashes of e's partial level-0 tile.
func checkEntries(n uint64, e *rightEdge) error {
	width := int(n % TileWidth)
	if width == 0 {
		return nil
	}
	if len(e.entries) != width || len(e.tiles) == 0 || len(e.tiles[0]) != width*tlog.HashSize {
		return fmt.Errorf("%d entries for %d leaf hashes: %w", len(e.entries), width, ErrMismatch)
	}
	for i, d := range e.entries {
		h := tlog.RecordHash(d)
		if !bytes.Equal(h[:], e.tiles[0][i*tlog.HashSize:(i+1)*tlog.HashSize]) {
			return fmt.Errorf("entry %d does not hash to its leaf hash: %w", n/TileWidth*TileWidth+uint64(i), ErrMismatch)
		}
	}
	return nil
}

// subtreeHash returns the hash of the perfect subtree whose leaves (at any level) are
// the concatenated hashes in data, a power of two of them.
func subtreeHash(data []byte) tlog.Hash {
	if len(data) == tlog.HashSize {
		return tlog.Hash(data)
	}
	half := len(data) / 2
	return tlog.NodeHash(subtreeHash(data[:half]), subtreeHash(data[half:]))
}
