package siem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/tlog"
)

// AdminCatalog is the part of the catalog the operator side uses.
type AdminCatalog interface {
	CreateDestination(ctx context.Context, d catalog.Destination) (catalog.Destination, error)
	Destination(ctx context.Context, projectID, id string) (catalog.Destination, error)
	ListDestinations(ctx context.Context, projectID string) ([]catalog.Destination, error)
	DeleteDestination(ctx context.Context, projectID, id string) error
	SetDestinationState(ctx context.Context, projectID, id string, state catalog.DestState, at time.Time) (catalog.Destination, error)
}

// Auditor records control-plane changes in a project's project_audit stream
// (*control.Service).
type Auditor interface {
	// Project returns the project, control.ErrNotFound if there is none.
	Project(ctx context.Context, id string) (catalog.Project, error)
	Audited(ctx context.Context, actor control.Actor, projectID string, c control.Change, apply func() error) error
}

// Admin is the operator side: destinations are created, paused, resumed and deleted
// here, each change recorded in the project's project_audit stream before it is
// applied. Errors are control's (control.ErrInvalid, ErrNotFound, ErrState), so the
// operator API maps them as it maps every control-plane error.
type Admin struct {
	cat   AdminCatalog
	audit Auditor
	src   Source
	kek   keyring.Wrapper
	now   func() time.Time
}

// NewAdmin returns the operator side over cat, auditing through audit; src gives the
// signed size where a destination created "from now" starts, and kek seals the
// destinations' secrets (secrets.go).
func NewAdmin(cat AdminCatalog, audit Auditor, src Source, kek keyring.Wrapper) *Admin {
	return &Admin{cat: cat, audit: audit, src: src, kek: kek, now: time.Now}
}

// Spec is what the operator gives to create a destination.
type Spec struct {
	Name     string   `json:"name"`
	Stream   string   `json:"stream"` // "events" (default) or "project_audit"
	Kind     string   `json:"kind"`
	Format   string   `json:"format"` // default ocsf
	Settings Settings `json:"settings"`
	// From is where delivery starts: "start" (default, sequence 1) or "now" (after
	// the events sealed so far).
	From string `json:"from"`
}

