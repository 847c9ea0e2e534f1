// Package control is Sealtrail's control plane: projects, API keys, members, customer
// signing keys, retention policies and legal holds. Every change is recorded in the
// project's project_audit stream, through the sequencer, with the actor who made it,
// before the change is acknowledged.
//
// Order of each change: validate everything that can be checked (bad input changes
// nothing, the audit stream included), seal the audit record, then apply the change
// to the catalog. If applying fails after the record is sealed, a second record
// "<action>.failed" says so, and the caller gets an error: the audit stream never
// claims a change that silently did not happen.
package control

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tlog"
)

// Catalog is the part of the SQL catalog the control plane uses.
type Catalog interface {
	CreateProject(ctx context.Context, p catalog.Project) (catalog.Project, error)
	Project(ctx context.Context, id string) (catalog.Project, error)
	ListProjects(ctx context.Context, afterID string, limit int) ([]catalog.Project, error)
	SetIngestRateLimit(ctx context.Context, projectID string, limit int) (catalog.Project, error)
	SetPublicRead(ctx context.Context, projectID string, on bool) error
	PublicRead(ctx context.Context, projectID string) (bool, error)

	CreateAPIKey(ctx context.Context, k catalog.APIKey) (catalog.APIKey, error)
	APIKeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error)
	ListAPIKeys(ctx context.Context, projectID string) ([]catalog.APIKey, error)
	RevokeAPIKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.APIKey, error)

	AddMember(ctx context.Context, m catalog.Member) (catalog.Member, error)
	ListMembers(ctx context.Context, projectID string) ([]catalog.Member, error)
	RemoveMember(ctx context.Context, projectID, email string) error

	CreateSigningKey(ctx context.Context, k catalog.SigningKey) (catalog.SigningKey, error)
	SigningKey(ctx context.Context, projectID, keyID string) (catalog.SigningKey, error)
	ListSigningKeys(ctx context.Context, projectID string) ([]catalog.SigningKey, error)
	RevokeSigningKey(ctx context.Context, projectID, keyID string, at time.Time) (catalog.SigningKey, error)

	SetRetention(ctx context.Context, r catalog.Retention) (catalog.Retention, error)
	ListRetention(ctx context.Context, projectID string) ([]catalog.Retention, error)

	CreateLegalHold(ctx context.Context, h catalog.LegalHold) (catalog.LegalHold, error)
	LegalHold(ctx context.Context, projectID, holdID string) (catalog.LegalHold, error)
	ListLegalHolds(ctx context.Context, projectID string) ([]catalog.LegalHold, error)
	ReleaseLegalHold(ctx context.Context, projectID, holdID string, at time.Time) (catalog.LegalHold, error)

	EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error)

	DigestCatalog
}

// Sequencer seals audit records.
type Sequencer interface {
	Submit(ctx context.Context, log catalog.LogID, e sequencer.Entry) (sequencer.Result, error)
}

// Errors the control plane returns, wrapped; the operator API maps them to statuses.
var (
	// ErrInvalid: bad input; nothing changed.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: the project, key, member or hold does not exist (in this project).
	ErrNotFound = errors.New("not found")
	// ErrExists: a duplicate member or key.
	ErrExists = errors.New("already exists")
	// ErrState: the change does not apply in the subject's state (revoking a revoked
	// key, releasing a released hold).
	ErrState = errors.New("not allowed in the current state")
)

// Actor is who made a change: an operator, a project member, or the service itself.
type Actor struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Display string `json:"display,omitempty"`
}

// Service is the control plane.
type Service struct {
	cat Catalog
	seq Sequencer
	log *slog.Logger
	now func() time.Time

	auth      *ttlCache[catalog.APIKey]
	limits    *ttlCache[int]
	suspended *ttlCache[string] // suspension reason by project, "" when none
	signing   *ttlCache[[]catalog.SigningKey]
	fresh     *freshness // nil: the catalog keeps no generation (cache.go)
}

// New returns the control plane over cat, sealing audit records with seq.
func New(cat Catalog, seq Sequencer, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cat: cat, seq: seq, log: log, now: time.Now, auth: newTTLCache[catalog.APIKey](time.Second),
		limits: newTTLCache[int](time.Second), suspended: newTTLCache[string](time.Second),
		signing: newTTLCache[[]catalog.SigningKey](time.Second), fresh: newFreshness(cat, time.Second)}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// checkText refuses text PostgreSQL cannot store (U+0000, invalid UTF-8) with an
// ErrInvalid naming what, so that both catalogs answer it alike, with a 400.
func checkText(what, s string) error {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return invalid("%s must be UTF-8 without U+0000 (NUL)", what)
	}
	return nil
}

// mapCatalog turns catalog errors into this package's.
func mapCatalog(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, catalog.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	case errors.Is(err, catalog.ErrExists):
		return fmt.Errorf("%w: %s", ErrExists, what)
	case errors.Is(err, catalog.ErrInvalid):
		return fmt.Errorf("%w: %s: %w", ErrInvalid, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// record describes one control-plane change for the audit stream.
type record struct {
	action   string
	target   Actor // the subject: {type: "api_key", id: ...}
	metadata map[string]any
}

// change seals rec in the project's audit stream, then runs apply. See the package
// comment for what happens when apply fails.
func (s *Service) change(ctx context.Context, projectID string, actor Actor, rec record, apply func() error) error {
	if err := s.audit(ctx, projectID, actor, rec, "success"); err != nil {
		return err
	}
	if err := apply(); err != nil {
		failed := record{action: rec.action + ".failed", target: rec.target, metadata: map[string]any{"error": err.Error()}}
		if aerr := s.audit(context.WithoutCancel(ctx), projectID, actor, failed, "failed"); aerr != nil {
			s.log.ErrorContext(ctx, "could not record a failed control-plane change", "project", projectID,
				"action", rec.action, "err", err, "audit_err", aerr)
		}
		return err
	}
	return nil
}

// audit seals one record in projectID's project_audit stream.
func (s *Service) audit(ctx context.Context, projectID string, actor Actor, rec record, status string) error {
	if actor.Type == "" || actor.ID == "" {
		return invalid("the actor of a change needs a type and an id")
	}
	body := map[string]any{
		"action": rec.action,
		"actor":  actor,
		"status": status,
		"target": rec.target,
	}
	if len(rec.metadata) > 0 {
		body["metadata"] = rec.metadata
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	payload, err := tlog.Canonicalize(raw)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	_, err = s.seq.Submit(ctx, catalog.LogID{ProjectID: projectID, Stream: catalog.StreamProjectAudit}, sequencer.Entry{
		Payload: payload,
		Index: sequencer.Index{Action: rec.action, Status: status, ActorType: actor.Type, ActorID: actor.ID,
			TargetType: rec.target.Type, TargetID: rec.target.ID},
	})
	if err != nil {
		return fmt.Errorf("seal audit record %s: %w", rec.action, err)
	}
	return nil
}

// newID returns prefix followed by 26 Crockford base32 characters of randomness.
func newID(prefix string) (string, error) {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	var b [26]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return prefix + string(b[:]), nil
}

// requireProject checks that the project exists.
func (s *Service) requireProject(ctx context.Context, projectID string) (catalog.Project, error) {
	if projectID == "" {
		return catalog.Project{}, invalid("a project id is required")
	}
	p, err := s.cat.Project(ctx, projectID)
	return p, mapCatalog(err, "project "+projectID)
}

func notFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

func invalidExists(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrExists, fmt.Sprintf(format, args...))
}

func stateErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrState, fmt.Sprintf(format, args...))
}
