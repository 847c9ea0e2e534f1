package sequencer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

// committer is the process's group commit. The seal loops of the project-streams hand
// it their batches (at most one each at a time); each tick takes every batch handed
// in since the last and commits them together: one catalog transaction
// (Catalog.SealGroup, which locks each stream's checkpoint row) and one group payload
// holding all their payload bundles (one append, or one Create, and one durability
// wait; see groupObject). So the hot path costs one commit and one payload write per
// tick whatever the number of streams in it, and a tick's batches grow with load by
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
		ls.s.leaves.add(ls.log, b.bundle)
		ls.s.committed(ls.log, cp, b.batch.Events)
	} else if cp.Log == ls.log {
		ls.s.heads.note(cp)
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
// that may be one stream's (the catalog refused a batch, or the group payload write
// failed, e.g. one too large for the store) and held more than one batch, each is
// tried again alone, in a group object of its own, so that such a stream fails only its own events. Other failures (the
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

// errPayloads marks the failure of a tick's group payload write (or of its reservation).
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
// are the CPU work of a tick) and starts writing the tick's group payload; the
// catalog waits for it before it commits. A stream whose build fails gets the
// error and no batch; the others go on.
func (c *committer) build(ctx context.Context, cps []catalog.Checkpoint, byLog map[catalog.LogID]*sealReq) ([]*catalog.SealBatch, func() error, error) {
	batches := make([]*catalog.SealBatch, len(cps))
	if kp, ok := c.s.cfg.Keyring.(keyPreparer); ok && len(cps) > 1 {
		logs := make([]catalog.LogID, len(cps))
		for i, cp := range cps {
			logs[i] = cp.Log
		}
		// Not fatal: each build then gets its stream's key itself, as without it.
		if err := kp.PrepareAt(ctx, logs, c.s.cfg.Now()); err != nil {
			c.s.cfg.Logger.Warn("sequencer: prepare the data keys of a tick", slog.Int("streams", len(logs)), slog.Any("err", err))
		}
	}
	// At most GOMAXPROCS builders take the streams in turn, one of them this
	// goroutine: a goroutine per stream (a tick of a thousand streams of one event
	// each) paid for a new goroutine and its stack's growth per stream and tick.
	var next atomic.Int64
	builder := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(cps) {
				return
			}
			cp := cps[i]
			r := byLog[cp.Log]
			r.b, r.err = nil, nil // a catalog may run this twice (catalog.SealGroupFunc)
			b, err := r.ls.build(ctx, cp, r.p)
			if err != nil {
				r.err = err
				continue
			}
			if b != nil {
				r.b, batches[i] = b, b.batch
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(cps)) - 1 {
		wg.Go(builder)
	}
	builder()
	wg.Wait()
	obj, err := c.groupObject(ctx, byLog, cps)
	if err != nil || obj.write == nil {
		return batches, nil, err
	}
	written := make(chan error, 1)
	go func() { written <- obj.write(ctx, obj.data) }()
	return batches, func() error {
		if err := <-written; err != nil {
			return fmt.Errorf("%w: %w", errPayloads, err)
		}
		return nil
	}, nil
}

// groupPayload is a tick's group payload and how to write it durably: appended to the
// store's open segment object (tiles.PayloadAppender, the filesystem store), else
// created as an object of its own.
type groupPayload struct {
	data  []byte
	write func(ctx context.Context, data []byte) error // nil: no stream has a batch
}

// groupObject lays the tick's payload bundles end to end in its group payload (at
// the end of the store's open segment object if the store appends, else in an object
// of its own at tiles.GroupPayloadKey, a random name per tick), names each batch's
// segment in its batch row and caches each decoded bundle under its segment: the
// publish loop reads the leaves right after the commit. A segment's place is never
// named twice (a random key, or an offset past every earlier append), so a cache
// entry of a tick that then fails is never used. It returns a zero groupPayload if no
// stream has a batch.
func (c *committer) groupObject(ctx context.Context, byLog map[catalog.LogID]*sealReq, cps []catalog.Checkpoint) (groupPayload, error) {
	size, segments := 0, 0
	for _, cp := range cps {
		if r := byLog[cp.Log]; r.b != nil {
			size += len(r.b.segment)
			segments++
		}
	}
	if size == 0 {
		return groupPayload{}, nil
	}
	var (
		key  string
		base int64
		out  groupPayload
	)
	if app, ok := c.s.cfg.Store.(tiles.PayloadAppender); ok {
		slot, err := app.ReservePayload(ctx, int64(size))
		if err != nil {
			return groupPayload{}, fmt.Errorf("%w: %w", errPayloads, err)
		}
		key, base, out.write = slot.Key, slot.Off, slot.Write
	} else {
		id, err := randomID()
		if err != nil {
			return groupPayload{}, err
		}
		if key, err = tiles.GroupPayloadKey(time.Now(), id); err != nil {
			return groupPayload{}, err
		}
		out.write = func(ctx context.Context, data []byte) error {
			return c.s.cfg.Store.Create(ctx, key, data, tiles.PrivateAttrs)
		}
	}
	if segments > 1 { // with one segment, the segment itself: no copy
		out.data = make([]byte, 0, size)
	}
	for _, cp := range cps {
		r := byLog[cp.Log]
		if r.b == nil {
			continue
		}
		b := r.b.batch
		b.Object, b.Offset, b.Length = key, uint64(base)+uint64(len(out.data)), uint64(len(r.b.segment))
		if segments == 1 {
			out.data = r.b.segment
		} else {
			out.data = append(out.data, r.b.segment...)
		}
		ref := tiles.PayloadRef{Key: key, Off: int64(b.Offset), Len: int64(b.Length)}
		c.s.cache.add(ref.String(), r.b.bundle)
		r.b.segment = nil
	}
	return out, nil
}
