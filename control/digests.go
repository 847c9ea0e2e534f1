package control

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// DigestCatalog is the part of the catalog the digest settings use.
type DigestCatalog interface {
	DigestState(ctx context.Context, projectID string) (catalog.DigestState, error)
	SetDigestSchedule(ctx context.Context, projectID, schedule string, at time.Time) (catalog.DigestState, error)
	SetDigestOptIn(ctx context.Context, projectID, email string, in bool, at time.Time) error
	DigestRecipients(ctx context.Context, projectID string) ([]string, error)
}

// DigestSettings is a project's digest schedule, its last digest and the members who
// receive it.
type DigestSettings struct {
	catalog.DigestState
	Recipients []string
}

// SetDigestSchedule sets the project's digest schedule: catalog.DigestDaily (the
// default), catalog.DigestWeekly or catalog.DigestOff.
func (s *Service) SetDigestSchedule(ctx context.Context, actor Actor, projectID, schedule string) (DigestSettings, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return DigestSettings{}, err
	}
	if !catalog.ValidSchedule(schedule) {
		return DigestSettings{}, invalid("digest schedule %q is not daily, weekly or off", schedule)
	}
	prev, err := s.cat.DigestState(ctx, projectID)
	if err != nil {
		return DigestSettings{}, mapCatalog(err, "digest settings")
	}
	rec := record{action: "digest.schedule.set", target: Actor{Type: "project", ID: projectID},
		metadata: map[string]any{"schedule": schedule, "previous": prev.Schedule}}
	err = s.change(ctx, projectID, actor, rec, func() error {
		_, err := s.cat.SetDigestSchedule(ctx, projectID, schedule, s.now())
		return mapCatalog(err, "digest schedule")
	})
	if err != nil {
		return DigestSettings{}, err
	}
	return s.DigestSettings(ctx, projectID)
}

// SetDigestOptIn opts a member of the project in to its digests (in) or out. Only
// members can opt in; the email matches case-insensitively.
func (s *Service) SetDigestOptIn(ctx context.Context, actor Actor, projectID, email string, in bool) (DigestSettings, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return DigestSettings{}, err
	}
	members, err := s.cat.ListMembers(ctx, projectID)
	if err != nil {
		return DigestSettings{}, mapCatalog(err, "members")
	}
	i := slices.IndexFunc(members, func(m catalog.Member) bool { return strings.EqualFold(m.Email, email) })
	if i < 0 {
		return DigestSettings{}, notFound("member %s in project %s", email, projectID)
	}
	email = members[i].Email
	action := "digest.opted_in"
	if !in {
		action = "digest.opted_out"
	}
	rec := record{action: action, target: Actor{Type: "member", ID: email}}
	err = s.change(ctx, projectID, actor, rec, func() error {
		return mapCatalog(s.cat.SetDigestOptIn(ctx, projectID, email, in, s.now()), "digest opt-in")
	})
	if err != nil {
		return DigestSettings{}, err
	}
	return s.DigestSettings(ctx, projectID)
}

// DigestSettings returns the project's digest settings.
func (s *Service) DigestSettings(ctx context.Context, projectID string) (DigestSettings, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return DigestSettings{}, err
	}
	st, err := s.cat.DigestState(ctx, projectID)
	if err != nil {
		return DigestSettings{}, mapCatalog(err, "digest settings")
	}
	to, err := s.cat.DigestRecipients(ctx, projectID)
	if err != nil {
		return DigestSettings{}, mapCatalog(err, "digest recipients")
	}
	return DigestSettings{DigestState: st, Recipients: to}, nil
}
