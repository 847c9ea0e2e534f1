package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/quotedprintable"
	netmail "net/mail"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

func openSQLite(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// waitMessages polls mailpit until it holds n messages (it stores them just after the
// SMTP reply) and returns them.
func waitMessages(t *testing.T, pit *testenv.Mailpit, n int) []testenv.MailpitMessage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs := pit.Messages(t)
		if len(msgs) >= n || time.Now().After(deadline) {
			if len(msgs) != n {
				t.Fatalf("mailpit holds %d messages, want %d", len(msgs), n)
			}
			return msgs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSMTPStartTLSAuth delivers through mailpit with STARTTLS and AUTH required, and
// checks what arrived; without TLS, or with a wrong password, nothing is delivered.
func TestSMTPStartTLSAuth(t *testing.T) {
	w := newWorld(t)
	m, err := NewMessage("ann@example.com", "Grüße: sign in", "Hello Ann,\nyour link: https://x.test/?t=abc=def\n", w.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.smtp().Deliver(w.ctx, m); err != nil {
		t.Fatal(err)
	}
	msgs := waitMessages(t, w.pit, 1)
	if msgs[0].Subject != "Grüße: sign in" || msgs[0].To[0].Address != "ann@example.com" || msgs[0].MessageID != m.ID+"@mail.test" {
		t.Fatalf("received %+v", msgs[0])
	}
	text, err := emailBody(w.pit.Raw(t, msgs[0].ID))
	if err != nil || text != strings.ReplaceAll(m.Body, "\n", "\r\n") {
		t.Fatalf("body = %q, %v; want %q", text, err, m.Body)
	}

	wrong, err := NewSMTP(SMTPConfig{Addr: w.pit.SMTPAddr, From: "sealtrail@mail.test", Username: testenv.MailpitUser,
		Password: "wrong", RootCAs: w.pit.RootCAs})
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Deliver(w.ctx, m); err == nil || !strings.Contains(err.Error(), "AUTH") {
		t.Fatalf("wrong password: %v", err)
	}
	plain, err := NewSMTP(SMTPConfig{Addr: w.pit.SMTPAddr, From: "sealtrail@mail.test", TLS: TLSNone})
	if err != nil {
		t.Fatal(err)
	}
	var perm *PermanentError
	if err := plain.Deliver(w.ctx, m); err == nil || errors.As(err, &perm) {
		t.Fatalf("plain text to a server that requires STARTTLS: %v (want a transient error)", err)
	}
	untrusted, err := NewSMTP(SMTPConfig{Addr: w.pit.SMTPAddr, From: "sealtrail@mail.test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := untrusted.Deliver(w.ctx, m); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("a certificate the system does not trust: %v", err)
	}
	if got := len(w.pit.Messages(t)); got != 1 {
		t.Fatalf("mailpit holds %d messages after the refused deliveries, want 1", got)
	}
	// The longest subject, in a script that needs encoding, arrives whole.
	long, err := NewMessage("ann@example.com", strings.Repeat("é", catalog.MaxMailSubject/2), "b\n", w.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.smtp().Deliver(w.ctx, long); err != nil {
		t.Fatal(err)
	}
	if msgs := waitMessages(t, w.pit, 2); msgs[0].Subject != long.Subject {
		t.Fatalf("long subject arrived as %q", msgs[0].Subject)
	}
	for _, cfg := range []SMTPConfig{
		{Addr: "no-port", From: "a@b.test"},
		{Addr: "127.0.0.1:25", From: "Name <a@b.test>"},
		{Addr: "127.0.0.1:25", From: "a@b.test", TLS: "ssl"},
		{Addr: "127.0.0.1:25", From: "a@b.test", TLS: TLSNone, Username: "u"},
	} {
		if _, err := NewSMTP(cfg); err == nil {
			t.Errorf("NewSMTP(%+v) accepted", cfg)
		}
	}
}

// TestQueueSMTPDown: with the SMTP server down the message stays queued and is
// retried after the backoff; once the server is back it is delivered exactly once.
func TestQueueSMTPDown(t *testing.T) {
	w := newWorld(t)
	db := openSQLite(t)
	reg := prometheus.NewRegistry()
	q, err := NewQueue(db, w.smtp(), QueueConfig{Now: w.clock.Now, Backoff: 30 * time.Second, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	w.pit.Stop()
	if err := q.Send(w.ctx, "ann@example.com", "link", "https://x.test/\n"); err != nil {
		t.Fatal(err)
	}
	for i, wantNext := range []time.Duration{30 * time.Second, 60 * time.Second} {
		if n, err := q.Drain(w.ctx); err != nil || n != 0 {
			t.Fatalf("drain %d with SMTP down = %d, %v", i, n, err)
		}
		// Nothing is due until the backoff has passed.
		w.clock.Set(w.clock.Now().Add(wantNext - time.Millisecond))
		if n, err := q.Drain(w.ctx); err != nil || n != 0 {
			t.Fatalf("drain before the retry time = %d, %v", n, err)
		}
		w.clock.Set(w.clock.Now().Add(time.Millisecond))
	}
	w.pit.Start()
	if n, err := q.Drain(w.ctx); err != nil || n != 1 {
		t.Fatalf("drain with SMTP back = %d, %v; want 1", n, err)
	}
	if n, err := q.Drain(w.ctx); err != nil || n != 0 {
		t.Fatalf("second drain = %d, %v; want 0", n, err)
	}
	waitMessages(t, w.pit, 1)
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "sealtrail_mail_deliveries_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if want := map[string]float64{resultRetry: 2, resultSent: 1, resultFailed: 0, resultUnsaved: 0}; !maps.Equal(got, want) {
		t.Errorf("sealtrail_mail_deliveries_total = %v, want %v", got, want)
	}
}

// TestQueueGivesUp: a recipient the server refuses (5xx) is failed at once, and a
// message undeliverable for MaxAge is failed too; neither blocks the others.
func TestQueueGivesUp(t *testing.T) {
	w := newWorld(t)
	pit := testenv.StartMailpit(t, "--smtp-allowed-recipients=^ok")
	s, err := NewSMTP(SMTPConfig{Addr: pit.SMTPAddr, From: "sealtrail@mail.test", Username: testenv.MailpitUser,
		Password: testenv.MailpitPassword, RootCAs: pit.RootCAs})
	if err != nil {
		t.Fatal(err)
	}
	db := openSQLite(t)
	q, err := NewQueue(db, s, QueueConfig{Now: w.clock.Now, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"refused@example.com", "ok@example.com"} {
		if err := q.Send(w.ctx, to, "s", "b\n"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.Drain(w.ctx); err != nil || n != 1 {
		t.Fatalf("drain = %d, %v; want the allowed recipient only", n, err)
	}
	waitMessages(t, pit, 1)
	w.clock.Set(w.clock.Now().Add(24 * time.Hour))
	if n, err := q.Drain(w.ctx); err != nil || n != 0 {
		t.Fatalf("the refused message was tried again: %d, %v", n, err)
	}

	pit.Stop()
	if err := q.Send(w.ctx, "ok2@example.com", "s", "b\n"); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Drain(w.ctx); n != 0 {
		t.Fatal("delivered with the server down")
	}
	w.clock.Set(w.clock.Now().Add(2 * time.Hour))
	if n, _ := q.Drain(w.ctx); n != 0 {
		t.Fatal("delivered with the server down")
	}
	pit.Start()
	w.clock.Set(w.clock.Now().Add(2 * time.Hour))
	if n, err := q.Drain(w.ctx); err != nil || n != 0 {
		t.Fatalf("a message past MaxAge was still tried: %d, %v", n, err)
	}
	if got := len(pit.Messages(t)); got != 1 {
		t.Fatalf("mailpit holds %d messages, want 1", got)
	}
}

// TestSendRejectsBadInput: bad input to Send is ErrInvalid and queues nothing.
func TestSendRejectsBadInput(t *testing.T) {
	db := openSQLite(t)
	q, err := NewQueue(db, nil, QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]string{
		{"", "s", "b"},
		{"Ann <ann@example.com>", "s", "b"},
		{"ann@example.com, bob@example.com", "s", "b"},
		{"ann@example.com", "line\r\nBcc: x@example.com", "b"},
		{"ann@example.com", "s", "nul\x00"},
		{"ann@example.com", "s", strings.Repeat("x", catalog.MaxMailBody+1)},
	} {
		if err := q.Send(t.Context(), c[0], c[1], c[2]); !errors.Is(err, ErrInvalid) {
			t.Errorf("Send(%q, %q, ...) = %v, want ErrInvalid", c[0], c[1], err)
		}
	}
	if got, err := db.ClaimMail(t.Context(), "check", time.Now().Add(time.Hour), time.Minute, 10); err != nil || len(got) != 0 {
		t.Fatalf("bad input queued %d messages (%v)", len(got), err)
	}
}

// TestQueueTwoReplicas: two replicas drain one queue at once; every message arrives
// exactly once.
func TestQueueTwoReplicas(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			w := newWorld(t)
			a, b := w.twoReplicas(kind)
			const n = 24
			for i := range n {
				if err := a.queue.Send(w.ctx, fmt.Sprintf("m%02d@example.com", i), "s", "b\n"); err != nil {
					t.Fatal(err)
				}
			}
			sent := [2]int{}
			both(a, b, func(r *replica) {
				k, err := r.queue.Drain(w.ctx)
				if err != nil {
					t.Error(err)
				}
				if r == a {
					sent[0] = k
				} else {
					sent[1] = k
				}
			})
			if sent[0]+sent[1] != n {
				t.Fatalf("replicas delivered %v, want %d in all", sent, n)
			}
			seen := map[string]bool{}
			for _, m := range waitMessages(t, w.pit, n) {
				if seen[m.To[0].Address] {
					t.Fatalf("%s received twice", m.To[0].Address)
				}
				seen[m.To[0].Address] = true
			}
		})
	}
}

// emailBody decodes the quoted-printable body of a raw message.
func emailBody(raw []byte) (string, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	return string(b), err
}

// lostMark is a store whose MarkMailSent fails, as a replica that crashes (or loses
// the catalog) right after the SMTP server accepted a message.
type lostMark struct{ Store }

func (lostMark) MarkMailSent(context.Context, string, string, time.Time) error {
	return errors.New("catalog connection lost")
}

// TestQueueCrashAfterAccept is the documented duplicate window: the message was
// accepted but not recorded as sent, so once the lease runs out another replica sends
// it again, with the same Message-ID; recorded as sent, it is never sent again.
func TestQueueCrashAfterAccept(t *testing.T) {
	w := newWorld(t)
	db := openSQLite(t)
	crashing, err := NewQueue(lostMark{db}, w.smtp(), QueueConfig{Now: w.clock.Now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewQueue(db, w.smtp(), QueueConfig{Now: w.clock.Now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := crashing.Send(w.ctx, "ann@example.com", "link", "body\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := crashing.Drain(w.ctx); err == nil {
		t.Fatal("the lost mark was not reported")
	}
	waitMessages(t, w.pit, 1)
	if n, _ := other.Drain(w.ctx); n != 0 {
		t.Fatal("another replica sent the message while the lease ran")
	}
	w.clock.Set(w.clock.Now().Add(time.Minute))
	if n, err := other.Drain(w.ctx); err != nil || n != 1 {
		t.Fatalf("after the lease: %d, %v", n, err)
	}
	msgs := waitMessages(t, w.pit, 2)
	if msgs[0].MessageID != msgs[1].MessageID {
		t.Fatalf("the second delivery has another Message-ID: %q, %q", msgs[0].MessageID, msgs[1].MessageID)
	}
	w.clock.Set(w.clock.Now().Add(time.Hour))
	if n, _ := other.Drain(w.ctx); n != 0 {
		t.Fatal("a message recorded as sent was sent again")
	}
}

// TestSendWakesRun: a message queued while Run waits goes out at once, not at the next
// poll (an hour here), as the dashboard's sign-in links need.
func TestSendWakesRun(t *testing.T) {
	w := newWorld(t)
	q, err := NewQueue(openSQLite(t), w.smtp(), QueueConfig{Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i, to := range []string{"ann@example.com", "bob@example.com"} {
		if err := q.Send(w.ctx, to, "Your sign-in link", "https://x.test/link"); err != nil {
			t.Fatal(err)
		}
		if msgs := waitMessages(t, w.pit, i+1); msgs[0].To[0].Address != to {
			t.Fatalf("newest message to %s, want %s", msgs[0].To[0].Address, to)
		}
	}
}
