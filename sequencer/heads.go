package sequencer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

// Serving signed heads and proofs from memory (docs/performance.md, "proofs3").
//
// Every proof, /root and tile read needs a committed tree of its stream (size, root,
// published size), and every proof a tiles.Reader over it. headCache keeps, per
// project-stream, the latest committed tree this process knows and the Reader built
// over it, so that a proof costs no catalog read and the right edge of the tree (the
// committed leaves not materialized yet, authenticated once against the committed
// root) is shared by every proof against that head.
//
// What a cached head may answer:
//
//   - A request that names its tree size (treeSize, a consistency proof's newSize, a
//     leaf that must be in the tree) needs any committed tree at least that large: the
//     tree is append-only and the catalog is the tree, so a proof over a larger
//     committed tree is the same proof. Any cached head that large answers it, on
//     every catalog; a smaller one is refreshed from the catalog.
//   - The live tree (the default treeSize, /root) is the latest commit. When this
//     process is the only writer of its catalog (catalog/sqlite: one process per
//     file, soleWriter) every commit goes through this process, which updates the
//     cache before it acknowledges the batch, so the cached head is the live one.
//     With a shared catalog (PostgreSQL, several replicas) another replica may have
//     committed since, so the live tree is read from the catalog, as before.
//
// A commit whose outcome this process does not know (an error after which the batch
// turned out committed) forgets the stream's head; so does a publication beyond it.
// A catalog read racing with a forget is not cached (epoch).

// maxCachedEdge bounds the unmaterialized leaves of a Reader kept with its head, and
// edgeBudget those of all the kept Readers together (32 MiB of leaf hashes, plus their
// memoized subtrees): a longer edge, or one beyond the budget (publication lagging far
// behind), is read for each request, as before.
const (
	maxCachedEdge = 1 << 12
	edgeBudget    = 1 << 20
	headCacheSize = 1 << 13
)

// soleWriter is implemented by a catalog that only one process, and in it one
// Sequencer, writes (catalog/sqlite); it lets the cached head stand for the live tree.
type soleWriter interface{ SoleWriter() bool }

// head is a committed tree of one stream and, once built, the proof Reader over it.
// Its fields never change; a newer tree is a new head.
type head struct {
	size, published uint64
	tree            tiles.Tree
	rd              atomic.Pointer[tiles.Reader]
	edgeCost        int // edge leaves of rd charged to the budget (headCache.mu)
}

type headCache struct {
	sole bool

	mu     sync.Mutex // serializes updates; reads go to the LRU, which locks itself
	epoch  uint64     // incremented by forget
	budget int        // edge leaves the kept Readers may still hold
	c      *lru.Cache[catalog.LogID, *head]
}

func newHeadCache(cat Catalog) *headCache {
	sw, ok := cat.(soleWriter)
	hc := &headCache{sole: ok && sw.SoleWriter(), budget: edgeBudget}
	// Evictions happen in Add and Remove, which run under hc.mu.
	hc.c, _ = lru.NewWithEvict(headCacheSize, func(_ catalog.LogID, h *head) { hc.release(h) }) // only fails for a size <= 0
	return hc
}

// release gives the budget h's Reader held back; under c.mu.
func (c *headCache) release(h *head) {
	c.budget += h.edgeCost
	h.edgeCost = 0
}

// keep makes rd, over edge unmaterialized leaves, the Reader of h if h is still the
// stream's head and the budget allows, and returns the Reader to use.
func (c *headCache) keep(log catalog.LogID, h *head, rd *tiles.Reader, edge int) *tiles.Reader {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := h.rd.Load(); cur != nil {
		return cur
	}
	if now, ok := c.c.Peek(log); !ok || now != h || edge > maxCachedEdge || edge > c.budget {
		return rd
	}
	c.budget -= edge
	h.edgeCost = edge
	h.rd.Store(rd)
	return rd
}

func headOf(cp catalog.Checkpoint) *head {
	return &head{size: cp.Size, published: min(cp.PublishedSize, cp.Size), tree: treeOf(cp)}
}

// note records the committed checkpoint cp, unless the cache knows a newer tree
// already (sizes and published sizes only grow), and returns the head to use for it.
func (c *headCache) note(cp catalog.Checkpoint) *head {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noteLocked(cp)
}

