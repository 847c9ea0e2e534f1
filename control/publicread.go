package control

import (
	"context"
	"fmt"
)

// SetPublicRead turns a project's public read mode on or off: while it is on, its
// tlog-tiles path (checkpoints, hash tiles, entry bundles; never payloads) is served
// without an API key, for mirrors. The change is recorded in the project's
// project_audit stream, like every control-plane change.
func (s *Service) SetPublicRead(ctx context.Context, actor Actor, projectID string, on bool) error {
	p, err := s.requireProject(ctx, projectID)
	if err != nil {
		return err
	}
	was, err := s.cat.PublicRead(ctx, projectID)
	if err != nil {
		return fmt.Errorf("control: public read of %s: %w", projectID, err)
	}
	rec := record{action: "project.public_read.set", target: Actor{Type: "project", ID: projectID, Display: p.Name},
		metadata: map[string]any{"publicRead": on, "previous": was}}
	return s.change(ctx, projectID, actor, rec, func() error {
		return mapCatalog(s.cat.SetPublicRead(ctx, projectID, on), "project "+projectID)
	})
}

// PublicRead reports whether the project's public read mode is on (false for an
// unknown project).
func (s *Service) PublicRead(ctx context.Context, projectID string) (bool, error) {
	on, err := s.cat.PublicRead(ctx, projectID)
	if err != nil {
		return false, fmt.Errorf("control: public read of %s: %w", projectID, err)
	}
	return on, nil
}
