package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MailMessage is one email in the outgoing queue (package mail sends them).
type MailMessage struct {
	ID        string // "mail_..."; also the email's Message-ID
	To        string
	Subject   string
	Body      string // text/plain, UTF-8
	CreatedAt time.Time
	// NotBefore is when the message is next due: its creation, then after each failed
	// attempt the time the retry backoff gives.
	NotBefore time.Time
	Attempts  int // claims so far, the current one included
	// LeaseOwner and LeaseUntil: the replica that claimed the message and until when no
	// other replica may claim it.
	LeaseOwner string
	LeaseUntil time.Time
	SentAt     time.Time // zero until the SMTP server accepted it
	FailedAt   time.Time // zero unless the queue gave up on it
	LastError  string
}

// Limits on a queued message, so a row always fits an SMTP message.
const (
	MaxMailBody    = 1 << 20
	MaxMailSubject = 512 // bytes; Compose folds an encoded subject, a plain one fits a line
)

// Validate checks a message before it is queued.
func (m *MailMessage) Validate() error {
	switch {
	case m.ID == "" || len(m.ID) > 128:
		return fmt.Errorf("%w: mail id %q", ErrInvalid, m.ID)
	case m.To == "" || len(m.To) > 254 || strings.ContainsAny(m.To, "\r\n<>,; \t"):
		return fmt.Errorf("%w: mail recipient %q", ErrInvalid, m.To)
	case len(m.Subject) > MaxMailSubject || strings.ContainsAny(m.Subject, "\r\n"):
		return fmt.Errorf("%w: mail subject must be one line of at most %d bytes", ErrInvalid, MaxMailSubject)
	case len(m.Body) > MaxMailBody:
		return fmt.Errorf("%w: mail body over %d bytes", ErrInvalid, MaxMailBody)
	}
	for _, s := range []string{m.To, m.Subject, m.Body} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return fmt.Errorf("%w: mail text must be UTF-8 without U+0000", ErrInvalid)
		}
	}
	return nil
}

// Digest schedules.
const (
	DigestDaily  = "daily"
	DigestWeekly = "weekly"
	DigestOff    = "off"
)

// DigestState is a project's digest schedule and what its last digest covered. A
// project without a stored row has the default: daily, none sent.
type DigestState struct {
	ProjectID string
	Schedule  string // DigestDaily, DigestWeekly or DigestOff
	UpdatedAt time.Time
	// LastPeriod names the period of the last digest ("daily 2026-11-24",
	// "weekly 2026-W48"); "" before the first.
	LastPeriod string
	LastAt     time.Time
	// LastEvents and LastAudit are the two streams' tree sizes the last digest
	// reported, from which the next one counts.
	LastEvents uint64
	LastAudit  uint64
	// RecipientCount is derived, never stored: how many members receive the digest now
	// (DigestRecipients lists them).
	RecipientCount int
}

// ValidSchedule reports whether s is a digest schedule.
func ValidSchedule(s string) bool { return s == DigestDaily || s == DigestWeekly || s == DigestOff }

// MailStore is the catalog side of email: the outgoing queue and the digests'
// settings and state. Both drivers implement it (in mail.go) and pass
// catalogtest.TestMail. Every method may be called concurrently, from several replicas.
type MailStore interface {
	// EnqueueMail stores msgs, all or none, durably when it returns nil.
	EnqueueMail(ctx context.Context, msgs []MailMessage) error
	// ClaimMail leases to owner, until now+lease, up to limit messages that are due at
	// now (not sent, not failed, NotBefore <= now) and not leased by anyone at now, and
	// counts an attempt on each. Two concurrent claims never return the same message
	// while its lease runs.
	ClaimMail(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]MailMessage, error)
	// MarkMailSent records the message as sent. It is ErrConflict when owner no longer
	// holds the lease (it expired and another replica claimed the message).
	MarkMailSent(ctx context.Context, id, owner string, at time.Time) error
	// RetryMail releases owner's lease and makes the message due again at next.
	RetryMail(ctx context.Context, id, owner string, next time.Time, lastErr string) error
	// FailMail gives up on the message: it is never claimed again.
	FailMail(ctx context.Context, id, owner string, at time.Time, lastErr string) error
	// Mail returns one message, or ErrNotFound.
	Mail(ctx context.Context, id string) (MailMessage, error)

	// DigestState returns the project's digest state (the default without a row);
	// ErrNotFound for an unknown project.
	DigestState(ctx context.Context, projectID string) (DigestState, error)
	// ListDigestStates returns up to limit projects' states after afterID, in id order.
	ListDigestStates(ctx context.Context, afterID string, limit int) ([]DigestState, error)
	// SetDigestSchedule stores the project's schedule.
	SetDigestSchedule(ctx context.Context, projectID, schedule string, at time.Time) (DigestState, error)
	// SetDigestOptIn opts email in (or out) of the project's digests.
	SetDigestOptIn(ctx context.Context, projectID, email string, in bool, at time.Time) error
	// DigestRecipients lists the members of the project who opted in after their
	// membership began, in email order.
	DigestRecipients(ctx context.Context, projectID string) ([]string, error)
	// CommitDigest records next as the project's last digest and queues msgs, in one
	// transaction, if the project's last period is still prevPeriod; otherwise (another
	// replica sent this digest) it is ErrConflict and nothing is queued.
	CommitDigest(ctx context.Context, prevPeriod string, next DigestState, msgs []MailMessage) error
}
