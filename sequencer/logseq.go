package sequencer

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"go.opentelemetry.io/otel/trace"
)

var errRetired = errors.New("sequencer retired")

// lingerMax bounds how long a pool waits for more events when the previous batch was
// large (see next); a lone event after a quiet spell never waits.
const lingerMax = 2 * time.Millisecond

// pool is a batch in the making and then in flight. The seal loop owns results, errs
// and size until it closes done; after that they are read-only.
type pool struct {
	entries []Entry
	first   time.Time // when the first entry arrived

	results []Result
	errs    []error      // per entry (ErrIDConflict), or nil
	err     error        // the whole batch failed
	size    uint64       // checkpoint size after the batch's commit
	links   []trace.Link // the submit spans of its entries, for the commit span (trace.go)

	done chan struct{} // closed once committed (acknowledged) or failed
}

func newPool(now time.Time) *pool {
	return &pool{first: now, done: make(chan struct{})}
}

// fail ends p with err; nil acknowledges it. Called once, by the seal loop or stop.
func (p *pool) fail(err error) {
	p.err = err
	close(p.done)
}

type waiter struct {
	p *pool
	i int
}

// wait returns the entry's result once its batch is committed. If ctx ends first the
// outcome is unknown to the caller (the batch may still commit; a signed event may be
// retried and then gets its original result).
func (w waiter) wait(ctx context.Context) (Result, error) {
	select {
	case <-w.p.done:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("sequencer: waiting for seal: %w", ctx.Err())
	}
	if w.p.err != nil {
		return Result{}, w.p.err
	}
	if err := w.p.errs[w.i]; err != nil {
		return Result{}, err
	}
	return w.p.results[w.i], nil
}

// logSequencer seals and publishes one project-stream. Fields under mu are shared
// between Submit callers and the loops; the rest belong to the loops.
type logSequencer struct {
	s      *Sequencer
	log    catalog.LogID
	prefix tiles.Prefix

	mu       sync.Mutex
	pending  []*pool // pools waiting to be sealed, each with at most MaxBatch entries
	npending int
	inflight int // pools taken for sealing but not yet committed or failed
	draining bool
	retired  bool
	stopped  error // set when a fatal error stopped the stream
	wake     chan struct{}

	// Seal loop only.
	lastTS    time.Time // receive time of the last event sealed, as far as known
	lastSize  uint64    // checkpoint size at which lastTS was known
	lastBatch int       // entries of the last pool taken for sealing
	// Publication: the seal loop raises pubTarget (under mu) and signals pubWake.
	pubTarget uint64
	pubWake   chan struct{}
	// Publish loop only.
	writer *tiles.Writer
}

func newLogSequencer(s *Sequencer, log catalog.LogID) *logSequencer {
	return &logSequencer{s: s, log: log, prefix: prefixOf(log), wake: make(chan struct{}, 1),
		pubWake: make(chan struct{}, 1), writer: tiles.NewWriter(s.cfg.Store, prefixOf(log), s.cfg.Logger)}
}

func (ls *logSequencer) signal() {
	select {
	case ls.wake <- struct{}{}:
	default:
	}
}

func (ls *logSequencer) enqueue(ctx context.Context, e Entry) (waiter, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err := ls.admitting(); err != nil {
		return waiter{}, err
	}
	w, err := ls.add(ctx, e, 1)
	if err == nil {
		ls.signal()
	}
	return w, err
}

// admitting returns why ls takes no more entries, or nil. Called under mu.
func (ls *logSequencer) admitting() error {
	switch {
	case ls.retired:
		return errRetired
	case ls.stopped != nil:
		return ls.stopped
	case ls.draining:
		return ErrClosed
	}
	return nil
}

