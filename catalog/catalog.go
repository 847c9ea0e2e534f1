// Package catalog is the SQL side of Sealtrail: projects, API keys, members, customer
// signing keys, retention, legal holds, wrapped data keys, one checkpoint row per
// project-stream, the committed batches, the event index, signed tree heads and anchors.
// No payload plaintext or ciphertext lives here; payloads are in object storage under the
// names the batch rows give.
//
// This package holds the shared types, errors and validation. The drivers are
// catalog/postgres (pgx, the production database) and catalog/sqlite (embedded, the
// zero-setup default); both have the method set of [Catalog] and pass the one
// conformance suite in catalog/catalogtest. Consumers (the sequencer, the HTTP API, the
// keyring) declare the narrow interfaces they need; [Catalog] exists so the conformance
// suite can hold both drivers and so the two cannot drift apart.
//
// Design notes and the durability choices of each driver: docs/catalog.md.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// Hash is a SHA-256 hash, the same type as the tlog package's Hash.
type Hash = tlog.Hash

// Stream names a project's log as stored and signed: "events" or "project_audit".
type Stream string

// The two streams of every project.
const (
	StreamEvents       Stream = "events"
	StreamProjectAudit Stream = "project_audit"
)

// Valid reports whether s is one of the two stream names.
func (s Stream) Valid() bool { return s == StreamEvents || s == StreamProjectAudit }

// LogID names one project-stream: one transparency log, one checkpoint row.
type LogID struct {
	ProjectID string
	Stream    Stream
}

// ValidProjectID reports whether id has the form of a project id: "prj_" and then 1
// to 124 characters of [A-Za-z0-9_-] (the service mints "prj_" and 26 of
// [0-9a-z]). A project id is a path segment of every object key of its logs and part
// of their origin lines, so no "/", ".", space, control or non-ASCII character may
// appear in it.
func ValidProjectID(id string) bool {
	if len(id) <= len("prj_") || len(id) > 128 || id[:4] != "prj_" {
		return false
	}
	for i := 4; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (l LogID) String() string { return l.ProjectID + "/" + string(l.Stream) }

// Validate reports whether l names a possible project-stream.
func (l LogID) Validate() error {
	if !ValidProjectID(l.ProjectID) {
		return fmt.Errorf("%w: project id %q", ErrInvalid, l.ProjectID)
	}
	if !l.Stream.Valid() {
		return fmt.Errorf("%w: stream %q", ErrInvalid, l.Stream)
	}
	return nil
}

// Errors the drivers return, wrapped with detail; test them with errors.Is.
var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("catalog: not found")
	// ErrExists: a row with the same unique key already exists (a duplicate event id,
	// API key, member, signing key, hold).
	ErrExists = errors.New("catalog: already exists")
	// ErrConflict: the write contradicts committed state: a seal that does not extend
	// the checkpoint it read, a tree head of a known size with another root, a published
	// size beyond the committed size.
	ErrConflict = errors.New("catalog: conflict")
	// ErrInvalid: the caller passed a value the catalog cannot store.
	ErrInvalid = errors.New("catalog: invalid argument")
)

