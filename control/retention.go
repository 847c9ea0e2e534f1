package control

import (
	"context"
	"errors"

	"github.com/sealtrail/sealtrail/catalog"
)

// RetentionCatalog is what the retention and suspension settings need beyond Catalog;
// both catalog drivers have it.
type RetentionCatalog interface {
	Retention(ctx context.Context, log catalog.LogID) (catalog.Retention, error)
	DeleteRetention(ctx context.Context, log catalog.LogID) error
	SetMinRetention(ctx context.Context, projectID string, days int) error
	MinRetention(ctx context.Context, projectID string) (int, error)
	Suspend(ctx context.Context, s catalog.Suspension) (catalog.Suspension, error)
	Unsuspend(ctx context.Context, projectID string) error
	Suspension(ctx context.Context, projectID string) (catalog.Suspension, error)
}

// ServiceActor is the actor of the changes the service makes by itself (retention).
var ServiceActor = Actor{Type: "service", ID: "retention"}

func (s *Service) retentionCatalog() (RetentionCatalog, error) {
	rc, ok := s.cat.(RetentionCatalog)
	if !ok {
		return nil, errors.New("the catalog has no retention settings")
	}
	return rc, nil
}

// AuditService seals a record of a change the service made by itself (actor
// ServiceActor) in the project's audit stream, e.g. retention.shredded.
func (s *Service) AuditService(ctx context.Context, projectID, action string, target Actor, metadata map[string]any) error {
	return s.audit(ctx, projectID, ServiceActor, record{action: action, target: target, metadata: metadata}, "success")
}

// ClearRetention puts a project-stream back to "keep forever". A stream without a
// policy is ErrNotFound.
func (s *Service) ClearRetention(ctx context.Context, actor Actor, projectID string, stream catalog.Stream) error {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return err
	}
	if !stream.Valid() {
		return invalid("stream %q is not events or project_audit", stream)
	}
	rc, err := s.retentionCatalog()
	if err != nil {
		return err
	}
	log := catalog.LogID{ProjectID: projectID, Stream: stream}
	if _, err := rc.Retention(ctx, log); err != nil {
		return mapCatalog(err, "retention of "+log.String())
	}
	rec := record{action: "retention.cleared", target: Actor{Type: "stream", ID: string(stream)}}
	return s.change(ctx, projectID, actor, rec, func() error {
		return mapCatalog(rc.DeleteRetention(ctx, log), "retention")
	})
}

// SetMinRetention sets the operator's minimum retention of the project in days (0 to
// MaxRetentionDays; 0 removes it). The retention job never shreds an epoch younger
// than the minimum, whatever the stream's policy says.
func (s *Service) SetMinRetention(ctx context.Context, actor Actor, projectID string, days int) error {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return err
	}
	if days < 0 || days > MaxRetentionDays {
		return invalid("the minimum retention must be 0 (none) to %d days", MaxRetentionDays)
	}
	rc, err := s.retentionCatalog()
	if err != nil {
		return err
	}
	rec := record{action: "retention.minimum.set", target: Actor{Type: "project", ID: projectID},
		metadata: map[string]any{"days": days}}
	return s.change(ctx, projectID, actor, rec, func() error {
		return mapCatalog(rc.SetMinRetention(ctx, projectID, days), "minimum retention")
	})
}

// MinRetention returns the project's minimum retention in days (0: none).
func (s *Service) MinRetention(ctx context.Context, projectID string) (int, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return 0, err
	}
	rc, err := s.retentionCatalog()
	if err != nil {
		return 0, err
	}
	d, err := rc.MinRetention(ctx, projectID)
	return d, mapCatalog(err, "minimum retention")
}

// Suspend suspends the project's ingest (billing): every ingest request gets 429 with
// reason until Unsuspend. Reads keep working. The change is audited.
func (s *Service) Suspend(ctx context.Context, actor Actor, projectID, reason string) (catalog.Suspension, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.Suspension{}, err
	}
	if err := checkText("reason", reason); err != nil {
		return catalog.Suspension{}, err
	}
	sp := catalog.Suspension{ProjectID: projectID, Reason: reason, Since: s.now()}
	if err := sp.Validate(); err != nil {
		return sp, invalid("a suspension needs a reason of 1 to %d bytes", catalog.MaxReasonLen)
	}
	rc, err := s.retentionCatalog()
	if err != nil {
		return sp, err
	}
	rec := record{action: "project.suspended", target: Actor{Type: "project", ID: projectID},
		metadata: map[string]any{"reason": reason}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		sp, err = rc.Suspend(ctx, sp)
		return mapCatalog(err, "suspension")
	})
	if err == nil {
		s.suspended.forget(projectID)
	}
	return sp, err
}

// Unsuspend lifts the project's suspension; a project not suspended is ErrState.
func (s *Service) Unsuspend(ctx context.Context, actor Actor, projectID string) error {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return err
	}
	rc, err := s.retentionCatalog()
	if err != nil {
		return err
	}
	if _, err := rc.Suspension(ctx, projectID); errors.Is(err, catalog.ErrNotFound) {
		return stateErr("project %s is not suspended", projectID)
	} else if err != nil {
		return mapCatalog(err, "suspension")
	}
	rec := record{action: "project.unsuspended", target: Actor{Type: "project", ID: projectID}}
	err = s.change(ctx, projectID, actor, rec, func() error {
		return mapCatalog(rc.Unsuspend(ctx, projectID), "suspension")
	})
	if err == nil {
		s.suspended.forget(projectID)
	}
	return err
}

// SuspensionReason returns the reason of the project's billing suspension, "" while
// the project is not suspended. It is cached like API keys (cache.go), so a
// suspension set through any replica applies everywhere within a second.
func (s *Service) SuspensionReason(ctx context.Context, projectID string) (string, error) {
	rc, err := s.retentionCatalog()
	if err != nil {
		return "", nil // a catalog without suspensions suspends nothing
	}
	return cached(ctx, s, s.suspended, projectID, func() (string, error) {
		sp, err := rc.Suspension(ctx, projectID)
		switch {
		case errors.Is(err, catalog.ErrNotFound):
			return "", nil
		case err != nil:
			return "", mapCatalog(err, "suspension")
		}
		return sp.Reason, nil
	})
}
