package catalog

import (
	"context"
	"fmt"
	"time"
)

// Retention bookkeeping: the rows the retention job (package retention) and the
// operator's suspension and minimum-retention settings need. See docs/retention.md.

// Span is a range of sequences of one project-stream: First..Last, Count events in
// it (Count is 0, and First and Last are 0, when the range is empty).
type Span struct {
	First, Last, Count uint64
}

// Suspension is an operator's billing suspension of a project: while it exists the
// project's ingest is refused with 429 and Reason; reads keep working.
type Suspension struct {
	ProjectID string
	Reason    string
	Since     time.Time
}

// MaxReasonLen bounds a suspension reason.
const MaxReasonLen = 256

// Validate checks the stored fields of s.
func (s *Suspension) Validate() error {
	if s.ProjectID == "" || len(s.ProjectID) > 128 {
		return fmt.Errorf("%w: project id %q", ErrInvalid, s.ProjectID)
	}
	if s.Reason == "" || len(s.Reason) > MaxReasonLen {
		return fmt.Errorf("%w: a suspension reason of 1 to %d bytes", ErrInvalid, MaxReasonLen)
	}
	return nil
}

// ValidLease checks a lease's name, holder and time to live.
func ValidLease(name, holder string, ttl time.Duration) error {
	if name == "" || len(name) > maxIDLen || holder == "" || len(holder) > maxIDLen || ttl <= 0 {
		return fmt.Errorf("%w: lease %q for %q, ttl %s", ErrInvalid, name, holder, ttl)
	}
	return nil
}

// RetentionCatalog is what both drivers add for retention, minimum retention, billing
// suspension and leases; catalogtest.RunRetention is its conformance suite.
type RetentionCatalog interface {
	Catalog
	// DeleteRetention removes a stream's policy (keep forever); none is ErrNotFound.
	DeleteRetention(ctx context.Context, log LogID) error
	ListAllRetention(ctx context.Context) ([]Retention, error)
	SetMinRetention(ctx context.Context, projectID string, days int) error
	MinRetention(ctx context.Context, projectID string) (int, error)

	Suspend(ctx context.Context, s Suspension) (Suspension, error)
	Unsuspend(ctx context.Context, projectID string) error
	Suspension(ctx context.Context, projectID string) (Suspension, error)

	// TryLease takes or renews a named lease until now+ttl; false while another
	// holder's lease has not expired.
	TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error

	// EventSpan returns the sequences of the events received in [from, to).
	EventSpan(ctx context.Context, log LogID, from, to time.Time) (Span, error)
	// ScrubEvents blanks action, actor and target of the rows first..last except keep.
	ScrubEvents(ctx context.Context, log LogID, first, last uint64, keep []uint64) (int64, error)
	// ScrubEventSeqs blanks them in the rows of seqs (ascending), in one pass.
	ScrubEventSeqs(ctx context.Context, log LogID, seqs []uint64) (int64, error)
	// AddHeldPayloads and RemoveHeldPayloads record and forget the held copies of
	// seqs, each in one write.
	AddHeldPayloads(ctx context.Context, log LogID, seqs []uint64) error
	RemoveHeldPayloads(ctx context.Context, log LogID, seqs []uint64) error
	HeldPayloads(ctx context.Context, log LogID, first, last uint64) ([]uint64, error)
	// DestroyUnheldDataKey is DestroyDataKey made conditional, in one transaction that
	// legal-hold creation is serialized with: if an event of log in first..last is
	// named by an active legal hold and has no held payload, nothing changes and the
	// error wraps ErrConflict (the retention job copies it and tries again).
	DestroyUnheldDataKey(ctx context.Context, log LogID, epoch string, first, last uint64, at time.Time) (DataKey, error)
}

// CheckSeqs returns an error wrapping ErrInvalid unless seqs are positive and strictly
// ascending, as ScrubEventSeqs, AddHeldPayloads and RemoveHeldPayloads take them.
func CheckSeqs(seqs []uint64) error {
	for i, s := range seqs {
		if s == 0 || i > 0 && s <= seqs[i-1] {
			return fmt.Errorf("%w: sequence %d at %d is not above the one before it", ErrInvalid, s, i)
		}
	}
	return nil
}
