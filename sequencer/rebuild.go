package sequencer

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"runtime"

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
	// Shredded counts the checked leaves whose payload retention destroyed: their leaf
	// is checked, their commitment cannot be re-derived.
	Shredded uint64
	// Size and Root are those of the rebuilt tree.
	Size uint64
	Root tlog.Hash
	// Break is the first break, or nil when the rebuild reproduces the live tree.
	Break *tlog.ChainBreak
}

// rebuildPage is how many index rows a rebuild reads at once.
const rebuildPage = 5000

// rebuildChunkRows is how many rows travel through the rebuild pipeline together.
const rebuildChunkRows = 256

// Rebuild rebuilds log's whole tree from storage, reading everything afresh (no
// caches): the catalog's index rows, the payload bundles, the entry bundles and the
// tiles. It decrypts every payload, re-derives every commitment, checks sequence
// contiguity, every customer signature (signingKeys returns the registered public keys
// of a signingKeyId; nil skips the check; it must be safe for concurrent use), every
// leaf, and that the rebuilt tree is the live tree, and reports the first break. An
// error means the rebuild could not run (the store or catalog failed), not that the log
// is broken.
//
// It uses every core with flat memory: one goroutine reads the rows and objects in
// sequence order into chunks; workers (one per core) decrypt, decode and check them
// (tlog.Rebuilder.Precheck); the caller's goroutine takes the chunks in order and does
// what depends on it (the tree, the tile comparison, the first break). At most
// 2*GOMAXPROCS+2 chunks exist at once.
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
		res.Shredded = rb.Stats.Shredded
		return res, nil
	}
	asBreak := func(err error) (*tlog.ChainBreak, bool) {
		var cb *tlog.ChainBreak
		ok := errors.As(err, &cb)
		return cb, ok
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the reader and the workers when the rebuild ends early
	held, err := s.heldSet(ctx, log, 1, max(live.Size, 1))
	if err != nil {
		return res, err
	}
	r := &rebuildReader{s: s, log: log, prefix: prefixOf(log), live: live, held: held}
	tc := &tileChecker{live: live, tiles: tiles.NewReader(s.cfg.Store, prefixOf(log), live, nil)}
	for c := range r.chunks(ctx, rb) {
		select {
		case <-c.done:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		for i := range c.items {
			it := &c.items[i]
			if it.brk != nil {
				return finish(it.brk)
			}
			if err := rb.AddChecked(&it.rec, &it.check); err != nil {
				if cb, ok := asBreak(err); ok {
					return finish(cb)
				}
				return res, err
			}
			tc.leafHashes = append(tc.leafHashes, it.entryHash)
			if len(tc.leafHashes) == tileCheckChunk || rb.Size() == live.Size {
				if brk, err := tc.check(ctx, rb.Size()-uint64(len(tc.leafHashes))); err != nil || brk != nil {
					if err != nil {
						return res, err
					}
					return finish(brk)
				}
			}
		}
		if c.brk != nil {
			return finish(c.brk)
		}
		if c.err != nil {
			return res, c.err
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
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

// indexPage is one page of index rows, or the error that ended the reading.
type indexPage struct {
	rows []catalog.EventLeaf
	err  error
}

// indexPages reads log's index rows of sequences 1 to size on their own goroutine,
// a page ahead of the caller, and closes the channel after the last page (one
// ending with size, or short), an error, or when ctx is cancelled.
func (s *Sequencer) indexPages(ctx context.Context, log catalog.LogID, size uint64) <-chan indexPage {
	pages := make(chan indexPage, 1)
	go func() {
		defer close(pages)
		for after := uint64(0); after < size; {
			rows, err := s.cfg.Catalog.EventLeaves(ctx, log, after, rebuildPage)
			if err != nil {
				err = fmt.Errorf("sequencer: index rows after %d: %w", after, err)
			}
			select {
			case pages <- indexPage{rows, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(rows) < rebuildPage {
				return
			}
			after = rows[len(rows)-1].Sequence
		}
	}()
	return pages
}

// rebuildItem is one index row with its stored objects, and once its chunk is done the
// record rebuilt from them and its checks, or the break that prevents it.
type rebuildItem struct {
	row        catalog.EventLeaf
	ciphertext []byte // from the payload bundle
	sealedLeaf []byte // the leaf the payload bundle recorded
	entry      []byte // the leaf in the entry bundle

	rec       tlog.Record
	check     tlog.Check
	entryHash tlog.Hash
	brk       *tlog.ChainBreak
}

// rebuildChunk is a run of consecutive rows. brk or err, when set, ends the rebuild
// after the chunk's items (a break found while reading, or a failed read).
type rebuildChunk struct {
	items []rebuildItem
	brk   *tlog.ChainBreak
	err   error
	done  chan struct{} // closed once every item is opened and checked
}

// rebuildReader reads one stream's index rows and stored objects in sequence order for
// a rebuild, keeping the current payload and entry bundles.
type rebuildReader struct {
	s      *Sequencer
	log    catalog.LogID
	prefix tiles.Prefix
	live   tiles.Tree
	held   map[uint64]bool // sequences with a held copy (held.go)

	batch    catalog.Batch
	payload  *tiles.PayloadBundle
	entriesN int64 // index of the entry bundle in entries
	entries  [][]byte
}

// chunks reads the rows of the live tree into chunks on one goroutine and opens and
// checks them on one worker per core. It returns the chunks in sequence order; each
// is ready once its done is closed. Cancelling ctx stops every goroutine.
func (r *rebuildReader) chunks(ctx context.Context, rb *tlog.Rebuilder) <-chan *rebuildChunk {
	workers := max(1, runtime.GOMAXPROCS(0))
	ordered := make(chan *rebuildChunk, 2*workers)
	work := make(chan *rebuildChunk, workers)
	for range workers {
		go func() {
			for c := range work {
				for i := range c.items {
					r.open(ctx, rb, &c.items[i])
				}
				close(c.done)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(ordered)
		send := func(c *rebuildChunk) bool {
			select {
			case ordered <- c:
			case <-ctx.Done():
				return false
			}
			select {
			case work <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		c := &rebuildChunk{done: make(chan struct{})}
		next := uint64(1)
	read:
		for page := range r.s.indexPages(ctx, r.log, r.live.Size) {
			if page.err != nil {
				c.err = page.err
				break
			}
			for _, row := range page.rows {
				if row.Sequence > r.live.Size {
					break
				}
				if row.Sequence != next {
					c.brk = &tlog.ChainBreak{Sequence: next, Reason: tlog.BreakSequenceGap,
						Detail: fmt.Sprintf("index row %d is missing (next row is %d)", next, row.Sequence)}
					break read
				}
				it, brk, err := r.item(ctx, row)
				if err != nil || brk != nil {
					c.brk, c.err = brk, err
					break read
				}
				c.items = append(c.items, it)
				next++
				if len(c.items) == rebuildChunkRows {
					if !send(c) {
						return
					}
					c = &rebuildChunk{done: make(chan struct{})}
				}
			}
		}
		send(c)
	}()
	return ordered
}

// item gathers the stored objects of an index row, or the break that prevents it.
func (r *rebuildReader) item(ctx context.Context, row catalog.EventLeaf) (rebuildItem, *tlog.ChainBreak, error) {
	seq := row.Sequence
	brk := func(reason, format string, args ...any) (rebuildItem, *tlog.ChainBreak, error) {
		return rebuildItem{}, &tlog.ChainBreak{Sequence: seq, Reason: reason, Detail: fmt.Sprintf(format, args...)}, nil
	}
	if r.payload == nil || seq >= r.batch.End() {
		bs, err := r.s.cfg.Catalog.BatchesCovering(ctx, r.log, seq, seq)
		if err != nil {
			return rebuildItem{}, nil, fmt.Errorf("sequencer: batch of %d: %w", seq, err)
		}
		if len(bs) != 1 {
			return brk(tlog.BreakSequenceGap, "no committed batch holds sequence %d", seq)
		}
		ref, err := batchRef(r.log, bs[0])
		if err != nil {
			return brk(tlog.BreakContentTampered, "batch row of sequence %d: %v", seq, err)
		}
		pb, err := tiles.ReadPayloadRef(ctx, r.s.cfg.Store, ref, bs[0].First, bs[0].Count)
		switch {
		case errors.Is(err, tiles.ErrNotFound):
			return brk(tlog.BreakContentTampered, "payload bundle %s is missing", ref)
		case errors.Is(err, tiles.ErrPayloadCorrupt):
			return brk(tlog.BreakContentTampered, "payload bundle %s does not decode to the batch's %d records", ref, bs[0].Count)
		case err != nil:
			return rebuildItem{}, nil, fmt.Errorf("sequencer: %w", err)
		}
		r.batch, r.payload = bs[0], &pb
	}
	pr := r.payload.Records[seq-r.batch.First]
	entry, brkE, err := r.entry(ctx, seq)
	if err != nil || brkE != nil {
		return rebuildItem{}, brkE, err
	}
	return rebuildItem{row: row, ciphertext: pr.Ciphertext, sealedLeaf: pr.LeafData, entry: entry}, nil, nil
}

// open decodes, decrypts and checks an item (on a worker).
func (r *rebuildReader) open(ctx context.Context, rb *tlog.Rebuilder, it *rebuildItem) {
	seq := it.row.Sequence
	brk := func(reason, detail string) {
		it.brk = &tlog.ChainBreak{Sequence: seq, Reason: reason, Detail: detail}
	}
	leaf, err := tlog.DecodeLeaf(it.entry)
	if err != nil {
		brk(tlog.BreakLeafMismatch, fmt.Sprintf("entry bundle leaf does not decode: %v", err))
		return
	}
	if !bytes.Equal(it.entry, it.sealedLeaf) {
		brk(tlog.BreakLeafMismatch, "entry bundle leaf differs from the sealed batch's leaf")
		return
	}
	it.rec = tlog.Record{Leaf: leaf, LeafHash: it.row.LeafHash}
	plain, err := r.s.cfg.Keyring.Open(ctx, r.log, it.ciphertext, payloadAAD(r.log, seq, leaf.ID))
	switch {
	case errors.Is(err, ErrShredded):
		if r.held[seq] {
			if err := r.s.openHeldCopy(ctx, r.log, seq, leaf.ID, &it.rec.Nonce, &it.rec.Payload); err != nil {
				brk(tlog.BreakContentTampered, "held payload copy does not decrypt")
				return
			}
		}
	case err != nil || len(plain) < tlog.NonceSize:
		brk(tlog.BreakContentTampered, "payload ciphertext does not decrypt")
		return
	default:
		var n tlog.Nonce
		copy(n[:], plain)
		it.rec.Nonce, it.rec.Payload = &n, plain[tlog.NonceSize:]
	}
	it.check = rb.Precheck(&it.rec)
	it.entryHash = tlog.LeafHash(it.entry)
	it.ciphertext, it.sealedLeaf, it.entry = nil, nil, nil
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

// tileChecker compares rebuilt leaf hashes with the hash tiles, a chunk at a time.
type tileChecker struct {
	live       tiles.Tree
	tiles      *tiles.Reader // authenticating, no cache
	leafHashes []tlog.Hash   // rebuilt leaf hashes not yet compared with the tiles
}

// tileCheckChunk is how many rebuilt leaf hashes are compared with the tiles at once.
const tileCheckChunk = 1 << 16

// check compares the leaf hashes in the hash tiles, read through the authenticating
// reader, with the rebuilt ones starting at leaf index start.
func (r *tileChecker) check(ctx context.Context, start uint64) (*tlog.ChainBreak, error) {
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
