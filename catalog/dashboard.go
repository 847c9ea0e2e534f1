package catalog

import (
	"fmt"
	"time"
)

// SignInLink is a dashboard member's emailed one-time sign-in link, stored as the hash
// of its secret only. It is bound to one email, valid until ExpiresAt, and consumed at
// most once (UsedAt).
type SignInLink struct {
	Hash      []byte
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero while unused
}

// Session kinds.
const (
	SessionMember   = "member"
	SessionOperator = "operator"
)

// Session is a signed-in dashboard browser, stored as the hash of its cookie's secret
// only. A member session names an email, not a project: what it may do in a project is
// looked up on each request from the project's members.
type Session struct {
	Hash      []byte
	Kind      string // SessionMember or SessionOperator
	Email     string // the member's email; empty for an operator
	CreatedAt time.Time
	ExpiresAt time.Time
}

// validateSecretRow checks what sign-in links and sessions share.
func validateSecretRow(what string, hash []byte, expires time.Time) error {
	if len(hash) < 16 || len(hash) > 64 {
		return fmt.Errorf("%w: %s needs a 16-64 byte hash", ErrInvalid, what)
	}
	if expires.IsZero() {
		return fmt.Errorf("%w: %s needs an expiry", ErrInvalid, what)
	}
	return nil
}

// Validate checks the stored fields of l.
func (l *SignInLink) Validate() error {
	if l.Email == "" || len(l.Email) > maxTextLen {
		return fmt.Errorf("%w: sign-in link needs an email", ErrInvalid)
	}
	return validateSecretRow("sign-in link", l.Hash, l.ExpiresAt)
}

// Validate checks the stored fields of s.
func (s *Session) Validate() error {
	switch {
	case s.Kind == SessionMember && (s.Email == "" || len(s.Email) > maxTextLen):
		return fmt.Errorf("%w: a member session needs an email", ErrInvalid)
	case s.Kind == SessionOperator && s.Email != "":
		return fmt.Errorf("%w: an operator session has no email", ErrInvalid)
	case s.Kind != SessionMember && s.Kind != SessionOperator:
		return fmt.Errorf("%w: session kind %q", ErrInvalid, s.Kind)
	}
	return validateSecretRow("session", s.Hash, s.ExpiresAt)
}
