package control

import "context"

// Change is one control-plane change made by another package (SIEM destinations, for
// one): Action names it in the audit stream, Target is its subject, Metadata what the
// record says of it (never a secret).
type Change struct {
	Action   string
	Target   Actor
	Metadata map[string]any
}

// Audited makes a change the control-plane way: the project must exist, the record is
// sealed in its project_audit stream first, then apply runs; if apply fails, a second
// record "<action>.failed" says so and its error is returned (see the package
// comment). The caller validates its input before, so that bad input changes nothing.
func (s *Service) Audited(ctx context.Context, actor Actor, projectID string, c Change, apply func() error) error {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return err
	}
	if c.Action == "" || c.Target.Type == "" || c.Target.ID == "" {
		return invalid("a change needs an action and a target")
	}
	return s.change(ctx, projectID, actor, record{action: c.Action, target: c.Target, metadata: c.Metadata}, apply)
}

// NewID returns prefix followed by 26 Crockford base32 characters of randomness, the
// form of every control-plane id.
func NewID(prefix string) (string, error) { return newID(prefix) }
