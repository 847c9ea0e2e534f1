// Package mail sends Sealtrail's email: a durable outgoing queue in the catalog,
// delivered over SMTP (STARTTLS and AUTH) by every replica without duplicates, and the
// per-project digests built on it.
//
// Delivery guarantee: a message is queued durably before Send returns, and is
// delivered at least once unless the server refuses it for good or it stays
// undeliverable for MaxAge. A replica claims a message with a lease in the catalog, so
// two replicas never deliver it at once. The one window for a second delivery is a
// crash (or a lost catalog connection) after the SMTP server accepted the message and
// before the catalog recorded it sent: once the lease runs out another replica sends it
// again, with the same bytes and Message-ID, so mail clients that deduplicate by
// Message-ID show it once. docs/digests.md has the details.
package mail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
)

// Store is the part of the catalog the queue uses (catalog.MailStore's queue methods).
type Store interface {
	EnqueueMail(ctx context.Context, msgs []catalog.MailMessage) error
	ClaimMail(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]catalog.MailMessage, error)
	MarkMailSent(ctx context.Context, id, owner string, at time.Time) error
	RetryMail(ctx context.Context, id, owner string, next time.Time, lastErr string) error
	FailMail(ctx context.Context, id, owner string, at time.Time, lastErr string) error
}

// Sender delivers one message; a *PermanentError means retrying cannot help. *SMTP is
// the production Sender. Deliver is called concurrently only for different messages.
type Sender interface {
	Deliver(ctx context.Context, m catalog.MailMessage) error
}

var _ Sender = (*SMTP)(nil)

// ErrInvalid is bad input to Send: nothing was queued.
var ErrInvalid = errors.New("mail: invalid message")

// QueueConfig tunes the queue; the zero value of each field takes its default.
type QueueConfig struct {
	// Lease is how long a claimed message is reserved for this replica (default 5 min);
	// it must be well above the sender's timeout.
	Lease time.Duration
	// Poll is how often Run looks for due messages (default 5 s); Send also wakes it.
	Poll time.Duration
	// Batch is how many messages one claim takes (default 20).
	Batch int
	// Backoff is the delay after the first failed attempt, doubling up to MaxBackoff
	// (defaults 30 s and 1 h).
	Backoff, MaxBackoff time.Duration
	// MaxAge is how long a message may stay undeliverable before the queue gives up
	// and logs it as failed (default 72 h).
	MaxAge time.Duration
	Now    func() time.Time
	Logger *slog.Logger
	// Registerer receives the package's metrics (none when nil).
	Registerer prometheus.Registerer
}

// Queue is the outgoing mail queue of one replica.
type Queue struct {
	store  Store
	sender Sender
	cfg    QueueConfig
	owner  string // this replica's lease owner name, random per process
	wake   chan struct{}
	m      *metrics
}

// NewQueue returns the queue over store, delivering with sender. A nil sender makes a
// queue that only accepts mail (Send), for a service without SMTP configured.
func NewQueue(store Store, sender Sender, cfg QueueConfig) (*Queue, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Lease, 5*time.Minute)
	def(&cfg.Poll, 5*time.Second)
	def(&cfg.Backoff, 30*time.Second)
	def(&cfg.MaxBackoff, time.Hour)
	def(&cfg.MaxAge, 72*time.Hour)
	if cfg.Batch <= 0 {
		cfg.Batch = 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	owner, err := newID("replica_")
	if err != nil {
		return nil, err
	}
	return &Queue{store: store, sender: sender, cfg: cfg, owner: owner, wake: make(chan struct{}, 1),
		m: newMetrics(cfg.Registerer)}, nil
}