// Catalog is the method set both drivers implement, so that the conformance suite can
// exercise them and they cannot drift apart. Consumers should declare the few methods
// they use as their own interface instead of depending on this one.
//
// Every method may be called concurrently. Every write is durable when it returns nil
// (see docs/catalog.md for each driver's sync settings).
type Catalog interface {
	Close()

	// Seal is the sequencer's commit path for one project-stream; see [SealFunc].
	Seal(ctx context.Context, log LogID, fn SealFunc) (Checkpoint, error)
	// SealGroup is the group commit: it takes, without waiting, the locks of the
	// project-streams of logs that no one else holds (in SortLogs order), runs fn with
	// their checkpoints, and commits every batch fn returns in one transaction. It
	// returns one Sealed per log, in the order of logs. Any error commits nothing.
	SealGroup(ctx context.Context, logs []LogID, fn SealGroupFunc) ([]Sealed, error)
	Checkpoint(ctx context.Context, log LogID) (Checkpoint, error)
	// Publish is the materializer's path: fn runs under the publish lock (apart from
	// the seal lock), and published_size becomes cp.Size if fn succeeds.
	Publish(ctx context.Context, log LogID, fn PublishFunc) (Checkpoint, error)
	// PublishGroup is Publish for several distinct project-streams at once: it takes
	// their publish locks (in SortLogs order, waiting for them), runs fn once with all
	// their checkpoints, and records the published sizes of the streams fn published
	// in one write. It returns one Published per log, in the order of logs; an error
	// (the catalog's) records nothing.
	PublishGroup(ctx context.Context, logs []LogID, fn PublishGroupFunc) ([]Published, error)
	AdvancePublished(ctx context.Context, log LogID, size uint64) (Checkpoint, error)
	ListUnpublished(ctx context.Context) ([]Checkpoint, error)
	BatchesCovering(ctx context.Context, log LogID, first, last uint64) ([]Batch, error)

	EventByID(ctx context.Context, log LogID, id string) (Event, error)
	// EventSequence returns the sequence of EventByID's row alone (inclusion proofs by
	// event id), or ErrNotFound.
	EventSequence(ctx context.Context, log LogID, id string) (uint64, error)
	EventsByID(ctx context.Context, log LogID, ids []string) (map[string]Event, error)
	QueryEvents(ctx context.Context, q Query) ([]Event, error)
	// EventLeaves returns the sequence and leaf hash of log's index rows after
	// sequence after, in sequence order, at most limit of them (ClampLimit): what a
	// rebuild compares with the stored objects, without reading the rest of each row.
	EventLeaves(ctx context.Context, log LogID, after uint64, limit int) ([]EventLeaf, error)

	CreateProject(ctx context.Context, p Project) (Project, error)
	Project(ctx context.Context, id string) (Project, error)
	ListProjects(ctx context.Context, afterID string, limit int) ([]Project, error)
	// SetIngestRateLimit sets the project's ingest rate limit override (0 clears it).
	SetIngestRateLimit(ctx context.Context, projectID string, limit int) (Project, error)

	CreateAPIKey(ctx context.Context, k APIKey) (APIKey, error)
	APIKeyByHash(ctx context.Context, hash []byte) (APIKey, error)
	ListAPIKeys(ctx context.Context, projectID string) ([]APIKey, error)
	RevokeAPIKey(ctx context.Context, projectID, keyID string, at time.Time) (APIKey, error)

	AddMember(ctx context.Context, m Member) (Member, error)
	ListMembers(ctx context.Context, projectID string) ([]Member, error)
	RemoveMember(ctx context.Context, projectID, email string) error

	CreateSigningKey(ctx context.Context, k SigningKey) (SigningKey, error)
	SigningKey(ctx context.Context, projectID, keyID string) (SigningKey, error)
	ListSigningKeys(ctx context.Context, projectID string) ([]SigningKey, error)
	RevokeSigningKey(ctx context.Context, projectID, keyID string, at time.Time) (SigningKey, error)

	SetRetention(ctx context.Context, r Retention) (Retention, error)
	Retention(ctx context.Context, log LogID) (Retention, error)
	ListRetention(ctx context.Context, projectID string) ([]Retention, error)

	CreateLegalHold(ctx context.Context, h LegalHold) (LegalHold, error)
	LegalHold(ctx context.Context, projectID, holdID string) (LegalHold, error)
	ListLegalHolds(ctx context.Context, projectID string) ([]LegalHold, error)
	ReleaseLegalHold(ctx context.Context, projectID, holdID string, at time.Time) (LegalHold, error)

	InsertDataKey(ctx context.Context, k DataKey) (DataKey, error)
	InsertDataKeys(ctx context.Context, ks []DataKey) ([]DataKey, error)
	DataKey(ctx context.Context, log LogID, epoch string) (DataKey, error)
	ListDataKeys(ctx context.Context, log LogID) ([]DataKey, error)
	DestroyDataKey(ctx context.Context, log LogID, epoch string, at time.Time) (DataKey, error)

	AddTreeHead(ctx context.Context, h TreeHead) (TreeHead, error)
	LatestTreeHead(ctx context.Context, log LogID) (TreeHead, error)
	ListTreeHeads(ctx context.Context, log LogID, limit int) ([]TreeHead, error)
	SetAnchor(ctx context.Context, log LogID, treeSize uint64, a Anchor) (TreeHead, error)

	MailStore // mail.go
	AnchorCatalog
	PublicReadCatalog
}

// MS truncates t to the millisecond precision the catalog stores, in UTC. The zero time
// stays zero.
func MS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

// FromUnixMS is the inverse of t.UnixMilli for stored times; 0 means the zero time.
func FromUnixMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Limits the catalog enforces on page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 10000
)

// ClampLimit applies the default and maximum page size.
func ClampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}
