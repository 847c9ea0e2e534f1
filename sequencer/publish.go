package sequencer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// requestPublish asks the publish loop to materialize the stream up to size.
func (ls *logSequencer) requestPublish(size uint64) {
	ls.mu.Lock()
	ls.pubTarget = max(ls.pubTarget, size)
	ls.mu.Unlock()
	select {
	case ls.pubWake <- struct{}{}:
	default:
	}
}

// publishLoop is the stream's mirror work (steps 6-7 of the package comment): it
// materializes committed batches into tiles, entry bundles and the checkpoint note,
// coalesced: at most one publication every PublishInterval, each up to the latest
// committed size, so a busy stream rewrites its partial tiles a few times a second
// rather than at every batch, and a quiet one publishes once after its last batch. It
// returns once sealed is closed and everything committed through this loop is
// published (or the stream stopped).
func (ls *logSequencer) publishLoop(sealed <-chan struct{}) {
	cfg := &ls.s.cfg
	var last time.Time
	var done uint64 // published size reached by this loop
	for {
		select {
		case <-ls.pubWake:
		case <-sealed:
			ls.mu.Lock()
			target := ls.pubTarget
			ls.mu.Unlock()
			if target <= done || ls.stoppedErr() != nil {
				ls.republished(done)
				return
			}
		}
		if wait := cfg.PublishInterval - time.Since(last); wait > 0 {
			// Let more batches commit; they are published together.
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-sealed:
			}
			t.Stop()
		}
		ls.mu.Lock()
		target := ls.pubTarget
		ls.mu.Unlock()
		if target <= done || ls.stoppedErr() != nil {
			ls.republished(done)
			continue
		}
		start := time.Now()
		published, err := ls.publishUntil(target, done)
		last = time.Now()
		ls.s.metrics.publishSeconds.Observe(last.Sub(start).Seconds())
		if err != nil {
			// Only a fork ends publishUntil with an error: stop taking events.
			cfg.Logger.Error("stream stopped", "log", ls.log.String(), "err", err)
			ls.stop(err)
			continue
		}
		// The round may have published beyond target (batches committed meanwhile):
		// the caches learn the size whose tiles exist, never target, for which no
		// tiles may have been written.
		done = published
		ls.s.published(ls.log, published)
	}
}

// republished records again that the stream is published up to done, when a
// request finds nothing left to publish: a round publishes up to the latest commit,
// which can be a batch whose leaves the seal loop recorded (edge cache, leaf memo,
// head) only after the round trimmed them, and that batch's request then comes here.
// Without it they would stay held until the stream's next publication, which for an
// idle stream never comes.
func (ls *logSequencer) republished(done uint64) {
	if done > 0 {
		ls.s.published(ls.log, done)
	}
}

// stoppedErr returns the fatal error that stopped the stream, or nil.
func (ls *logSequencer) stoppedErr() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.stopped
}

// stop stops the stream with the fatal error err: Submit refuses new events, and
// the pools waiting to be sealed fail. Events already committed stay committed (and
// acknowledged): the catalog is the tree; the store disagrees with it.
func (ls *logSequencer) stop(err error) {
	ls.mu.Lock()
	ls.stopped = err
	pending := ls.pending
	ls.pending, ls.npending = nil, 0
	ls.mu.Unlock()
	for _, q := range pending {
		q.fail(err)
	}
	ls.signal()
}