// Status is a destination as the operator sees it: secrets redacted.
type Status struct {
	ID        string   `json:"id"`
	ProjectID string   `json:"projectId"`
	Stream    string   `json:"stream"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Format    string   `json:"format"`
	Settings  Settings `json:"settings"`
	State     string   `json:"state"`
	// Cursor is the last sequence the receiver acknowledged.
	Cursor     uint64  `json:"cursor"`
	Attempts   int     `json:"attempts"`
	LastError  string  `json:"lastError,omitempty"`
	FailedAt   *string `json:"failedAt"`
	LeaseOwner string  `json:"leaseOwner,omitempty"`
	CreatedAt  string  `json:"createdAt"`
	UpdatedAt  string  `json:"updatedAt"`
}

// StatusOf renders d for the operator.
func StatusOf(d catalog.Destination) Status {
	s, _ := openSettings(context.Background(), nil, d.ID, d.Config)
	out := Status{ID: d.ID, ProjectID: d.ProjectID, Stream: string(d.Stream), Name: d.Name, Kind: d.Kind,
		Format: d.Format, Settings: s.Redacted(), State: string(d.State), Cursor: d.Cursor, Attempts: d.Attempts,
		LastError: d.LastError, CreatedAt: tlog.FormatTime(d.CreatedAt), UpdatedAt: tlog.FormatTime(d.UpdatedAt)}
	if !d.FailedAt.IsZero() {
		t := tlog.FormatTime(d.FailedAt)
		out.FailedAt = &t
	}
	if d.LeaseUntil.After(time.Now()) {
		out.LeaseOwner = d.LeaseOwner
	}
	return out
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", control.ErrInvalid, fmt.Sprintf(format, args...))
}

// mapErr turns catalog errors into control's, which the operator API maps.
func mapErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, catalog.ErrNotFound):
		return fmt.Errorf("%w: %s", control.ErrNotFound, what)
	case errors.Is(err, catalog.ErrInvalid):
		return fmt.Errorf("%w: %s: %w", control.ErrInvalid, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Create validates spec and creates the destination. The webhook secret, when the
// service generated it, is returned once (and never shown again); the audit record
// names the destination, never its secrets.
func (a *Admin) Create(ctx context.Context, actor control.Actor, projectID string, spec Spec) (Status, string, error) {
	spec.Name = strings.TrimSpace(spec.Name)
	if spec.Name == "" || utf8.RuneCountInString(spec.Name) > 128 || !utf8.ValidString(spec.Name) || strings.ContainsRune(spec.Name, 0) {
		return Status{}, "", invalid("name must be 1 to 128 characters")
	}
	switch spec.Stream {
	case "":
		spec.Stream = string(catalog.StreamEvents)
	case "project-audit": // the spelling of the public API's stream parameter
		spec.Stream = string(catalog.StreamProjectAudit)
	}
	if !catalog.Stream(spec.Stream).Valid() {
		return Status{}, "", invalid("stream %q must be events or project_audit", spec.Stream)
	}
	if spec.Format == "" {
		spec.Format = FormatOCSF
	}
	if !validFormat(spec.Format) {
		return Status{}, "", invalid("format %q must be one of %s", spec.Format, strings.Join(Formats, ", "))
	}
	generated, err := spec.Settings.Validate(spec.Kind)
	if err != nil {
		return Status{}, "", invalid("%v", err)
	}
	if spec.From != "" && spec.From != "start" && spec.From != "now" {
		return Status{}, "", invalid("from %q must be start or now", spec.From)
	}
	id, err := control.NewID("dst_")
	if err != nil {
		return Status{}, "", err
	}
	if a.kek == nil {
		return Status{}, "", errNoKEK
	}
	cfg, err := sealSettings(ctx, a.kek, id, spec.Settings)
	if err != nil {
		return Status{}, "", err
	}
	d := catalog.Destination{ID: id, ProjectID: projectID, Stream: catalog.Stream(spec.Stream), Name: spec.Name,
		Kind: spec.Kind, Format: spec.Format, Config: cfg, State: catalog.DestActive, CreatedAt: a.now()}
	if spec.From == "now" {
		tree, err := a.src.Materialize(ctx, d.Log())
		if err != nil {
			return Status{}, "", fmt.Errorf("siem: signed size of %s: %w", d.Log(), err)
		}
		d.Cursor = tree.Size
	}
	target := settingsTarget(spec.Kind, spec.Settings)
	c := control.Change{Action: "siem_destination.created", Target: control.Actor{Type: "siem_destination", ID: id, Display: spec.Name},
		Metadata: map[string]any{"kind": spec.Kind, "format": spec.Format, "stream": spec.Stream, "target": target,
			"cursor": d.Cursor}}
	err = a.audit.Audited(ctx, actor, projectID, c, func() (err error) {
		d, err = a.cat.CreateDestination(ctx, d)
		return mapErr(err, "destination "+id)
	})
	if err != nil {
		return Status{}, "", err
	}
	secret := ""
	if generated {
		secret = spec.Settings.Secret
	}
	return StatusOf(d), secret, nil
}

// settingsTarget is where a destination delivers, for the audit record.
func settingsTarget(kind string, s Settings) string {
	if kind == KindSyslog {
		return s.Address
	}
	return s.URL
}

// Get returns one destination of the project.
func (a *Admin) Get(ctx context.Context, projectID, id string) (Status, error) {
	if _, err := a.audit.Project(ctx, projectID); err != nil {
		return Status{}, err
	}
	d, err := a.cat.Destination(ctx, projectID, id)
	if err != nil {
		return Status{}, mapErr(err, "destination "+id+" in project "+projectID)
	}
	return StatusOf(d), nil
}

// List returns the project's destinations.
func (a *Admin) List(ctx context.Context, projectID string) ([]Status, error) {
	if _, err := a.audit.Project(ctx, projectID); err != nil {
		return nil, err
	}
	ds, err := a.cat.ListDestinations(ctx, projectID)
	if err != nil {
		return nil, mapErr(err, "destinations")
	}
	out := make([]Status, 0, len(ds))
	for _, d := range ds {
		out = append(out, StatusOf(d))
	}
	return out, nil
}

// Delete removes a destination; its cursor goes with it.
func (a *Admin) Delete(ctx context.Context, actor control.Actor, projectID, id string) error {
	if _, err := a.audit.Project(ctx, projectID); err != nil {
		return err
	}
	d, err := a.cat.Destination(ctx, projectID, id)
	if err != nil {
		return mapErr(err, "destination "+id+" in project "+projectID)
	}
	c := control.Change{Action: "siem_destination.deleted", Target: control.Actor{Type: "siem_destination", ID: id, Display: d.Name},
		Metadata: map[string]any{"cursor": d.Cursor}}
	return a.audit.Audited(ctx, actor, projectID, c, func() error {
		return mapErr(a.cat.DeleteDestination(ctx, projectID, id), "destination "+id)
	})
}

// SetState pauses (paused) or resumes (active) a destination; resuming a
// dead-lettered one retries from its cursor.
func (a *Admin) SetState(ctx context.Context, actor control.Actor, projectID, id string, state catalog.DestState) (Status, error) {
	if state != catalog.DestActive && state != catalog.DestPaused {
		return Status{}, invalid("state %q must be active or paused", state)
	}
	if _, err := a.audit.Project(ctx, projectID); err != nil {
		return Status{}, err
	}
	d, err := a.cat.Destination(ctx, projectID, id)
	if err != nil {
		return Status{}, mapErr(err, "destination "+id+" in project "+projectID)
	}
	if d.State == state {
		return Status{}, fmt.Errorf("%w: destination %s is already %s", control.ErrState, id, state)
	}
	action := "siem_destination.resumed"
	if state == catalog.DestPaused {
		action = "siem_destination.paused"
	}
	c := control.Change{Action: action, Target: control.Actor{Type: "siem_destination", ID: id, Display: d.Name},
		Metadata: map[string]any{"from": string(d.State), "cursor": d.Cursor, "attempts": d.Attempts}}
	err = a.audit.Audited(ctx, actor, projectID, c, func() (err error) {
		d, err = a.cat.SetDestinationState(ctx, projectID, id, state, a.now())
		return mapErr(err, "destination "+id)
	})
	return StatusOf(d), err
}