// newID returns prefix and 16 random bytes in hex.
func newID(prefix string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mail: random id: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// checkAddress accepts a plain address ("a@example.com"), nothing else.
func checkAddress(addr string) error {
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || len(addr) > 254 {
		return fmt.Errorf("%w: %q is not a plain email address", ErrInvalid, addr)
	}
	return nil
}

// NewMessage returns a queue row for one email, with a fresh id, due now.
func NewMessage(to, subject, textBody string, now time.Time) (catalog.MailMessage, error) {
	if err := checkAddress(to); err != nil {
		return catalog.MailMessage{}, err
	}
	id, err := newID("mail_")
	if err != nil {
		return catalog.MailMessage{}, err
	}
	m := catalog.MailMessage{ID: id, To: to, Subject: subject, Body: textBody, CreatedAt: catalog.MS(now)}
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return m, nil
}

// Send queues one text email to a plain address. It returns once the message is
// durable in the catalog; delivery happens in Run, on whichever replica claims it.
// Bad input is ErrInvalid and queues nothing.
func (q *Queue) Send(ctx context.Context, to, subject, textBody string) error {
	m, err := NewMessage(to, subject, textBody, q.cfg.Now())
	if err != nil {
		return err
	}
	if err := q.store.EnqueueMail(ctx, []catalog.MailMessage{m}); err != nil {
		return fmt.Errorf("mail: queue: %w", err)
	}
	q.Wake()
	return nil
}

// Wake makes Run look for due messages now.
func (q *Queue) Wake() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run delivers due messages until ctx ends.
func (q *Queue) Run(ctx context.Context) {
	t := time.NewTicker(q.cfg.Poll)
	defer t.Stop()
	for {
		if _, err := q.Drain(ctx); err != nil && ctx.Err() == nil {
			q.cfg.Logger.WarnContext(ctx, "mail: draining the queue", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-q.wake:
		}
	}
}

// Drain claims and delivers the messages due now, batch after batch, until none is
// left; it returns how many were delivered. A failed delivery is rescheduled (or
// given up) and does not stop the others.
func (q *Queue) Drain(ctx context.Context) (int, error) {
	if q.sender == nil {
		return 0, errors.New("mail: the queue has no sender (SMTP is not configured)")
	}
	sent := 0
	for {
		msgs, err := q.store.ClaimMail(ctx, q.owner, q.cfg.Now(), q.cfg.Lease, q.cfg.Batch)
		if err != nil {
			return sent, fmt.Errorf("mail: claim: %w", err)
		}
		if len(msgs) == 0 {
			return sent, nil
		}
		for _, m := range msgs {
			ok, err := q.deliver(ctx, m)
			if err != nil {
				return sent, err
			}
			if ok {
				sent++
			}
		}
	}
}

// deliver sends one claimed message and records the outcome. The error is only for
// failures to record it (the catalog), which end the drain.
func (q *Queue) deliver(ctx context.Context, m catalog.MailMessage) (bool, error) {
	log := q.cfg.Logger.With(slog.String("mail", m.ID), slog.Int("attempt", m.Attempts))
	// Half the lease for the delivery, so the lease is still held when it is recorded.
	dctx, cancel := context.WithTimeout(ctx, q.cfg.Lease/2)
	err := q.sender.Deliver(dctx, m)
	cancel()
	now := q.cfg.Now()
	if err == nil {
		if err := q.store.MarkMailSent(ctx, m.ID, q.owner, now); err != nil {
			q.m.deliveries.WithLabelValues(resultUnsaved).Inc()
			if errors.Is(err, catalog.ErrConflict) {
				// The lease ran out during delivery and another replica took the
				// message: it may be delivered twice (same Message-ID).
				log.WarnContext(ctx, "mail: delivered after the lease ran out; it may be delivered twice")
				return true, nil
			}
			return false, fmt.Errorf("mail: record %s sent: %w", m.ID, err)
		}
		q.m.deliveries.WithLabelValues(resultSent).Inc()
		log.InfoContext(ctx, "mail: delivered")
		return true, nil
	}
	var perm *PermanentError
	if errors.As(err, &perm) || now.Sub(m.CreatedAt) >= q.cfg.MaxAge {
		q.m.deliveries.WithLabelValues(resultFailed).Inc()
		log.ErrorContext(ctx, "mail: giving up", slog.Any("err", err))
		if ferr := q.store.FailMail(ctx, m.ID, q.owner, now, err.Error()); ferr != nil && !errors.Is(ferr, catalog.ErrConflict) {
			return false, fmt.Errorf("mail: record %s failed: %w", m.ID, ferr)
		}
		return false, nil
	}
	q.m.deliveries.WithLabelValues(resultRetry).Inc()
	next := now.Add(q.backoff(m.Attempts))
	log.WarnContext(ctx, "mail: delivery failed; will retry", slog.Any("err", err), slog.Time("next", next))
	if rerr := q.store.RetryMail(ctx, m.ID, q.owner, next, err.Error()); rerr != nil && !errors.Is(rerr, catalog.ErrConflict) {
		return false, fmt.Errorf("mail: reschedule %s: %w", m.ID, rerr)
	}
	return false, nil
}

// backoff is the delay after the attempt-th failed attempt.
func (q *Queue) backoff(attempt int) time.Duration {
	d := q.cfg.Backoff
	for i := 1; i < attempt && d < q.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, q.cfg.MaxBackoff)
}
