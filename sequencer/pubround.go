package sequencer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"golang.org/x/sync/errgroup"
)

// pubParallelism bounds the streams of a round whose leaf data is read at once.
const pubParallelism = 8

// publisher runs the process's publication rounds. The publish loops of the
// project-streams whose publication is due queue a request and wait; one round at a
// time takes up to MaxPublishing queued streams (one request per stream) and
// publishes them all under one catalog PublishGroup (one transaction, or none on the
// embedded catalog) and one store write (tiles.PublishGroup: on the filesystem three
// syncfs for the whole round). The goroutine running the rounds exists only while
// requests are queued, so idle streams cost nothing.
type publisher struct {
	s *Sequencer

	mu      sync.Mutex
	queue   []*pubReq
	running bool // a goroutine is running rounds
}

// pubReq is one stream's request for publication, answered by the round that took it.
type pubReq struct {
	log    catalog.LogID
	writer *tiles.Writer // owned by the round until done is closed

	cp   catalog.Checkpoint // the checkpoint as left after the round
	err  error
	done chan struct{}
}

// publish queues log's publication and waits for the round that took it; it returns
// the checkpoint as left after, or the stream's error (errFatal for a fork).
func (p *publisher) publish(log catalog.LogID, w *tiles.Writer) (catalog.Checkpoint, error) {
	r := &pubReq{log: log, writer: w, done: make(chan struct{})}
	p.mu.Lock()
	p.queue = append(p.queue, r)
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		go p.run()
	}
	<-r.done
	return r.cp, r.err
}

// run runs rounds until no request is queued. Rounds start at least
// PublishInterval/2 apart, so that a round gathers every stream that fell due since
// the last one rather than the few whose timers just fired: under load the round's
// syncs are shared by many streams, and a lone round after a quiet spell starts at once.
func (p *publisher) run() {
	gap := p.s.cfg.PublishInterval / 2
	var last time.Time
	for {
		if wait := gap - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		p.mu.Lock()
		reqs := p.take()
		if len(reqs) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.round(reqs)
	}
}

// take removes the next round's requests from the queue, under mu: at most
// MaxPublishing, one per stream (a stream whose previous sequencer retired may have
// two; the later one waits for the next round).
func (p *publisher) take() []*pubReq {
	limit := p.s.cfg.MaxPublishing
	seen := make(map[catalog.LogID]bool, min(len(p.queue), limit))
	var reqs, rest []*pubReq
	for _, r := range p.queue {
		if len(reqs) < limit && !seen[r.log] {
			seen[r.log] = true
			reqs = append(reqs, r)
		} else {
			rest = append(rest, r)
		}
	}
	p.queue = rest
	return reqs
}

// round publishes reqs together and answers each.
func (p *publisher) round(reqs []*pubReq) {
	logs := make([]catalog.LogID, len(reqs))
	writers := make([]*tiles.Writer, len(reqs))
	for i, r := range reqs {
		logs[i], writers[i] = r.log, r.writer
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.s.cfg.SealTimeout)
	out, err := p.s.publishGroup(ctx, logs, writers)
	cancel()
	p.s.metrics.publishRound(len(reqs))
	for i, r := range reqs {
		if err != nil {
			r.err = err
		} else {
			r.cp, r.err = out[i].Checkpoint, out[i].Err
		}
		close(r.done)
	}
}

// publishGroup materializes (published_size, size] of every log of logs (distinct),
// with writers[i] the Writer of logs[i], and writes their checkpoint notes, under the
// catalog's publish locks (steps 5-6 of the package comment), in one round: one
// catalog PublishGroup and one tiles.PublishGroup. A stream's tiles go before its
// note, and its published size is recorded only once both are durable.
func (s *Sequencer) publishGroup(ctx context.Context, logs []catalog.LogID, writers []*tiles.Writer) ([]catalog.Published, error) {
	return s.cfg.Catalog.PublishGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) []error {
		errs := make([]error, len(cps))
		// Each stream's leaf data (a catalog query, payload bundles mostly from the
		// cache) and note, a few streams at once.
		all := make([]*tiles.Publication, len(cps))
		var g errgroup.Group
		g.SetLimit(pubParallelism)
		for i, cp := range cps {
			if cp.PublishedSize >= cp.Size {
				continue
			}
			g.Go(func() error {
				p, err := s.publication(ctx, cp, writers[i])
				if err != nil {
					errs[i] = err
				} else {
					all[i] = &p
				}
				return nil
			})
		}
		_ = g.Wait() // each stream's error is in errs
		var (
			pubs []tiles.Publication
			at   []int
		)
		for i, p := range all {
			if p != nil {
				pubs, at = append(pubs, *p), append(at, i)
			}
		}
		if len(pubs) == 0 {
			return errs
		}
		for k, err := range tiles.PublishGroup(ctx, s.cfg.Store, pubs) {
			if err != nil {
				errs[at[k]] = materializeErr(cps[at[k]], err)
			}
		}
		return errs
	})
}

// materializeErr classifies an error materializing cp: a conflict or a mismatch with
// the committed tree is a fork (errFatal), anything else is retried.
func materializeErr(cp catalog.Checkpoint, err error) error {
	if errors.Is(err, tiles.ErrConflict) || errors.Is(err, tiles.ErrMismatch) {
		return fmt.Errorf("%w: materialize %s at %d: %w", errFatal, cp.Log, cp.Size, err)
	}
	return fmt.Errorf("publish: %w", err)
}
