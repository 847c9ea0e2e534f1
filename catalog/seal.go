package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Checkpoint is the committed state of one project-stream's tree: the one row that the
// sequencer locks, reads and advances at each batch.
type Checkpoint struct {
	Log LogID
	// Size is the number of committed leaves; sequences 1..Size exist.
	Size uint64
	// Root is the RFC 6962 root of the first Size leaves. It is the zero hash while
	// Size is 0 (the catalog stores what the sequencer gives it).
	Root Hash
	// Range holds the hashes of the compact range [0, Size) (transparency-dev/merkle
	// compact.Range.Hashes), enough to append without reading tiles.
	Range []Hash
	// PublishedSize is the size up to which tiles, entry bundles and the checkpoint note
	// have been written to object storage. PublishedSize <= Size; recovery
	// materializes (PublishedSize, Size] at start-up.
	PublishedSize uint64
	CreatedAt     time.Time // first seal (row creation)
	UpdatedAt     time.Time // last committed seal
}

// Batch is one committed batch: sequences First..First+Count-1, whose encrypted
// payloads are in the payload bundle the batch names: with Object empty (batches
// sealed before the group payload object), the object payload/<First>-<BatchID>
// under the stream's prefix; else the bytes [Offset, Offset+Length) of the tick's
// group object Object (a store key, shared by the streams of one tick).
type Batch struct {
	Log       LogID
	First     uint64
	Count     uint64
	BatchID   string
	Object    string
	Offset    uint64
	Length    uint64
	CreatedAt time.Time
}

// End returns the sequence after the batch's last one.
func (b Batch) End() uint64 { return b.First + b.Count }

// Event is one row of the event index. The payload itself is in the batch's payload
// object; the index holds what queries filter on and what retries and proofs need.
type Event struct {
	Sequence   uint64
	ID         string
	ReceivedAt time.Time // millisecond precision, UTC
	Action     string
	Status     string
	ActorType  string
	ActorID    string
	TargetType string // "" when the event has no target
	TargetID   string
	// PayloadHash is the commitment SHA-256(nonce || JCS(payload)); a re-sent signed
	// event with the same id is the same event only if its commitment is equal.
	PayloadHash Hash
	// LeafHash is the RFC 6962 leaf hash, served with inclusion proofs.
	LeafHash Hash
}

// EventLeaf is the part of an index row that a rebuild compares with the stored
// objects ([Catalog.EventLeaves]).
type EventLeaf struct {
	Sequence uint64
	LeafHash Hash
}

// SealBatch is what a [SealFunc] returns: the batch to commit under the lock.
type SealBatch struct {
	// BatchID names the payload object already written; random, so a failed batch
	// never collides with the batch that replaces it.
	BatchID string
	// Object, Offset and Length, if Object is set, name the batch's segment of the
	// tick's group payload object (see Batch); unset, the payload object is the
	// batch's own.
	Object         string
	Offset, Length uint64
	// Events are the index rows, with sequences cp.Size+1 .. cp.Size+len(Events) in
	// order.
	Events []Event
	// Root and Range are the tree state after appending the batch's leaves.
	Root  Hash
	Range []Hash
	// Durable, if set, waits until the payload object is durable and returns its
	// error. The driver calls it after writing the rows and before the commit, and
	// rolls back if it fails, so the object write can overlap the row inserts while
	// the commit still never names an object that is not durable (invariant 4).
	Durable func() error
}

// PublishFunc is the type of the function Publish runs under the publish lock (the
// drivers spell it out as a func literal type, so consumers' interfaces can too).
type PublishFunc = func(ctx context.Context, cp Checkpoint) error

// SealFunc runs while the project-stream lock is held, with the checkpoint read under
// that lock. It assigns sequences from cp.Size+1, encrypts, builds leaves, writes the
// payload object (or starts writing it, see SealBatch.Durable) and returns the batch
// to commit. Returning an error, or a batch with
// no events, commits nothing and releases the lock; the error is returned by Seal.
//
// fn must not call Seal for the same project-stream (it would deadlock). It may read
// the catalog through other methods: the rows it reads are committed ones, and no other
// seal of this project-stream can commit while fn runs.
type SealFunc func(ctx context.Context, cp Checkpoint) (*SealBatch, error)

