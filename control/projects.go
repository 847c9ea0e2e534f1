package control

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// CreateProject creates a project named name.
func (s *Service) CreateProject(ctx context.Context, actor Actor, name string) (catalog.Project, error) {
	name = strings.TrimSpace(name)
	if err := checkText("project name", name); err != nil {
		return catalog.Project{}, err
	}
	if name == "" || utf8.RuneCountInString(name) > 128 || !utf8.ValidString(name) {
		return catalog.Project{}, invalid("project name must be 1 to 128 characters")
	}
	id, err := newID("prj_")
	if err != nil {
		return catalog.Project{}, err
	}
	p := catalog.Project{ID: id, Name: name, CreatedAt: s.now()}
	rec := record{action: "project.created", target: Actor{Type: "project", ID: id, Display: name}}
	err = s.change(ctx, id, actor, rec, func() (err error) {
		p, err = s.cat.CreateProject(ctx, p)
		return mapCatalog(err, "project "+id)
	})
	return p, err
}

// Project returns a project.
func (s *Service) Project(ctx context.Context, id string) (catalog.Project, error) {
	return s.requireProject(ctx, id)
}

// ListProjects lists projects in id order after afterID.
func (s *Service) ListProjects(ctx context.Context, afterID string, limit int) ([]catalog.Project, error) {
	ps, err := s.cat.ListProjects(ctx, afterID, limit)
	return ps, mapCatalog(err, "projects")
}

// Member roles.
var Roles = []string{"owner", "admin", "member", "auditor"}

// AddMember adds email to the project with role.
func (s *Service) AddMember(ctx context.Context, actor Actor, projectID, email, role string) (catalog.Member, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.Member{}, err
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		return catalog.Member{}, invalid("member email %q is not a plain address", email)
	}
	if !slices.Contains(Roles, role) {
		return catalog.Member{}, invalid("role %q is not one of %s", role, strings.Join(Roles, ", "))
	}
	members, err := s.cat.ListMembers(ctx, projectID)
	if err != nil {
		return catalog.Member{}, mapCatalog(err, "members")
	}
	for _, m := range members {
		if strings.EqualFold(m.Email, email) {
			return catalog.Member{}, invalidExists("member %s is already in project %s", email, projectID)
		}
	}
	m := catalog.Member{ProjectID: projectID, Email: email, Role: role, CreatedAt: s.now()}
	rec := record{action: "member.added", target: Actor{Type: "member", ID: email}, metadata: map[string]any{"role": role}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		m, err = s.cat.AddMember(ctx, m)
		return mapCatalog(err, "member "+email)
	})
	return m, err
}

// RemoveMember removes email from the project.
func (s *Service) RemoveMember(ctx context.Context, actor Actor, projectID, email string) error {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return err
	}
	members, err := s.cat.ListMembers(ctx, projectID)
	if err != nil {
		return mapCatalog(err, "members")
	}
	// Emails match case-insensitively, as AddMember's duplicate check does; the
	// stored spelling is what the catalog removes.
	i := slices.IndexFunc(members, func(m catalog.Member) bool { return strings.EqualFold(m.Email, email) })
	if i < 0 {
		return notFound("member %s in project %s", email, projectID)
	}
	email = members[i].Email
	rec := record{action: "member.removed", target: Actor{Type: "member", ID: email}}
	return s.change(ctx, projectID, actor, rec, func() error {
		return mapCatalog(s.cat.RemoveMember(ctx, projectID, email), "member "+email)
	})
}

// ListMembers lists the project's members.
func (s *Service) ListMembers(ctx context.Context, projectID string) ([]catalog.Member, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return nil, err
	}
	ms, err := s.cat.ListMembers(ctx, projectID)
	return ms, mapCatalog(err, "members")
}

// AddSigningKey registers a customer Ed25519 public key (lowercase hex). From then on
// the project rejects unsigned events.
func (s *Service) AddSigningKey(ctx context.Context, actor Actor, projectID, publicKeyHex string) (catalog.SigningKey, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.SigningKey{}, err
	}
	if _, err := tlog.ParsePublicKey(publicKeyHex); err != nil {
		return catalog.SigningKey{}, invalid("%v", err)
	}
	keys, err := s.cat.ListSigningKeys(ctx, projectID)
	if err != nil {
		return catalog.SigningKey{}, mapCatalog(err, "signing keys")
	}
	for _, k := range keys {
		if k.PublicKey == publicKeyHex && k.State() == catalog.KeyActive {
			return catalog.SigningKey{}, invalidExists("public key is already registered as %s", k.ID)
		}
	}
	id, err := newID("sk_")
	if err != nil {
		return catalog.SigningKey{}, err
	}
	k := catalog.SigningKey{ID: id, ProjectID: projectID, PublicKey: publicKeyHex, CreatedAt: s.now()}
	rec := record{action: "signing_key.registered", target: Actor{Type: "signing_key", ID: id},
		metadata: map[string]any{"publicKey": publicKeyHex}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		k, err = s.cat.CreateSigningKey(ctx, k)
		return mapCatalog(err, "signing key "+id)
	})
	s.signing.forget(projectID)
	return k, err
}

