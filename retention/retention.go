// Package retention is the retention job: it crypto-shreds the epochs of each
// project-stream that are past their retention by destroying the epoch's data key,
// after re-encrypting the payloads of events under an active legal hold under the hold
// key, recording a retention.shredded record in the project's project_audit stream,
// and blanking the shredded events' index values. Leaves, tiles and entry bundles are
// never touched (invariant 1). One replica runs it at a time, under a catalog lease.
//
// The order of one shredding, and what a crash (kill -9) at each point leaves:
//
//  1. Copy held payloads: each held event's payload is re-encrypted under the hold key
//     into its own object, then the catalog records the copy. A crash leaves at most
//     a copy without a row (redone next run) and nothing destroyed.
//  2. Record: unless the project_audit index already has a retention.shredded record
//     for this stream and epoch, seal one naming the stream, epoch, sequence range and
//     count. A crash after it leaves a record and a live key: the next run finds the
//     record, does not write a second one, and finishes steps 3-5.
//  3. Copy held payloads again, for a hold created since step 1.
//  4. Scrub the index rows of the range, except held events.
//  5. Destroy the data key, in one catalog transaction serialized with legal-hold
//     creation, only if every event of the range under an active hold has its held
//     copy; if a hold came in after step 3, copy its events and try again. Only now
//     is anything lost, and only what the record names.
//
// The range and count come from the event index for the epoch's receive times, which
// never change, so a rerun computes the same record. See docs/retention.md.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
)

// Catalog is the part of the catalog the job uses.
type Catalog interface {
	ListAllRetention(ctx context.Context) ([]catalog.Retention, error)
	MinRetention(ctx context.Context, projectID string) (int, error)
	ListDataKeys(ctx context.Context, log catalog.LogID) ([]catalog.DataKey, error)
	ListLegalHolds(ctx context.Context, projectID string) ([]catalog.LegalHold, error)
	EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error)
	QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error)
	EventSpan(ctx context.Context, log catalog.LogID, from, to time.Time) (catalog.Span, error)
	ScrubEvents(ctx context.Context, log catalog.LogID, first, last uint64, keep []uint64) (int64, error)
	ScrubEventSeqs(ctx context.Context, log catalog.LogID, seqs []uint64) (int64, error)
	AddHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error
	RemoveHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error
	HeldPayloads(ctx context.Context, log catalog.LogID, first, last uint64) ([]uint64, error)
	DestroyUnheldDataKey(ctx context.Context, log catalog.LogID, epoch string, first, last uint64, at time.Time) (catalog.DataKey, error)
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Reader reads sealed events with their payloads (the sequencer).
type Reader interface {
	Events(ctx context.Context, log catalog.LogID, seqs []uint64) ([]sequencer.Stored, error)
}

// Auditor seals the service's own records (the control plane).
type Auditor interface {
	AuditService(ctx context.Context, projectID, action string, target control.Actor, metadata map[string]any) error
}

// Keyring encrypts held copies and destroys epochs' data keys (*keyring.Keyring).
type Keyring interface {
	Encrypt(ctx context.Context, log catalog.LogID, epoch string, plaintext, ad []byte) ([]byte, error)
	Destroy(ctx context.Context, log catalog.LogID, epoch string) error
}

// Config configures a Job.
type Config struct {
	Catalog Catalog
	Reader  Reader
	Auditor Auditor
	Keyring Keyring
	Store   tiles.Store
	// Holder names this replica in the lease (default: a random id).
	Holder string
	// Interval is how often Run looks for expired epochs (default one hour).
	Interval time.Duration
	// LeaseTTL is how long a run may hold the lease (default 30 minutes); a replica
	// killed mid-run is replaced after it.
	LeaseTTL time.Duration
	// Now is the clock (tests); default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// AfterStep, if set, is called after each numbered step of a shredding (tests).
	AfterStep func(step int)
}

// Job is the retention job.
type Job struct{ cfg Config }

// ActionShredded is the project_audit action of a shredding.
const ActionShredded = "retention.shredded"

// leaseName is the catalog lease the job runs under.
const leaseName = "retention"