// Limits on index values; the HTTP API enforces the spec's own, stricter ones.
const (
	maxIDLen    = 256
	maxTextLen  = 1024
	maxBatchLen = 1 << 20
)

// ValidateSeal checks that b extends cp: contiguous sequences right after cp.Size,
// distinct non-empty ids, sane index values and a range that is not absurd. Drivers call
// it before writing anything.
func ValidateSeal(cp Checkpoint, b *SealBatch) error {
	if b.BatchID == "" || len(b.BatchID) > maxIDLen {
		return fmt.Errorf("%w: batch id %q", ErrInvalid, b.BatchID)
	}
	if len(b.Object) > maxTextLen || b.Object != "" && (b.Length == 0 || b.Offset > 1<<62 || b.Length > 1<<62) {
		return fmt.Errorf("%w: payload object %q, segment %d+%d", ErrInvalid, b.Object, b.Offset, b.Length)
	}
	if len(b.Events) > maxBatchLen {
		return fmt.Errorf("%w: %d events in one batch", ErrInvalid, len(b.Events))
	}
	if len(b.Range) > 64 {
		return fmt.Errorf("%w: compact range of %d hashes", ErrInvalid, len(b.Range))
	}
	seen := make(map[string]struct{}, len(b.Events))
	for i := range b.Events {
		e := &b.Events[i]
		if want := cp.Size + 1 + uint64(i); e.Sequence != want {
			return fmt.Errorf("%w: event %d has sequence %d, want %d (checkpoint size %d)",
				ErrConflict, i, e.Sequence, want, cp.Size)
		}
		if e.ID == "" || len(e.ID) > maxIDLen || !utf8.ValidString(e.ID) {
			return fmt.Errorf("%w: event id %q", ErrInvalid, e.ID)
		}
		if _, dup := seen[e.ID]; dup {
			return fmt.Errorf("%w: event id %q twice in one batch", ErrExists, e.ID)
		}
		seen[e.ID] = struct{}{}
		if e.ReceivedAt.IsZero() {
			return fmt.Errorf("%w: event %q has no receive time", ErrInvalid, e.ID)
		}
		for _, s := range [...]string{e.Action, e.Status, e.ActorType, e.ActorID, e.TargetType, e.TargetID} {
			if len(s) > maxTextLen || !utf8.ValidString(s) {
				return fmt.Errorf("%w: event %q has an index value that is too long or not UTF-8", ErrInvalid, e.ID)
			}
		}
	}
	return nil
}

// JoinHashes concatenates hashes, the stored form of a compact range.
func JoinHashes(hs []Hash) []byte {
	out := make([]byte, 0, len(hs)*len(Hash{}))
	for _, h := range hs {
		out = append(out, h[:]...)
	}
	return out
}

// SplitHashes parses the stored form of a compact range.
func SplitHashes(b []byte) ([]Hash, error) {
	if len(b)%len(Hash{}) != 0 {
		return nil, fmt.Errorf("%w: stored compact range of %d bytes", ErrConflict, len(b))
	}
	hs := make([]Hash, len(b)/len(Hash{}))
	for i := range hs {
		copy(hs[i][:], b[i*len(Hash{}):])
	}
	return hs, nil
}

// HashFrom copies a stored 32-byte value into a Hash; a NULL (empty) value is the zero
// hash.
func HashFrom(b []byte) (Hash, error) {
	var h Hash
	if len(b) == 0 {
		return h, nil
	}
	if len(b) != len(h) {
		return h, fmt.Errorf("%w: stored hash of %d bytes", ErrConflict, len(b))
	}
	copy(h[:], b)
	return h, nil
}

// Direction selects which side of an event an entity query matches.
type Direction string

// Entity query directions, as the API names them.
const (
	DirectionAll      Direction = "all"      // actor or target
	DirectionOutgoing Direction = "outgoing" // what the entity did: actor
	DirectionIncoming Direction = "incoming" // what happened to it: target
)