func (c *headCache) noteLocked(cp catalog.Checkpoint) *head {
	h := headOf(cp)
	old, ok := c.c.Peek(cp.Log)
	if ok {
		if old.size >= h.size && old.published >= h.published {
			return old
		}
		if old.size > h.size {
			h.size, h.tree = old.size, old.tree
		}
		h.published = max(h.published, old.published)
		c.release(old) // Add replaces it without an eviction
	}
	c.c.Add(cp.Log, h)
	return h
}

// noteRead records cp, read from the catalog when the epoch was epoch, unless a
// forget happened since (cp may predate what was forgotten).
func (c *headCache) noteRead(cp catalog.Checkpoint, epoch uint64) *head {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return headOf(cp)
	}
	return c.noteLocked(cp)
}

// published records that log is materialized up to size.
func (c *headCache) published(log catalog.LogID, size uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.c.Peek(log)
	switch {
	case !ok || old.published >= size:
	case size > old.size: // a commit this cache missed: read the catalog next time
		c.epoch++
		c.c.Remove(log)
	default:
		c.release(old)
		c.c.Add(log, &head{size: old.size, published: size, tree: old.tree})
	}
}

// forget drops log's head: the catalog may hold a newer one the cache cannot know.
func (c *headCache) forget(log catalog.LogID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.c.Remove(log)
}

func (c *headCache) currentEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// head returns a committed tree of log: the live one if live, else one of at least
// atLeast leaves if one exists (else the live one, smaller).
func (s *Sequencer) head(ctx context.Context, log catalog.LogID, atLeast uint64, live bool) (*head, error) {
	if h, ok := s.heads.c.Get(log); ok && (s.heads.sole || !live) && h.size >= atLeast {
		return h, nil
	}
	epoch := s.heads.currentEpoch()
	cp, err := s.checkpoint(ctx, log)
	if err != nil {
		return nil, err
	}
	return s.heads.noteRead(cp, epoch), nil
}

// committed records the head of a commit of this process before its events are
// acknowledged.
func (s *Sequencer) committed(log catalog.LogID, cp catalog.Checkpoint, events []catalog.Event) {
	if len(events) == 0 {
		return
	}
	if end := events[len(events)-1].Sequence; cp.Log != log || cp.Size < end {
		// The checkpoint returned does not show the batch (its commit was only
		// found afterwards): the cache cannot know the tree.
		s.heads.forget(log)
		return
	}
	s.heads.note(cp)
}

// published records a publication of log up to size (the publish loop).
func (s *Sequencer) published(log catalog.LogID, size uint64) {
	s.edges.trim(log, size)
	s.leaves.trim(log, size)
	s.heads.published(log, size)
}

// proofs returns a Reader over a committed tree of log and that tree (see head).
func (s *Sequencer) proofs(ctx context.Context, log catalog.LogID, atLeast uint64, live bool) (*tiles.Reader, tiles.Tree, error) {
	h, err := s.head(ctx, log, atLeast, live)
	if err != nil {
		return nil, tiles.Tree{}, err
	}
	if rd := h.rd.Load(); rd != nil {
		return rd, h.tree, nil
	}
	if h.size-h.published > maxEdge {
		// Publication far behind (the store was down): publish first, as proofs
		// always did, and prove over what that left.
		cp, err := s.publish(ctx, log, tiles.NewWriter(s.cfg.Store, prefixOf(log), s.cfg.Logger))
		if err != nil {
			return nil, tiles.Tree{}, fmt.Errorf("sequencer: publish: %w", err)
		}
		h = s.heads.note(cp)
		if rd := h.rd.Load(); rd != nil {
			return rd, h.tree, nil
		}
	}
	var rd *tiles.Reader
	edge := 0
	if h.published >= h.size {
		rd = tiles.NewReader(s.cfg.Store, prefixOf(log), h.tree, s.tiles)
	} else {
		leaves, err := s.edgeLeaves(ctx, log, h.published, h.size)
		if err != nil {
			return nil, tiles.Tree{}, err
		}
		if rd, err = tiles.NewEdgeReader(s.cfg.Store, prefixOf(log), h.tree, h.published, leaves, s.tiles); err != nil {
			return nil, tiles.Tree{}, fmt.Errorf("sequencer: %w", err)
		}
		edge = len(leaves)
	}
	return s.heads.keep(log, h, rd, edge), h.tree, nil
}