// add queues e in the last pending pool, or in a new one sized for up to more
// entries, unless MaxPending are waiting. Called under mu; the caller signals.
func (ls *logSequencer) add(ctx context.Context, e Entry, more int) (waiter, error) {
	cfg := &ls.s.cfg
	if ls.npending >= cfg.MaxPending {
		return waiter{}, &BusyError{RetryAfter: time.Second}
	}
	var p *pool
	if n := len(ls.pending); n > 0 && len(ls.pending[n-1].entries) < cfg.MaxBatch {
		p = ls.pending[n-1]
	} else {
		p = newPool(cfg.Now())
		p.entries = make([]Entry, 0, min(more, cfg.MaxBatch))
		ls.pending = append(ls.pending, p)
	}
	if len(p.entries) == cap(p.entries) {
		// Room for the rest of the caller's entries at once (SubmitMany adds them
		// one by one), not by doubling.
		p.entries = slices.Grow(p.entries, min(more, cfg.MaxBatch-len(p.entries)))
	}
	p.entries = append(p.entries, e)
	p.link(ctx)
	ls.npending++
	return waiter{p, len(p.entries) - 1}, nil
}

func (ls *logSequencer) drain() {
	ls.mu.Lock()
	ls.draining = true
	ls.mu.Unlock()
	ls.signal()
}

func (ls *logSequencer) retireIfIdle() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.pending) > 0 || ls.inflight > 0 {
		return false
	}
	ls.retired = true
	return true
}

// next blocks until a pool is due for sealing and returns it, or returns nil when the
// sequencer drained or retired.
func (ls *logSequencer) next() *pool {
	cfg := &ls.s.cfg
	idle := time.NewTimer(cfg.IdleTimeout)
	defer idle.Stop()
	for {
		ls.mu.Lock()
		var wait time.Duration = -1
		if len(ls.pending) > 0 {
			p := ls.pending[0]
			age := cfg.Now().Sub(p.first)
			maxAge := cfg.MaxAge
			if maxAge == 0 && len(p.entries) < ls.lastBatch/2 {
				// Under load (the last batch was large) a pool that has just begun
				// lingers until it holds half as many or is lingerMax old: the
				// producers the last acknowledgement released are still coming back,
				// and sealing the first few alone costs a whole batch's writes.
				maxAge = lingerMax
			}
			if len(p.entries) >= cfg.MaxBatch || age >= maxAge || ls.draining || len(ls.pending) > 1 {
				// The queue's backing array would keep p, and so its entries and
				// their payloads, reachable until the stream retires (a minute
				// after its last event): clear its slot.
				ls.pending[0] = nil
				ls.pending = ls.pending[1:]
				ls.npending -= len(p.entries)
				ls.inflight++
				ls.lastBatch = len(p.entries)
				ls.mu.Unlock()
				return p
			}
			wait = maxAge - age
		} else if ls.draining || ls.stopped != nil {
			ls.mu.Unlock()
			return nil
		}
		ls.mu.Unlock()

		var age <-chan time.Time
		var ageTimer *time.Timer
		if wait >= 0 {
			ageTimer = time.NewTimer(wait)
			age = ageTimer.C
		}
		select {
		case <-ls.wake:
		case <-age:
		case <-idle.C:
			if ls.s.retire(ls) {
				return nil
			}
			idle.Reset(cfg.IdleTimeout)
		}
		if ageTimer != nil {
			ageTimer.Stop()
		}
	}
}

// run is the seal loop; it starts the publish loop and, once sealing is over, lets it
// finish the last publication and waits for it.
func (ls *logSequencer) run() {
	sealed := make(chan struct{})
	published := make(chan struct{})
	go func() {
		defer close(published)
		ls.publishLoop(sealed)
	}()
	for {
		p := ls.next()
		if p == nil {
			break
		}
		if err := ls.stoppedErr(); err != nil {
			ls.finish(p, err) // taken from the pool just before the stream stopped
			continue
		}
		start := time.Now()
		err := ls.seal(p)
		ls.s.metrics.sealed(len(p.entries), time.Since(start), err)
		if err != nil {
			ls.s.cfg.Logger.Error("batch failed", "log", ls.log.String(), "events", len(p.entries), "err", err)
			ls.finish(p, err)
			continue
		}
		// Committed: acknowledge now (step 5 of the package comment) and leave the
		// tiles and the checkpoint note to the publish loop.
		ls.s.metrics.events.Add(float64(len(p.entries)))
		ls.requestPublish(p.size)
		ls.finish(p, nil)
	}
	close(sealed)
	<-published
}

