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
// time takes up to maxRound queued streams (one request per stream), those of quiet
// streams only as far as the publication budget allows (pubbudget.go), and
// publishes them all under one catalog PublishGroup (one transaction, or none on the
// embedded catalog) and one store write (tiles.PublishGroup: on the filesystem three
// syncfs for the whole round). The goroutine running the rounds exists only while
// requests are queued, so idle streams cost nothing.
type publisher struct {
	s        *Sequencer
	gap      time.Duration // least time between the starts of two rounds
	maxRound int

	mu       sync.Mutex
	queue    []*pubReq
	running  bool // a goroutine is running rounds
	budget   *pubBudget
	flushing bool          // Close: the budget no longer holds anyone back
	flushed  chan struct{} // closed when flushing is set
	taken    [takenKinds]uint64
}

// Why a round took a request, counted in publisher.taken (and the metric
// sealtrail_stream_publications_total by reason).
const (
	takenBudget = iota // a quiet stream, with a token of the budget
	takenBusy          // at least busyBacklog leaves to publish
	takenClose         // Close publishes everything
	takenKinds
)

var takenReasons = [takenKinds]string{"budget", "busy", "close"}

func newPublisher(s *Sequencer) *publisher {
	return &publisher{s: s, gap: s.cfg.PublishInterval / 2, maxRound: s.cfg.MaxPublishing,
		budget: newPubBudget(float64(s.cfg.PublishBudget), s.cfg.PublishInterval), flushed: make(chan struct{})}
}

// pubReq is one stream's request for publication, answered by the round that took it.
type pubReq struct {
	log    catalog.LogID
	writer *tiles.Writer // owned by the round until done is closed
	// backlog returns the stream's committed leaves not yet published: from
	// busyBacklog on, its publication does not wait for the budget. nil: none.
	backlog func() uint64

	cp   catalog.Checkpoint // the checkpoint as left after the round
	err  error
	done chan struct{}
}

// publish queues log's publication and waits for the round that took it; it returns
// the checkpoint as left after, or the stream's error (errFatal for a fork). backlog
// is pubReq's.
func (p *publisher) publish(log catalog.LogID, w *tiles.Writer, backlog func() uint64) (catalog.Checkpoint, error) {
	r := &pubReq{log: log, writer: w, backlog: backlog, done: make(chan struct{})}
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

// flush lifts the budget for good (Close): every queued and later request is taken
// in the next rounds, which follow each other without waiting.
func (p *publisher) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.flushing {
		p.flushing = true
		close(p.flushed)
	}
}

// queued returns the streams waiting for a round.
func (p *publisher) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// run runs rounds until no request is queued. Rounds start at least gap
// (PublishInterval/2) apart, so that a round gathers every stream that fell due since
// the last one rather than the few whose timers just fired: under load the round's
// syncs are shared by many streams, and a lone round after a quiet spell starts at
// once. When the budget holds back every queued request, it waits for the next token.
func (p *publisher) run() {
	var last time.Time
	for {
		if wait := p.gap - time.Since(last); wait > 0 {
			p.sleep(wait)
		}
		now := time.Now()
		p.mu.Lock()
		reqs := p.take(now)
		if len(reqs) == 0 {
			if len(p.queue) == 0 {
				p.running = false
				p.mu.Unlock()
				return
			}
			wait := p.budget.wait(now, p.quiet())
			p.mu.Unlock()
			p.sleep(max(wait, time.Millisecond))
			continue
		}
		p.mu.Unlock()
		last = now
		p.round(reqs)
	}
}

// sleep waits for d, or until the publisher is flushed.
func (p *publisher) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.flushed:
	}
}

// take removes the next round's requests from the queue at now, under mu: in queue
// order, at most maxRound, one per stream (a stream whose previous sequencer retired
// may have two; the later one waits for the next round), and of the quiet streams
// only those the budget has a token for, unless flushing. The requests left keep
// their order, so the oldest go first.
func (p *publisher) take(now time.Time) []*pubReq {
	seen := make(map[catalog.LogID]bool, min(len(p.queue), p.maxRound))
	ready := p.budget.ready(now, p.quiet())
	var reqs, rest []*pubReq
	for _, r := range p.queue {
		why := -1
		if len(reqs) < p.maxRound && !seen[r.log] {
			switch {
			case p.flushing:
				why = takenClose
			case r.busy():
				why = takenBusy
			case ready && p.budget.spend(now):
				why = takenBudget
			}
		}
		if why < 0 {
			rest = append(rest, r)
			continue
		}
		seen[r.log] = true
		reqs = append(reqs, r)
		p.taken[why]++
	}
	p.queue = rest
	return reqs
}

// quiet returns how many queued requests the budget holds back (under mu): those of
// quiet streams, none when flushing.
func (p *publisher) quiet() int {
	if p.flushing || !p.budget.limited() {
		return 0
	}
	n := 0
	for _, r := range p.queue {
		if !r.busy() {
			n++
		}
	}
	return n
}

// takenCount returns how many requests rounds took for reason why.
func (p *publisher) takenCount(why int) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken[why]
}

// busy reports whether r's stream has so much to publish that the budget does not
// hold it back.
func (r *pubReq) busy() bool { return r.backlog != nil && r.backlog() >= busyBacklog }

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