// publishUntil publishes until the published size reaches target and returns the size
// reached (target or more: a round publishes up to the latest commit), retrying store
// and catalog failures with backoff. Only a fatal error (a fork) ends it early. done
// is the size this loop published last.
func (ls *logSequencer) publishUntil(target, done uint64) (uint64, error) {
	cfg := &ls.s.cfg
	backoff := 50 * time.Millisecond
	// What the stream has to publish by now, for the budget: batches commit while it
	// waits for a round.
	backlog := func() uint64 {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		return ls.pubTarget - min(done, ls.pubTarget)
	}
	for {
		// The stream joins the next publication round of the process (pubround.go):
		// every stream due then is published together, at most MaxPublishing per
		// round and the quiet ones within the publication budget (pubbudget.go), so
		// publication costs a catalog write and a few syncs per round however many
		// streams are active, and a stream waiting for a round coalesces more batches
		// into it.
		cp, err := ls.s.pub.publish(ls.log, ls.writer, backlog)
		if err == nil && cp.PublishedSize >= target {
			return cp.PublishedSize, nil
		}
		if errors.Is(err, errFatal) {
			return 0, err
		}
		if err != nil {
			cfg.Logger.Warn("publish failed; retrying", "log", ls.log.String(), "size", target, "backoff", backoff, "err", err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// publish materializes (published_size, size] of log and writes its checkpoint note,
// under the catalog's publish lock (steps 5-6 of the package comment), and returns the
// checkpoint as left after: the one-stream path, for a proof that needs its tiles now
// (edge.go).
func (s *Sequencer) publish(ctx context.Context, log catalog.LogID, w *tiles.Writer) (catalog.Checkpoint, error) {
	return s.cfg.Catalog.Publish(ctx, log, func(ctx context.Context, cp catalog.Checkpoint) error {
		if cp.PublishedSize >= cp.Size {
			return nil
		}
		p, err := s.publication(ctx, cp, w)
		if err != nil {
			return err
		}
		// The tiles and entry bundles, then, once they are durable, the note.
		if err := w.Publish(ctx, p.OldSize, p.LeafData, p.Root, p.Note); err != nil {
			return materializeErr(cp, err)
		}
		return nil
	})
}

// publication returns what publishes (cp.PublishedSize, cp.Size] of cp's log with w:
// the leaf data from the committed payload bundles and the signed checkpoint note.
func (s *Sequencer) publication(ctx context.Context, cp catalog.Checkpoint, w *tiles.Writer) (tiles.Publication, error) {
	leaves, err := s.leafData(ctx, cp.Log, cp.PublishedSize+1, cp.Size)
	if err != nil {
		return tiles.Publication{}, err
	}
	note, err := tlog.SignCheckpoint(s.cfg.Key, tlog.CheckpointOrigin(s.cfg.Origin, cp.Log.ProjectID, string(cp.Log.Stream)), cp.Size, cp.Root)
	if err != nil {
		return tiles.Publication{}, err
	}
	return tiles.Publication{Writer: w, OldSize: cp.PublishedSize, LeafData: leaves, Root: cp.Root, Note: note}, nil
}

// leafData returns the leaf data of sequences [from, to]: from memory if this process
// committed them and they are not yet published (leafmemo.go), else from the payload
// bundles of the committed batches covering them.
func (s *Sequencer) leafData(ctx context.Context, log catalog.LogID, from, to uint64) ([][]byte, error) {
	if leaves, ok := s.leaves.get(log, from, to); ok {
		return leaves, nil
	}
	batches, err := s.cfg.Catalog.BatchesCovering(ctx, log, from, to)
	if err != nil {
		return nil, fmt.Errorf("batches %d-%d: %w", from, to, err)
	}
	out := make([][]byte, 0, to-from+1)
	next := from
	for _, b := range batches {
		bundle, err := s.payloadBundle(ctx, log, b)
		if err != nil {
			return nil, err
		}
		for i, r := range bundle.Records {
			seq := b.First + uint64(i)
			if seq < next || seq > to {
				continue
			}
			if seq != next {
				return nil, fmt.Errorf("batches of %s skip from %d to %d", log, next, seq)
			}
			out = append(out, r.LeafData)
			next++
		}
	}
	if next != to+1 {
		return nil, fmt.Errorf("batches of %s end at %d, want %d", log, next-1, to)
	}
	return out, nil
}

// payloadBundle reads and decodes the payload bundle of batch b, through the cache.
func (s *Sequencer) payloadBundle(ctx context.Context, log catalog.LogID, b catalog.Batch) (*tiles.PayloadBundle, error) {
	ref, err := batchRef(log, b)
	if err != nil {
		return nil, err
	}
	if pb, ok := s.cache.get(ref.String()); ok {
		return pb, nil
	}
	pb, err := tiles.ReadPayloadRef(ctx, s.cfg.Store, ref, b.First, b.Count)
	if err != nil {
		return nil, err
	}
	s.cache.add(ref.String(), &pb)
	return &pb, nil
}