// finish fails p with err (if not nil) or acknowledges it, and counts it out.
func (ls *logSequencer) finish(p *pool, err error) {
	p.fail(err)
	ls.mu.Lock()
	ls.inflight--
	ls.mu.Unlock()
}

// seal commits p as one batch (steps 1-4 of the package comment), in the next group
// commit of the process (committer). If another replica holds the project-stream's
// lock, it tries again in the following groups until SealTimeout.
func (ls *logSequencer) seal(p *pool) error {
	deadline := time.Now().Add(ls.s.cfg.SealTimeout)
	for {
		r := ls.s.group.seal(ls, p)
		if r.err != nil {
			if r.b != nil && ls.committedAnyway(r.b) {
				ls.s.cfg.Logger.Warn("seal reported an error but the batch is committed", "log", ls.log.String(), "err", r.err)
				r.committed(ls, p, r.cp)
				return nil
			}
			return fmt.Errorf("%w: %w", ErrSealFailed, r.err)
		}
		if r.locked {
			r.committed(ls, p, r.cp)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the lock of %s stayed with another replica for %s", ErrSealFailed, ls.log, ls.s.cfg.SealTimeout)
		}
		time.Sleep(lockRetry)
	}
}

// lockRetry is how long a stream whose lock another replica holds waits before it
// joins a group again.
const lockRetry = 2 * time.Millisecond

// committedAnyway reports whether the batch b is committed after all: a commit whose
// acknowledgement was lost returns an error although the transaction went through.
func (ls *logSequencer) committedAnyway(b *built) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bs, err := ls.s.cfg.Catalog.BatchesCovering(ctx, ls.log, b.first, b.first)
	return err == nil && len(bs) == 1 && bs[0].BatchID == b.batch.BatchID
}

// built is a batch ready to commit, once its payload bundle is durable: the committer
// places segment in the tick's group payload object and names that place in batch.
type built struct {
	first   uint64
	batch   *catalog.SealBatch
	segment []byte               // the encoded payload bundle
	bundle  *tiles.PayloadBundle // decoded, for the cache
}