// New returns a job; Run runs it, RunOnce runs one pass.
func New(cfg Config) (*Job, error) {
	if cfg.Catalog == nil || cfg.Reader == nil || cfg.Auditor == nil || cfg.Keyring == nil || cfg.Store == nil {
		return nil, errors.New("retention: Catalog, Reader, Auditor, Keyring and Store are required")
	}
	if cfg.Holder == "" {
		cfg.Holder = fmt.Sprintf("replica-%d", time.Now().UnixNano())
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Job{cfg: cfg}, nil
}

// Run runs a pass every Interval until ctx ends.
func (j *Job) Run(ctx context.Context) {
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := j.RunOnce(ctx); err != nil && ctx.Err() == nil {
			j.cfg.Logger.ErrorContext(ctx, "retention pass failed", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Shredding is one epoch shredded by a pass.
type Shredding struct {
	Log   catalog.LogID
	Epoch string
	Span  catalog.Span
	Held  int
}

// RunOnce runs one pass if this replica gets the lease (ran reports whether it did):
// every epoch past its retention is shredded, and held copies whose holds were all
// released expire once their epoch is shredded.
func (j *Job) RunOnce(ctx context.Context) (done []Shredding, err error) {
	ok, err := j.cfg.Catalog.TryLease(ctx, leaseName, j.cfg.Holder, j.cfg.Now(), j.cfg.LeaseTTL)
	if err != nil || !ok {
		return nil, err
	}
	defer func() {
		if rerr := j.cfg.Catalog.ReleaseLease(context.WithoutCancel(ctx), leaseName, j.cfg.Holder); rerr != nil {
			j.cfg.Logger.WarnContext(ctx, "retention: release lease", slog.Any("err", rerr))
		}
	}()
	policies, err := j.cfg.Catalog.ListAllRetention(ctx)
	if err != nil {
		return nil, fmt.Errorf("retention: policies: %w", err)
	}
	now := j.cfg.Now()
	for _, p := range policies {
		minDays, err := j.cfg.Catalog.MinRetention(ctx, p.Log.ProjectID)
		if err != nil {
			return done, fmt.Errorf("retention: minimum of %s: %w", p.Log.ProjectID, err)
		}
		days := max(p.Days, minDays)
		keys, err := j.cfg.Catalog.ListDataKeys(ctx, p.Log)
		if err != nil {
			return done, fmt.Errorf("retention: data keys of %s: %w", p.Log, err)
		}
		held, err := j.heldSeqs(ctx, p.Log)
		if err != nil {
			return done, err
		}
		for _, k := range keys {
			start, end, ok := EpochBounds(k.Epoch)
			if !ok || k.Destroyed() || end.AddDate(0, 0, days).After(now) {
				continue
			}
			sh, err := j.shred(ctx, p.Log, k.Epoch, start, end, held)
			if err != nil {
				return done, err
			}
			done = append(done, sh)
		}
		if err := j.expire(ctx, p.Log); err != nil {
			return done, err
		}
	}
	return done, nil
}

// EpochBounds returns the receive-time range [start, end) of a keyring epoch ("2006-01"
// or "2006-01-02"); ok is false for other names (the hold key's).
func EpochBounds(epoch string) (start, end time.Time, ok bool) {
	if t, err := time.Parse("2006-01-02", epoch); err == nil {
		return t, t.AddDate(0, 0, 1), true
	}
	if t, err := time.Parse("2006-01", epoch); err == nil {
		return t, t.AddDate(0, 1, 0), true
	}
	return time.Time{}, time.Time{}, false
}

// heldSeqs returns the sequences of log's events that survive shredding: in the events
// stream those under an active legal hold; in project_audit the retention.shredded
// records themselves, the evidence an auditor checks shreds against (verify --audit).
func (j *Job) heldSeqs(ctx context.Context, log catalog.LogID) ([]uint64, error) {
	if log.Stream == catalog.StreamProjectAudit {
		return j.recordSeqs(ctx, log)
	}
	holds, err := j.cfg.Catalog.ListLegalHolds(ctx, log.ProjectID)
	if err != nil {
		return nil, fmt.Errorf("retention: holds of %s: %w", log.ProjectID, err)
	}
	var ids []string
	for _, h := range holds {
		if h.State() == catalog.HoldActive {
			ids = append(ids, h.EventIDs...)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	found, err := j.cfg.Catalog.EventsByID(ctx, log, ids)
	if err != nil {
		return nil, fmt.Errorf("retention: held events of %s: %w", log, err)
	}
	seqs := make([]uint64, 0, len(found))
	for _, e := range found {
		seqs = append(seqs, e.Sequence)
	}
	slices.Sort(seqs)
	return seqs, nil
}

// recordSeqs returns the sequences of the retention.shredded records of a
// project_audit stream.
func (j *Job) recordSeqs(ctx context.Context, log catalog.LogID) ([]uint64, error) {
	var out []uint64
	var cursor uint64
	for {
		page, err := j.cfg.Catalog.QueryEvents(ctx, catalog.Query{Log: log, Action: ActionShredded, Cursor: cursor,
			Limit: catalog.MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("retention: records of %s: %w", log, err)
		}
		for _, e := range page {
			out = append(out, e.Sequence)
			cursor = e.Sequence
		}
		if len(page) < catalog.MaxLimit {
			return out, nil
		}
	}
}

func within(seqs []uint64, sp catalog.Span) []uint64 {
	var out []uint64
	for _, s := range seqs {
		if sp.Count > 0 && s >= sp.First && s <= sp.Last {
			out = append(out, s)
		}
	}
	return out
}

// shred runs the five steps of the package comment for one epoch.
func (j *Job) shred(ctx context.Context, log catalog.LogID, epoch string, start, end time.Time, held []uint64) (Shredding, error) {
	sh := Shredding{Log: log, Epoch: epoch}
	sp, err := j.cfg.Catalog.EventSpan(ctx, log, start, end)
	if err != nil {
		return sh, fmt.Errorf("retention: span of %s %s: %w", log, epoch, err)
	}
	sh.Span = sp
	keep := within(held, sp)
	sh.Held = len(keep)
	if err := j.copyHeld(ctx, log, keep); err != nil { // 1
		return sh, err
	}
	j.step(1)
	if sp.Count > 0 { // 2; an epoch keyed but without events destroys nothing to record
		if err := j.record(ctx, log, epoch, sp, len(keep)); err != nil {
			return sh, err
		}
	}
	j.step(2)
	if held, err = j.heldSeqs(ctx, log); err != nil { // 3
		return sh, err
	}
	keep = within(held, sp)
	if err := j.copyHeld(ctx, log, keep); err != nil {
		return sh, err
	}
	j.step(3)
	if sp.Count > 0 { // 4
		if _, err := j.cfg.Catalog.ScrubEvents(ctx, log, sp.First, sp.Last, keep); err != nil {
			return sh, fmt.Errorf("retention: scrub %s %s: %w", log, epoch, err)
		}
	}
	j.step(4)
	if keep, err = j.destroy(ctx, log, epoch, sp, keep); err != nil { // 5
		return sh, err
	}
	sh.Held = len(keep)
	j.step(5)
	j.cfg.Logger.InfoContext(ctx, "retention shredded an epoch", slog.String("log", log.String()), slog.String("epoch", epoch),
		slog.Uint64("first", sp.First), slog.Uint64("last", sp.Last), slog.Uint64("count", sp.Count), slog.Int("held", len(keep)))
	return sh, nil
}

// destroyAttempts bounds the conditional destroys of step 5 in one pass; each one
// refused means a hold was created since the copy before it.
const destroyAttempts = 5

// destroy is step 5: the catalog destroys the epoch's data key only if every event of
// the span under an active legal hold has its held copy, in one transaction that hold
// creation is serialized with. A refusal means a hold was created after the last copy:
// its events are copied and the destroy tried again (the next pass goes on after
// destroyAttempts). Then the keyring forgets the key (a no-op in the catalog). It
// returns the held sequences of the span.
func (j *Job) destroy(ctx context.Context, log catalog.LogID, epoch string, sp catalog.Span, keep []uint64) ([]uint64, error) {
	for attempt := 1; ; attempt++ {
		_, err := j.cfg.Catalog.DestroyUnheldDataKey(ctx, log, epoch, sp.First, sp.Last, j.cfg.Now())
		if err == nil {
			break
		}
		if !errors.Is(err, catalog.ErrConflict) || attempt == destroyAttempts {
			return keep, fmt.Errorf("retention: destroy %s %s: %w", log, epoch, err)
		}
		j.cfg.Logger.InfoContext(ctx, "retention: a legal hold came in while shredding; copying its events",
			slog.String("log", log.String()), slog.String("epoch", epoch), slog.Any("reason", err))
		held, err := j.heldSeqs(ctx, log)
		if err != nil {
			return keep, err
		}
		keep = within(held, sp)
		if err := j.copyHeld(ctx, log, keep); err != nil {
			return keep, err
		}
	}
	if err := j.cfg.Keyring.Destroy(ctx, log, epoch); err != nil {
		return keep, fmt.Errorf("retention: destroy %s %s: %w", log, epoch, err)
	}
	return keep, nil
}

func (j *Job) step(n int) {
	if j.cfg.AfterStep != nil {
		j.cfg.AfterStep(n)
	}
}

// heldChunk bounds the held copies one catalog write records or forgets (copyHeld,
// expire): a hold over many events costs a write per heldChunk of them, and a crash
// repeats at most one chunk's object writes.
const heldChunk = 1000

// copyHeld re-encrypts the payloads of seqs that have no held copy yet under the hold
// key: the objects first, then their catalog rows, heldChunk at a time.
func (j *Job) copyHeld(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	have, err := j.cfg.Catalog.HeldPayloads(ctx, log, seqs[0], seqs[len(seqs)-1])
	if err != nil {
		return fmt.Errorf("retention: held payloads of %s: %w", log, err)
	}
	var todo []uint64
	for _, s := range seqs {
		if _, found := slices.BinarySearch(have, s); !found {
			todo = append(todo, s)
		}
	}
	for chunk := range slices.Chunk(todo, heldChunk) {
		if err := j.copyChunk(ctx, log, chunk); err != nil {
			return err
		}
	}
	return nil
}

// copyChunk is copyHeld for at most heldChunk sequences without a copy.
func (j *Job) copyChunk(ctx context.Context, log catalog.LogID, todo []uint64) error {
	evs, err := j.cfg.Reader.Events(ctx, log, todo)
	if err != nil {
		return fmt.Errorf("retention: read held events of %s: %w", log, err)
	}
	copied := make([]uint64, 0, len(evs))
	for _, e := range evs {
		if e.Nonce == nil {
			continue // already shredded before the hold: nothing left to keep
		}
		seq := e.Leaf.Sequence
		plain := append(append(make([]byte, 0, len(e.Nonce)+len(e.Payload)), e.Nonce[:]...), e.Payload...)
		ct, err := j.cfg.Keyring.Encrypt(ctx, log, sequencer.HoldEpoch, plain, sequencer.PayloadAAD(log, seq, e.Leaf.ID))
		if err != nil {
			return fmt.Errorf("retention: re-encrypt %s #%d: %w", log, seq, err)
		}
		key, err := sequencer.HeldKey(log, seq)
		if err != nil {
			return err
		}
		if err := j.cfg.Store.Put(ctx, key, ct, tiles.PrivateAttrs); err != nil {
			return fmt.Errorf("retention: store held copy of %s #%d: %w", log, seq, err)
		}
		copied = append(copied, seq)
	}
	slices.Sort(copied)
	if err := j.cfg.Catalog.AddHeldPayloads(ctx, log, copied); err != nil {
		return fmt.Errorf("retention: record %d held copies of %s: %w", len(copied), log, err)
	}
	return nil
}

// record seals the retention.shredded record of (log, epoch) unless the project_audit
// index has it already.
func (j *Job) record(ctx context.Context, log catalog.LogID, epoch string, sp catalog.Span, held int) error {
	target := string(log.Stream) + "/" + epoch
	audit := catalog.LogID{ProjectID: log.ProjectID, Stream: catalog.StreamProjectAudit}
	got, err := j.cfg.Catalog.QueryEvents(ctx, catalog.Query{Log: audit, Action: ActionShredded, TargetID: target, Limit: 1})
	if err != nil {
		return fmt.Errorf("retention: look for the record of %s %s: %w", log, epoch, err)
	}
	if len(got) > 0 {
		return nil
	}
	meta := map[string]any{"stream": string(log.Stream), "epoch": epoch, "firstSequence": sp.First,
		"lastSequence": sp.Last, "count": sp.Count, "held": held}
	if err := j.cfg.Auditor.AuditService(ctx, log.ProjectID, ActionShredded,
		control.Actor{Type: "epoch", ID: target}, meta); err != nil {
		return fmt.Errorf("retention: record the shredding of %s %s: %w", log, epoch, err)
	}
	return nil
}

// expire lets go the held copies of log's events that no active hold names any more
// and whose epoch is shredded, heldChunk at a time: the objects are deleted first,
// then the events' index values are scrubbed as their epoch's were (one catalog pass
// for the chunk), then their rows go. The holds are read after the copies, not at the
// start of the pass: a hold created while an epoch was being shredded has its events
// copied by step 5 and must keep them.
func (j *Job) expire(ctx context.Context, log catalog.LogID) error {
	copies, err := j.cfg.Catalog.HeldPayloads(ctx, log, 1, 1<<62)
	if err != nil {
		return fmt.Errorf("retention: held payloads of %s: %w", log, err)
	}
	if len(copies) == 0 {
		return nil
	}
	held, err := j.heldSeqs(ctx, log)
	if err != nil {
		return err
	}
	released := slices.DeleteFunc(copies, func(seq uint64) bool {
		_, still := slices.BinarySearch(held, seq)
		return still
	})
	for chunk := range slices.Chunk(released, heldChunk) {
		for _, seq := range chunk {
			key, err := sequencer.HeldKey(log, seq)
			if err != nil {
				return err
			}
			if err := j.cfg.Store.Delete(ctx, key); err != nil && !errors.Is(err, tiles.ErrNotFound) {
				return fmt.Errorf("retention: delete held copy of %s #%d: %w", log, seq, err)
			}
		}
		if _, err := j.cfg.Catalog.ScrubEventSeqs(ctx, log, chunk); err != nil {
			return fmt.Errorf("retention: scrub %d released events of %s: %w", len(chunk), log, err)
		}
		if err := j.cfg.Catalog.RemoveHeldPayloads(ctx, log, chunk); err != nil {
			return fmt.Errorf("retention: forget %d held copies of %s: %w", len(chunk), log, err)
		}
	}
	return nil
}
