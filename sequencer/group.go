package sequencer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

// committer is the process's group commit. The seal loops of the project-streams hand
// it their batches (at most one each at a time); each tick takes every batch handed
// in since the last and commits them together: one catalog transaction
// (Catalog.SealGroup, which locks each stream's checkpoint row) and one write of all
// their payload bundles (one CreateAll, which the filesystem store makes durable with
// one filesystem sync). So the hot path costs one commit and one sync per tick
// whatever the number of streams in it, and a tick's batches grow with load by
// themselves: while one tick commits, the next one's gather.
type committer struct {
	s *Sequencer

	mu    sync.Mutex
	queue []*sealReq
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// sealReq is one stream's batch in a tick, and its outcome.
type sealReq struct {
	ls *logSequencer
	p  *pool

	b      *built             // the batch built under the lock; nil if none
	cp     catalog.Checkpoint // after the commit (or as read, without a batch)
	locked bool               // false: another replica held the lock; nothing done
	err    error
	done   chan struct{}
}

// committed records a committed seal in p and ls (the seal loop's state).
func (r *sealReq) committed(ls *logSequencer, p *pool, cp catalog.Checkpoint) {
	p.size = cp.Size
	if b := r.b; b != nil {
		end := b.first + uint64(len(b.batch.Events)) - 1
		p.size = max(p.size, end)
		ls.lastSize = end // lastTS is this batch's time
		ls.s.edges.add(ls.log, b.first, b.batch.Events)
	}
}

func newCommitter(s *Sequencer) *committer {
	c := &committer{s: s, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// seal hands p to the next tick and waits for its outcome.
func (c *committer) seal(ls *logSequencer, p *pool) *sealReq {
	r := &sealReq{ls: ls, p: p, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-r.done
	return r
}

// stop ends the tick loop once the seal loops are gone (Close).
func (c *committer) stop() {
	c.once.Do(func() { close(c.quit) })
	<-c.done
}

func (c *committer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
		case <-c.quit:
			return
		}
		c.mu.Lock()
		reqs := c.queue
		c.queue = nil
		c.mu.Unlock()
		if len(reqs) == 0 {
			continue
		}
		// One request per stream per tick; a second one (a stream retired and
		// restarted meanwhile) goes to the next tick.
		seen := make(map[catalog.LogID]bool, len(reqs))
		var now, later []*sealReq
		for _, r := range reqs {
			if seen[r.ls.log] {
				later = append(later, r)
				continue
			}
			seen[r.ls.log] = true
			now = append(now, r)
		}
		if len(later) > 0 {
			c.mu.Lock()
			c.queue = append(later, c.queue...)
			c.mu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
		c.tick(now)
	}
}

// tick commits reqs as one group. If the group failed before its commit for a reason
// that may be one stream's (the catalog refused a batch, or the payload write failed,
// e.g. on one stream's prefix) and held more than one batch, each is tried again
// alone, so that such a stream fails only its own events. Other failures (the
// catalog unreachable, a commit whose outcome is unknown) are not retried here: a
// batch that did commit must not be sealed a second time.
func (c *committer) tick(reqs []*sealReq) {
	err := c.commit(reqs)
	if err != nil && len(reqs) > 1 && streamSpecific(err) {
		var retry []*sealReq
		for _, r := range reqs {
			if r.b != nil {
				retry = append(retry, r)
			}
		}
		if len(retry) > 1 {
			c.s.cfg.Logger.Warn("group commit failed; sealing its streams one by one", "streams", len(retry), "err", err)
			for _, r := range retry {
				r.b, r.err = nil, nil
				_ = c.commit([]*sealReq{r})
			}
		}
	}
	for _, r := range reqs {
		close(r.done)
	}
}

// errPayloads marks the failure of a tick's payload write.
var errPayloads = errors.New("write payload bundles")

// streamSpecific reports whether a group's error happened before its commit and may
// come from one stream's batch alone.
func streamSpecific(err error) bool {
	return errors.Is(err, errPayloads) || errors.Is(err, catalog.ErrConflict) ||
		errors.Is(err, catalog.ErrExists) || errors.Is(err, catalog.ErrInvalid)
}

// commit runs one SealGroup for reqs (steps 1-4 of the package comment) and records
// each request's outcome; it returns the group's error, which it also gives every
// request that had a batch.
func (c *committer) commit(reqs []*sealReq) error {
	cfg := &c.s.cfg
	ctx, cancel := context.WithTimeout(context.Background(), cfg.SealTimeout)
	defer cancel()
	ctx, span := startCommit(ctx, reqs)
	logs := make([]catalog.LogID, len(reqs))
	byLog := make(map[catalog.LogID]*sealReq, len(reqs))
	for i, r := range reqs {
		logs[i] = r.ls.log
		byLog[r.ls.log] = r
	}
	res, err := cfg.Catalog.SealGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		return c.build(ctx, cps, byLog)
	})
	for i, r := range reqs {
		if i < len(res) {
			r.locked, r.cp = res[i].Locked, res[i].Checkpoint
		}
		if err != nil && r.err == nil && (r.b != nil || i >= len(res)) {
			r.err = err
		}
	}
	endSpan(span, err)
	return err
}

// build builds the batch of each locked stream (in parallel: encryption and hashing
// are the CPU work of a tick) and starts writing all payload bundles at once; the
// catalog waits for them before it commits. A stream whose build fails gets the
// error and no batch; the others go on.
func (c *committer) build(ctx context.Context, cps []catalog.Checkpoint, byLog map[catalog.LogID]*sealReq) ([]*catalog.SealBatch, func() error, error) {
	batches := make([]*catalog.SealBatch, len(cps))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, cp := range cps {
		r := byLog[cp.Log]
		g.Go(func() error {
			b, err := r.ls.build(ctx, cp, r.p)
			if err != nil {
				r.err = err
				return nil
			}
			if b != nil {
				r.b, batches[i] = b, b.batch
			}
			return nil
		})
	}
	_ = g.Wait()
	var objs []tiles.Object
	for _, cp := range cps {
		if r := byLog[cp.Log]; r.b != nil {
			objs = append(objs, r.b.object)
		}
	}
	if len(objs) == 0 {
		return batches, nil, nil
	}
	written := make(chan error, 1)
	go func() { written <- c.writeAll(ctx, objs) }()
	return batches, func() error {
		if err := <-written; err != nil {
			return fmt.Errorf("%w: %w", errPayloads, err)
		}
		return nil
	}, nil
}

// writeAll writes the payload bundles of a tick: one CreateAll when the store has it,
// else concurrent Creates.
func (c *committer) writeAll(ctx context.Context, objs []tiles.Object) error {
	store := c.s.cfg.Store
	if bc, ok := store.(tiles.BatchCreator); ok {
		return bc.CreateAll(ctx, objs, tiles.PrivateAttrs)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, o := range objs {
		g.Go(func() error { return store.Create(gctx, o.Key, o.Data, tiles.PrivateAttrs) })
	}
	return g.Wait()
}