// build runs under the project-stream lock: it resolves retried ids, assigns
// sequences, encrypts, builds leaves and encodes the payload bundle (step 2; the
// committer writes it, step 3). It returns nil when every entry was a duplicate or a
// conflict.
func (ls *logSequencer) build(ctx context.Context, cp catalog.Checkpoint, p *pool) (*built, error) {
	p.results = make([]Result, len(p.entries))
	p.errs = make([]error, len(p.entries))
	newAt, err := ls.resolveIDs(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(newAt) == 0 {
		return nil, nil
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	rng, err := rf.NewRange(0, cp.Size, hashBytes(cp.Range))
	if err != nil {
		return nil, fmt.Errorf("checkpoint compact range: %w", err)
	}
	batchID, err := randomID()
	if err != nil {
		return nil, err
	}
	ts, err := ls.timestamp(ctx, cp)
	if err != nil {
		return nil, err
	}
	first := cp.Size + 1
	ids, err := eventIDs(p, newAt, ts)
	if err != nil {
		return nil, err
	}
	events := make([]catalog.Event, len(newAt))
	bundle := tiles.PayloadBundle{First: first, Records: make([]tiles.PayloadRecord, len(newAt))}
	nonces := make([]tlog.Nonce, len(newAt))
	leaves := make([]tlog.Leaf, len(newAt))
	// Leaves and ciphertexts are independent of one another: a large batch builds
	// them on several cores. Only the compact range, below, takes them in order.
	err = inParallel(len(newAt), func(lo, hi int) error {
		return ls.buildEntries(p, newAt, ids, lo, hi, first, ts, events, leaves, bundle.Records, nonces)
	})
	if err != nil {
		return nil, err
	}
	data, err := ls.encryptPayloads(ctx, p, newAt, ts, nonces, leaves, &bundle)
	if err != nil {
		return nil, err
	}
	for k := range events {
		if err := rng.Append(events[k].LeafHash[:], nil); err != nil {
			return nil, fmt.Errorf("append leaf: %w", err)
		}
	}
	// Duplicates of an id earlier in the same batch share its result.
	for i := range p.entries {
		if dup := p.results[i]; dup.Duplicate && dup.Sequence == 0 {
			for j := range p.entries[:i] {
				if p.results[j].ID == dup.ID && p.results[j].Sequence != 0 {
					p.results[i].Sequence, p.results[i].LeafHash = p.results[j].Sequence, p.results[j].LeafHash
					break
				}
			}
		}
	}
	rootRaw, err := rng.GetRootHash(nil)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	var root tlog.Hash
	copy(root[:], rootRaw)
	return &built{first: first, segment: data, bundle: &bundle,
		batch: &catalog.SealBatch{BatchID: batchID, Events: events, Root: root, Range: toHashes(rng.Hashes())}}, nil
}

// eventIDs returns the id of each entry newAt[k] of p: the client's, or one minted
// for ts. The minted ones ascend with the sequence: a batch's ids share their time
// prefix, and in random order they would land all over the batch's range of the
// catalog's id index instead of being appended at its right edge.
func eventIDs(p *pool, newAt []int, ts time.Time) ([]string, error) {
	ids := make([]string, len(newAt))
	var minted []string
	for k, i := range newAt {
		if ids[k] = p.entries[i].ID; ids[k] == "" {
			id, err := tlog.NewEventID(ts)
			if err != nil {
				return nil, err
			}
			minted = append(minted, id)
		}
	}
	slices.Sort(minted)
	for k := range ids {
		if ids[k] == "" {
			ids[k], minted = minted[0], minted[1:]
		}
	}
	return ids, nil
}

// buildEntries builds the entries newAt[lo:hi] of p as sequences first+lo... with the
// ids ids[lo:hi]: their nonces, leaves, leaf data, index rows and results, into
// nonces, leaves, the records' LeafData, events and p.results at the same positions
// (encryptPayloads then adds the ciphertexts).
func (ls *logSequencer) buildEntries(p *pool, newAt []int, ids []string, lo, hi int, first uint64, ts time.Time,
	events []catalog.Event, leaves []tlog.Leaf, records []tiles.PayloadRecord, nonces []tlog.Nonce) error {
	stamp := tlog.FormatTime(ts)
	for k := lo; k < hi; k++ {
		i := newAt[k]
		e := &p.entries[i]
		seq := first + uint64(k)
		id := ids[k]
		var err error
		var nonce tlog.Nonce
		if e.Nonce != nil {
			nonce = *e.Nonce
		} else if nonce, err = tlog.NewNonce(); err != nil {
			return err
		}
		leaf := &leaves[k]
		*leaf = tlog.Leaf{ProjectID: ls.log.ProjectID, Stream: string(ls.log.Stream), Sequence: seq, ID: id,
			Timestamp: stamp, PayloadHash: tlog.Commitment(nonce, e.Payload),
			SigningKeyID: e.SigningKeyID, Signature: e.Signature}
		if err := leaf.Validate(); err != nil {
			return err
		}
		data := leaf.Encode()
		lh := tlog.LeafHash(data)
		nonces[k], records[k].LeafData = nonce, data
		events[k] = catalog.Event{Sequence: seq, ID: id, ReceivedAt: ts,
			Action: e.Index.Action, Status: e.Index.Status, ActorType: e.Index.ActorType, ActorID: e.Index.ActorID,
			TargetType: e.Index.TargetType, TargetID: e.Index.TargetID, PayloadHash: leaf.PayloadHash, LeafHash: lh}
		p.results[i] = Result{ID: id, Sequence: seq, LeafHash: lh}
	}
	return nil
}

// resolveIDs handles client-minted ids: an id already sealed with the same commitment
// is a retry and gets the original result; with another commitment it is a conflict.
// It returns the indexes of the entries that need new leaves.
func (ls *logSequencer) resolveIDs(ctx context.Context, p *pool) ([]int, error) {
	var ids []string
	for _, e := range p.entries {
		if e.ID != "" {
			ids = append(ids, e.ID)
		}
	}
	var existing map[string]catalog.Event
	if len(ids) > 0 {
		var err error
		if existing, err = ls.s.cfg.Catalog.EventsByID(ctx, ls.log, ids); err != nil {
			return nil, fmt.Errorf("look up retried ids: %w", err)
		}
	}
	inBatch := map[string]tlog.Hash{}
	newAt := make([]int, 0, len(p.entries))
	for i, e := range p.entries {
		if e.ID == "" {
			newAt = append(newAt, i)
			continue
		}
		var commitment tlog.Hash
		if e.Nonce != nil {
			commitment = tlog.Commitment(*e.Nonce, e.Payload)
		}
		if old, ok := existing[e.ID]; ok {
			if e.Nonce != nil && old.PayloadHash == commitment {
				p.results[i] = Result{ID: e.ID, Sequence: old.Sequence, LeafHash: old.LeafHash, Duplicate: true}
			} else {
				p.errs[i] = fmt.Errorf("%w: %s", ErrIDConflict, e.ID)
			}
			continue
		}
		if prev, ok := inBatch[e.ID]; ok {
			if e.Nonce != nil && prev == commitment {
				p.results[i] = Result{ID: e.ID, Duplicate: true} // sequence filled in by build
			} else {
				p.errs[i] = fmt.Errorf("%w: %s", ErrIDConflict, e.ID)
			}
			continue
		}
		inBatch[e.ID] = commitment
		newAt = append(newAt, i)
	}
	return newAt, nil
}

// timestamp returns the receive time of the batch to be sealed on checkpoint cp: now,
// to the millisecond, never earlier than the receive time of the last event sealed in
// the project-stream, so receive times (and the leaves' timestamps) never decrease
// with the sequence, across restarts, clock steps and replicas. The catalog relies on
// it for fast time filters (docs/catalog.md). That last time is known without a read
// when the previous batch on cp was this loop's own; otherwise (the first batch, or
// another replica sealed since) it is read from the catalog.
func (ls *logSequencer) timestamp(ctx context.Context, cp catalog.Checkpoint) (time.Time, error) {
	if cp.Size > 0 && cp.Size != ls.lastSize {
		last, err := ls.s.cfg.Catalog.QueryEvents(ctx, catalog.Query{Log: ls.log, Descending: true, Limit: 1})
		if err != nil {
			return time.Time{}, fmt.Errorf("receive time of the last event: %w", err)
		}
		if len(last) == 1 && last[0].ReceivedAt.After(ls.lastTS) {
			ls.lastTS = last[0].ReceivedAt
		}
		ls.lastSize = cp.Size
	}
	ts := ls.s.cfg.Now().UTC().Truncate(time.Millisecond)
	if ts.Before(ls.lastTS) {
		ts = ls.lastTS
	}
	ls.lastTS = ts
	return ts, nil
}

// payloadAAD binds a ciphertext to its project-stream, sequence and event id, so a
// ciphertext moved to another event no longer decrypts.
func payloadAAD(log catalog.LogID, seq uint64, id string) []byte {
	b := make([]byte, 0, 64+len(log.ProjectID)+len(id))
	b = append(b, "sealtrail/payload/v1\x00"...)
	b = append(b, log.ProjectID...)
	b = append(b, 0)
	b = append(b, log.Stream...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, seq)
	return append(b, id...)
}

func randomID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("batch id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func hashBytes(hs []tlog.Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

func toHashes(raw [][]byte) []tlog.Hash {
	out := make([]tlog.Hash, len(raw))
	for i, h := range raw {
		copy(out[i][:], h)
	}
	return out
}
