package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Project is the isolation unit: its own keys, members, retention and trees.
type Project struct {
	ID        string // "prj_..."
	Name      string
	CreatedAt time.Time
	// RequireSigned is derived, never stored: true while the project has at least one
	// active customer signing key, when unsigned events are rejected.
	RequireSigned bool
	// IngestRateLimit is the operator's override of the ingest rate limit for every API
	// key of the project, in requests per rate window; 0 means the service default.
	IngestRateLimit int
}

// MaxIngestRateLimit bounds a project's ingest rate limit override.
const MaxIngestRateLimit = 100_000_000

// Validate checks the stored fields of p.
func (p *Project) Validate() error {
	if !ValidProjectID(p.ID) {
		return fmt.Errorf("%w: project id %q must be prj_ and 1 to 124 of [A-Za-z0-9_-]", ErrInvalid, p.ID)
	}
	if len(p.Name) > maxTextLen {
		return fmt.Errorf("%w: project name too long", ErrInvalid)
	}
	if p.IngestRateLimit < 0 || p.IngestRateLimit > MaxIngestRateLimit {
		return fmt.Errorf("%w: ingest rate limit must be 0 (the default) to %d", ErrInvalid, MaxIngestRateLimit)
	}
	return nil
}

// API key scopes, as the spec names them.
const (
	ScopeWrite  = "log:write"
	ScopeRead   = "log:read"
	ScopeExport = "log:export"
	ScopeVerify = "log:verify"
)

// KeyState is the state of an API key or a signing key.
type KeyState string

// Key states. Expired is derived from ExpiresAt at the time asked.
const (
	KeyActive  KeyState = "active"
	KeyRevoked KeyState = "revoked"
	KeyExpired KeyState = "expired"
)

// APIKey is a project's bearer token, stored as a hash only; the token itself is shown
// once at creation and never stored.
type APIKey struct {
	ID        string
	ProjectID string
	Name      string
	// Hash is the hash of the secret (the HTTP API picks the function, e.g. SHA-256 of
	// a 256-bit random token); unique across all projects.
	Hash []byte
	// Prefix is the first characters of the token, for display.
	Prefix    string
	Scopes    []string
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never expires
	RevokedAt time.Time // zero: not revoked
}

// State returns the key's state at now.
func (k *APIKey) State(now time.Time) KeyState {
	switch {
	case !k.RevokedAt.IsZero():
		return KeyRevoked
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return KeyExpired
	}
	return KeyActive
}

// HasScope reports whether the key carries scope.
func (k *APIKey) HasScope(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Validate checks the stored fields of k.
func (k *APIKey) Validate() error {
	if k.ID == "" || k.ProjectID == "" || len(k.Hash) < 16 || len(k.Hash) > 64 {
		return fmt.Errorf("%w: API key needs an id, a project and a 16-64 byte hash", ErrInvalid)
	}
	if len(k.Scopes) == 0 {
		return fmt.Errorf("%w: API key %s has no scope", ErrInvalid, k.ID)
	}
	for _, s := range k.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\n,") {
			return fmt.Errorf("%w: scope %q", ErrInvalid, s)
		}
	}
	return nil
}

// Member is a person's role in a project; (ProjectID, Email) is unique.
type Member struct {
	ProjectID string
	Email     string
	Role      string
	CreatedAt time.Time
}

// SigningKey is a customer's registered Ed25519 public key.
type SigningKey struct {
	ID        string
	ProjectID string
	PublicKey string // lowercase hex, 32 bytes
	CreatedAt time.Time
	RevokedAt time.Time // zero: active
}

// State returns the key's state (signing keys do not expire).
func (k *SigningKey) State() KeyState {
	if !k.RevokedAt.IsZero() {
		return KeyRevoked
	}
	return KeyActive
}

// Validate checks the stored fields of k.
func (k *SigningKey) Validate() error {
	if k.ID == "" || k.ProjectID == "" {
		return fmt.Errorf("%w: signing key needs an id and a project", ErrInvalid)
	}
	if len(k.PublicKey) != 64 || strings.Trim(k.PublicKey, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: signing public key must be 32 bytes of lowercase hex", ErrInvalid)
	}
	return nil
}

// Retention is how long a project-stream keeps payloads before their keys are shredded.
type Retention struct {
	Log       LogID
	Days      int
	UpdatedAt time.Time
}

// Validate checks the policy before a driver stores it: a valid project-stream and a
// positive number of days.
func (r Retention) Validate() error {
	if err := r.Log.Validate(); err != nil {
		return err
	}
	if r.Days <= 0 {
		return fmt.Errorf("%w: retention of %d days", ErrInvalid, r.Days)
	}
	return nil
}

// HoldState is the state of a legal hold.
type HoldState string

// Legal hold states.
const (
	HoldActive   HoldState = "active"
	HoldReleased HoldState = "released"
)

// LegalHold keeps a set of events from retention. MembershipRoot is the Merkle root
// over EventIDs that the project-audit stream commits to.
type LegalHold struct {
	ID             string
	ProjectID      string
	MembershipRoot Hash
	EventIDs       []string // in membership-tree order
	CreatedAt      time.Time
	ReleasedAt     time.Time // zero while active
}

// State returns the hold's state.
func (h *LegalHold) State() HoldState {
	if !h.ReleasedAt.IsZero() {
		return HoldReleased
	}
	return HoldActive
}

// DataKey is a project-stream's payload key for one retention epoch, stored only wrapped
// by a key-encryption key. Destroying it (crypto-shredding) deletes Wrapped for good.
type DataKey struct {
	Log   LogID
	Epoch string // e.g. "2026-11" or "2026-11-21"
	KeyID string // random, unique; carried in every ciphertext
	// KEKID names the key-encryption key that wrapped it.
	KEKID       string
	Wrapped     []byte // nil once destroyed
	CreatedAt   time.Time
	DestroyedAt time.Time // zero while live
}

// Destroyed reports whether the key has been shredded.
func (k *DataKey) Destroyed() bool { return !k.DestroyedAt.IsZero() }

// ValidateDataKey checks what both drivers require of a data key to store: a valid
// project-stream, an epoch, a key id, a KEK id and wrapped bytes.
func ValidateDataKey(k DataKey) error {
	if err := k.Log.Validate(); err != nil {
		return err
	}
	if k.Epoch == "" || k.KeyID == "" || k.KEKID == "" || len(k.Wrapped) == 0 {
		return fmt.Errorf("%w: data key needs an epoch, a key id, a KEK id and wrapped bytes", ErrInvalid)
	}
	return nil
}

// TreeHead is a signed tree head of one project-stream, as recorded in the service-wide
// tree_heads log, with its anchor once published.
type TreeHead struct {
	Log       LogID
	TreeSize  uint64
	RootHash  Hash
	Timestamp time.Time
	Signature []byte
	Anchor    *Anchor // nil until published
	// Index is the head's leaf index in the tree_heads log when InLog; a head recorded
	// with AddTreeHead is not in that log.
	Index uint64
	InLog bool
}

// Anchor is where a tree head was published in an external transparency log.
type Anchor struct {
	Type       string
	Ref        string
	Proof      []byte // JSON, opaque to the catalog
	AnchoredAt time.Time
}