// Entity is an event's actor or target, as indexed.
type Entity struct {
	Type string
	ID   string
}

// Query selects index rows of one project-stream. Empty string filters match anything;
// all given filters must match. Results are ordered by sequence.
type Query struct {
	Log      LogID
	Action   string
	Status   string
	ActorID  string
	TargetID string
	// From (inclusive) and To (exclusive) bound the receive time; zero means unbounded.
	From, To time.Time
	// Entity, when set, matches events whose actor (outgoing), target (incoming) or
	// either (all, the default) is this entity.
	Entity    *Entity
	Direction Direction
	// Cursor is the keyset position: ascending pages return sequences > Cursor,
	// descending pages sequences < Cursor (0 means from the newest). Pass the last
	// returned sequence to get the next page.
	Cursor     uint64
	Descending bool
	// Limit is the page size; see ClampLimit.
	Limit int
}

// Validate checks the query's log and direction.
func (q *Query) Validate() error {
	if err := q.Log.Validate(); err != nil {
		return err
	}
	switch q.Direction {
	case "", DirectionAll, DirectionIncoming, DirectionOutgoing:
	default:
		return fmt.Errorf("%w: direction %q", ErrInvalid, q.Direction)
	}
	return nil
}

// SealGroupFunc is what SealGroup runs once it holds the locks: cps are the checkpoints
// of the project-streams it locked, in the order of SealGroup's logs. It returns one
// batch per checkpoint (nil or empty: nothing for that stream) and, if not nil, a
// durable function that waits until every payload object the batches name is durable
// (the driver calls it after writing the rows, before the commit, as
// SealBatch.Durable). Returning an error commits nothing. A driver may run it twice in
// one SealGroup (the PostgreSQL driver does when the checkpoints it started from
// without a lock turn out stale): only the batches of the last run can commit.
type SealGroupFunc func(ctx context.Context, cps []Checkpoint) (batches []*SealBatch, durable func() error, err error)

// Sealed is the outcome of SealGroup for one project-stream.
type Sealed struct {
	// Locked is false for a project-stream whose lock another replica held: nothing
	// was sealed for it; try again in the next group.
	Locked bool
	// Checkpoint is the checkpoint after the commit (or as fn saw it, if its batch
	// was empty).
	Checkpoint Checkpoint
}

// SortLogs sorts logs in the order SealGroup takes their locks: by project id, then
// stream.
func SortLogs(logs []LogID) {
	slices.SortFunc(logs, func(a, b LogID) int {
		if c := strings.Compare(a.ProjectID, b.ProjectID); c != 0 {
			return c
		}
		return strings.Compare(string(a.Stream), string(b.Stream))
	})
}

// CheckGroup validates SealGroup's logs: valid, distinct project-streams.
func CheckGroup(logs []LogID) error {
	seen := make(map[LogID]struct{}, len(logs))
	for _, l := range logs {
		if err := l.Validate(); err != nil {
			return err
		}
		if _, dup := seen[l]; dup {
			return fmt.Errorf("%w: %s twice in one seal group", ErrInvalid, l)
		}
		seen[l] = struct{}{}
	}
	return nil
}

// After returns the checkpoint that committing b on cp leaves, updated at now.
func (cp Checkpoint) After(b *SealBatch, now time.Time) Checkpoint {
	next := cp
	next.Size = cp.Size + uint64(len(b.Events))
	next.Root = b.Root
	next.Range = append([]Hash(nil), b.Range...)
	next.UpdatedAt = now
	return next
}

// RunGroup runs a SealGroupFunc for the drivers and checks that it returned one batch
// per checkpoint.
func RunGroup(ctx context.Context, fn SealGroupFunc, cps []Checkpoint) ([]*SealBatch, func() error, error) {
	batches, durable, err := fn(ctx, cps)
	if err != nil {
		return nil, nil, err
	}
	if len(batches) != len(cps) {
		return nil, nil, fmt.Errorf("%w: seal group: %d batches for %d project-streams", ErrInvalid, len(batches), len(cps))
	}
	return batches, durable, nil
}
