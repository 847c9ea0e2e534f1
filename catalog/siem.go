package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// DestState is the delivery state of a SIEM destination.
type DestState string

// Destination states. A runner delivers only an active destination. After too many
// failed attempts in a row it moves the destination to dead_letter, where it stays,
// cursor kept, until the operator resumes it; paused is the operator's own stop.
const (
	DestActive     DestState = "active"
	DestPaused     DestState = "paused"
	DestDeadLetter DestState = "dead_letter"
)

// Valid reports whether s is a destination state.
func (s DestState) Valid() bool { return s == DestActive || s == DestPaused || s == DestDeadLetter }

// Destination is one SIEM stream of a project-stream: where its events go (Kind and the
// kind's Config, JSON the siem package defines), in which Format, and how far delivery
// got. Cursor is the last sequence delivered and acknowledged by the receiver; a
// runner resumes after it, so a restart loses nothing and reorders nothing.
type Destination struct {
	ID        string // "dst_..."
	ProjectID string
	Stream    Stream
	Name      string
	Kind      string // "syslog", "hec", "webhook"
	Format    string // "ocsf", "cef", "json"
	Config    []byte // JSON, the kind's settings; the siem package seals their secrets with the KEK
	State     DestState
	Cursor    uint64
	// Attempts counts failed deliveries of the batch after Cursor since the last
	// success; LastError is the newest failure, FailedAt its time.
	Attempts  int
	LastError string
	FailedAt  time.Time
	// LeaseOwner holds the delivery lease until LeaseUntil: one runner per destination
	// across replicas.
	LeaseOwner string
	LeaseUntil time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Log is the project-stream the destination reads.
func (d *Destination) Log() LogID { return LogID{ProjectID: d.ProjectID, Stream: d.Stream} }

// Validate checks the stored fields of d.
func (d *Destination) Validate() error {
	if !strings.HasPrefix(d.ID, "dst_") || len(d.ID) > 128 {
		return fmt.Errorf("%w: destination id %q must start with dst_", ErrInvalid, d.ID)
	}
	if err := d.Log().Validate(); err != nil {
		return err
	}
	if len(d.Name) > maxTextLen || !utf8.ValidString(d.Name) || strings.ContainsRune(d.Name, 0) {
		return fmt.Errorf("%w: destination name", ErrInvalid)
	}
	if d.Kind == "" || d.Format == "" || len(d.Config) == 0 || len(d.Config) > 64<<10 {
		return fmt.Errorf("%w: destination needs a kind, a format and a config of at most 64 KiB", ErrInvalid)
	}
	if !d.State.Valid() {
		return fmt.Errorf("%w: destination state %q", ErrInvalid, d.State)
	}
	return nil
}

// SIEMCatalog is the catalog side of SIEM streaming; both drivers implement it and pass
// catalogtest.RunSIEM. Every method may be called concurrently, from any replica.
type SIEMCatalog interface {
	CreateDestination(ctx context.Context, d Destination) (Destination, error)
	Destination(ctx context.Context, projectID, id string) (Destination, error)
	// ListDestinations lists a project's destinations in id order; projectID ""
	// lists every project's.
	ListDestinations(ctx context.Context, projectID string) ([]Destination, error)
	DeleteDestination(ctx context.Context, projectID, id string) error
	// SetDestinationState is the operator's pause and resume; resuming clears the
	// failure count and error, so a dead-lettered destination retries from its cursor.
	SetDestinationState(ctx context.Context, projectID, id string, state DestState, at time.Time) (Destination, error)
	// LeaseDestination gives owner the delivery lease until now+ttl if no one else
	// holds an unexpired one (ErrConflict otherwise), and returns the row as leased.
	LeaseDestination(ctx context.Context, id, owner string, now time.Time, ttl time.Duration) (Destination, error)
	// AdvanceDestination moves the cursor from from to to (to > from) and clears the
	// failures, only while owner holds an unexpired lease and the cursor is still
	// from: ErrConflict otherwise, and nothing changes.
	AdvanceDestination(ctx context.Context, id, owner string, from, to uint64, now time.Time) error
	// FailDestination records a failed attempt of owner (lease held, else
	// ErrConflict): attempts and the error; dead moves the destination to
	// dead_letter.
	FailDestination(ctx context.Context, id, owner string, attempts int, lastErr string, dead bool, now time.Time) error
	// ReplaceDestinationConfig sets the config of destination id to config only if it
	// is still old, byte for byte, and reports whether it did (the KEK rotation
	// rewraps a destination's sealed secrets: a row deleted or changed meanwhile is
	// left alone). Nothing else of the row changes.
	ReplaceDestinationConfig(ctx context.Context, id string, old, config []byte) (bool, error)
}

// TrimError shortens an error text to what the catalog stores.
func TrimError(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "?")
	if len(s) > 1024 {
		s = s[:1024]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