// RevokeSigningKey revokes a customer signing key.
func (s *Service) RevokeSigningKey(ctx context.Context, actor Actor, projectID, keyID string) (catalog.SigningKey, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.SigningKey{}, err
	}
	k, err := s.cat.SigningKey(ctx, projectID, keyID)
	if err != nil {
		return catalog.SigningKey{}, mapCatalog(err, "signing key "+keyID)
	}
	if k.State() != catalog.KeyActive {
		return catalog.SigningKey{}, stateErr("signing key %s is already revoked", keyID)
	}
	rec := record{action: "signing_key.revoked", target: Actor{Type: "signing_key", ID: keyID}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		k, err = s.cat.RevokeSigningKey(ctx, projectID, keyID, s.now())
		return mapCatalog(err, "signing key "+keyID)
	})
	s.signing.forget(projectID)
	return k, err
}

// ListSigningKeys lists the project's signing keys, revoked ones included.
func (s *Service) ListSigningKeys(ctx context.Context, projectID string) ([]catalog.SigningKey, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return nil, err
	}
	ks, err := s.cat.ListSigningKeys(ctx, projectID)
	return ks, mapCatalog(err, "signing keys")
}

// IngestSigningKeys returns the project's signing keys for the ingest path: from a
// cache that a registration or revocation on this replica clears at once, and that
// honours one made on another replica within a second (as API keys are). It does not
// check that the project exists: the caller's API key already names it.
func (s *Service) IngestSigningKeys(ctx context.Context, projectID string) ([]catalog.SigningKey, error) {
	return cached(ctx, s, s.signing, projectID, func() ([]catalog.SigningKey, error) {
		ks, err := s.cat.ListSigningKeys(ctx, projectID)
		if err != nil {
			return nil, fmt.Errorf("list signing keys: %w", err)
		}
		return ks, nil
	})
}

// MaxRetentionDays bounds a retention period (100 years).
const MaxRetentionDays = 36500

// SetRetention sets how many days (1 to MaxRetentionDays) a project-stream keeps
// payloads before their keys are shredded. A stream without a policy keeps them forever;
// the catalog cannot store 0 days, so 0 is refused here, before anything is sealed.
func (s *Service) SetRetention(ctx context.Context, actor Actor, projectID string, stream catalog.Stream, days int) (catalog.Retention, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.Retention{}, err
	}
	if !stream.Valid() {
		return catalog.Retention{}, invalid("stream %q is not events or project_audit", stream)
	}
	if days < 1 || days > MaxRetentionDays {
		return catalog.Retention{}, invalid("retention must be 1 to %d days", MaxRetentionDays)
	}
	r := catalog.Retention{Log: catalog.LogID{ProjectID: projectID, Stream: stream}, Days: days, UpdatedAt: s.now()}
	rec := record{action: "retention.set", target: Actor{Type: "stream", ID: string(stream)}, metadata: map[string]any{"days": days}}
	err := s.change(ctx, projectID, actor, rec, func() (err error) {
		r, err = s.cat.SetRetention(ctx, r)
		return mapCatalog(err, "retention")
	})
	return r, err
}

// ListRetention lists the project's retention settings.
func (s *Service) ListRetention(ctx context.Context, projectID string) ([]catalog.Retention, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return nil, err
	}
	rs, err := s.cat.ListRetention(ctx, projectID)
	return rs, mapCatalog(err, "retention")
}

// SetIngestRateLimit sets the project's ingest rate limit override: requests per rate
// window for each of its API keys (1 to catalog.MaxIngestRateLimit), or 0 to go back
// to the service default. The change is recorded in project_audit like every other.
func (s *Service) SetIngestRateLimit(ctx context.Context, actor Actor, projectID string, limit int) (catalog.Project, error) {
	p, err := s.requireProject(ctx, projectID)
	if err != nil {
		return p, err
	}
	if limit < 0 || limit > catalog.MaxIngestRateLimit {
		return p, invalid("the ingest rate limit must be 0 (the service default) to %d", catalog.MaxIngestRateLimit)
	}
	rec := record{action: "project.rate_limit.set", target: Actor{Type: "project", ID: projectID, Display: p.Name},
		metadata: map[string]any{"ingestRateLimit": limit, "previous": p.IngestRateLimit}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		p, err = s.cat.SetIngestRateLimit(ctx, projectID, limit)
		return mapCatalog(err, "project "+projectID)
	})
	if err == nil {
		s.limits.forget(projectID)
	}
	return p, err
}

// IngestRateLimit returns the project's ingest rate limit override (0: none), cached
// like API keys (cache.go), so an override set through any replica applies everywhere
// within a second.
func (s *Service) IngestRateLimit(ctx context.Context, projectID string) (int, error) {
	return cached(ctx, s, s.limits, projectID, func() (int, error) {
		p, err := s.cat.Project(ctx, projectID)
		if err != nil {
			return 0, mapCatalog(err, "project "+projectID)
		}
		return p.IngestRateLimit, nil
	})
}
