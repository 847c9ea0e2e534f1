package catalogtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestMail is the conformance suite of catalog.MailStore. open returns two handles on
// one fresh database, as two replicas would hold them.
func TestMail(t *testing.T, open func(t *testing.T) (catalog.Catalog, catalog.Catalog)) {
	t.Run("QueueLifecycle", func(t *testing.T) { a, _ := open(t); testMailLifecycle(t, a) })
	t.Run("ClaimRace", func(t *testing.T) { a, b := open(t); testMailClaimRace(t, a, b) })
	t.Run("DigestSettings", func(t *testing.T) { a, _ := open(t); testDigestSettings(t, a) })
	t.Run("CommitDigestOnce", func(t *testing.T) { a, b := open(t); testCommitDigestOnce(t, a, b) })
}

var mailT0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func testMailLifecycle(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	bad := []catalog.MailMessage{
		{ID: "", To: "a@example.com"},
		{ID: "mail_1", To: "a@example.com, b@example.com"},
		{ID: "mail_1", To: "a@example.com", Subject: "two\r\nlines"},
		{ID: "mail_1", To: "a@example.com", Body: "nul\x00"},
	}
	for _, m := range bad {
		wantErr(t, fmt.Sprintf("enqueue %+v", m), db.EnqueueMail(ctx, []catalog.MailMessage{m}), catalog.ErrInvalid)
	}
	// All or none: a bad message after a good one queues neither.
	wantErr(t, "enqueue half-bad", db.EnqueueMail(ctx, []catalog.MailMessage{
		{ID: "mail_ok", To: "a@example.com", Subject: "s", Body: "b", CreatedAt: mailT0}, bad[1]}), catalog.ErrInvalid)
	if _, err := db.Mail(ctx, "mail_ok"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a half-bad batch left mail_ok behind: %v", err)
	}
	if err := db.EnqueueMail(ctx, []catalog.MailMessage{
		{ID: "mail_1", To: "a@example.com", Subject: "one", Body: "body 1\n", CreatedAt: mailT0},
		{ID: "mail_2", To: "b@example.com", Subject: "two", Body: "body 2\n", CreatedAt: mailT0, NotBefore: mailT0.Add(time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "duplicate id", db.EnqueueMail(ctx, []catalog.MailMessage{{ID: "mail_1", To: "a@example.com", CreatedAt: mailT0}}), catalog.ErrExists)

	got, err := db.ClaimMail(ctx, "r1", mailT0, time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "mail_1" || got[0].Attempts != 1 || got[0].Body != "body 1\n" || got[0].LeaseOwner != "r1" {
		t.Fatalf("claim at t0 = %+v, want mail_1 only (mail_2 is not due)", got)
	}
	if again, err := db.ClaimMail(ctx, "r2", mailT0.Add(30*time.Second), time.Minute, 10); err != nil || len(again) != 0 {
		t.Fatalf("claim during the lease = %+v, %v; want nothing", again, err)
	}
	wantErr(t, "mark by a non-owner", db.MarkMailSent(ctx, "mail_1", "r2", mailT0), catalog.ErrConflict)
	next := mailT0.Add(5 * time.Minute)
	if err := db.RetryMail(ctx, "mail_1", "r1", next, "smtp down"); err != nil {
		t.Fatal(err)
	}
	m, err := db.Mail(ctx, "mail_1")
	if err != nil || !m.NotBefore.Equal(next) || m.LastError != "smtp down" || m.LeaseOwner != "" {
		t.Fatalf("after retry: %+v, %v", m, err)
	}
	if early, _ := db.ClaimMail(ctx, "r2", next.Add(-time.Millisecond), time.Minute, 10); len(early) != 0 {
		t.Fatalf("claimed before its retry time: %+v", early)
	}
	got, err = db.ClaimMail(ctx, "r2", next, time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].Attempts != 2 {
		t.Fatalf("claim at the retry time = %+v, %v", got, err)
	}
	// r2's lease expires and r3 takes the message over: r2 can no longer mark it.
	got, err = db.ClaimMail(ctx, "r3", next.Add(2*time.Minute), time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].Attempts != 3 {
		t.Fatalf("claim after the lease expired = %+v, %v", got, err)
	}
	wantErr(t, "mark by the expired owner", db.MarkMailSent(ctx, "mail_1", "r2", next), catalog.ErrConflict)
	if err := db.MarkMailSent(ctx, "mail_1", "r3", next.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if m, err := db.Mail(ctx, "mail_1"); err != nil || m.SentAt.IsZero() {
		t.Fatalf("after mark sent: %+v, %v", m, err)
	}
	if late, _ := db.ClaimMail(ctx, "r4", mailT0.Add(24*time.Hour), time.Minute, 10); len(late) != 1 || late[0].ID != "mail_2" {
		t.Fatalf("a sent message was claimed again, or mail_2 was not: %+v", late)
	}
	if err := db.FailMail(ctx, "mail_2", "r4", mailT0.Add(24*time.Hour), "550 no such user"); err != nil {
		t.Fatal(err)
	}
	if late, _ := db.ClaimMail(ctx, "r5", mailT0.Add(48*time.Hour), time.Minute, 10); len(late) != 0 {
		t.Fatalf("a failed message was claimed again: %+v", late)
	}
}

// testMailClaimRace claims from two handles at once: every message is claimed
// exactly once.
func testMailClaimRace(t *testing.T, a, b catalog.Catalog) {
	ctx := ctxT(t)
	const n = 60
	var msgs []catalog.MailMessage
	for i := range n {
		msgs = append(msgs, catalog.MailMessage{ID: fmt.Sprintf("mail_%03d", i), To: "x@example.com", Subject: "s", Body: "b", CreatedAt: mailT0})
	}
	if err := a.EnqueueMail(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[string]string{}
		wg   sync.WaitGroup
	)
	for w, db := range []catalog.Catalog{a, b, a, b} {
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				got, err := db.ClaimMail(ctx, owner, mailT0, time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, dup := seen[m.ID]; dup {
						t.Errorf("%s claimed by %s and %s", m.ID, prev, owner)
					}
					seen[m.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d messages claimed, want %d", len(seen), n)
	}
}

func testDigestSettings(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_d1", "prj_d2")
	d, err := db.DigestState(ctx, "prj_d1")
	if err != nil || d.Schedule != catalog.DigestDaily || d.LastPeriod != "" {
		t.Fatalf("default state = %+v, %v; want daily, never sent", d, err)
	}
	if _, err := db.DigestState(ctx, "prj_nope"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("state of an unknown project: %v", err)
	}
	wantErr(t, "bad schedule", func() error { _, err := db.SetDigestSchedule(ctx, "prj_d1", "hourly", mailT0); return err }(), catalog.ErrInvalid)
	wantErr(t, "unknown project", func() error { _, err := db.SetDigestSchedule(ctx, "prj_nope", "weekly", mailT0); return err }(), catalog.ErrNotFound)
	if d, err = db.SetDigestSchedule(ctx, "prj_d2", catalog.DigestWeekly, mailT0); err != nil || d.Schedule != catalog.DigestWeekly || !d.UpdatedAt.Equal(mailT0) {
		t.Fatalf("set weekly = %+v, %v", d, err)
	}
	all, err := db.ListDigestStates(ctx, "", 10)
	if err != nil || len(all) != 2 || all[0].Schedule != catalog.DigestDaily || all[1].Schedule != catalog.DigestWeekly {
		t.Fatalf("list = %+v, %v", all, err)
	}
	if page, _ := db.ListDigestStates(ctx, "prj_d1", 10); len(page) != 1 || page[0].ProjectID != "prj_d2" {
		t.Fatalf("page after prj_d1 = %+v", page)
	}

	// Opt-ins count for members only, and only when made after the membership began.
	for _, email := range []string{"a@example.com", "b@example.com"} {
		if _, err := db.AddMember(ctx, catalog.Member{ProjectID: "prj_d1", Email: email, Role: "member", CreatedAt: mailT0}); err != nil {
			t.Fatal(err)
		}
	}
	for _, email := range []string{"b@example.com", "a@example.com", "stranger@example.com"} {
		if err := db.SetDigestOptIn(ctx, "prj_d1", email, true, mailT0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := db.DigestRecipients(ctx, "prj_d1"); err != nil || !slices.Equal(r, []string{"a@example.com", "b@example.com"}) {
		t.Fatalf("recipients = %v, %v", r, err)
	}
	if d, err := db.DigestState(ctx, "prj_d1"); err != nil || d.RecipientCount != 2 {
		t.Fatalf("state.Recipients = %d, %v; want 2", d.RecipientCount, err)
	}
	if all, err := db.ListDigestStates(ctx, "", 10); err != nil || all[0].RecipientCount != 2 || all[1].RecipientCount != 0 {
		t.Fatalf("listed recipients = %+v, %v", all, err)
	}
	if err := db.SetDigestOptIn(ctx, "prj_d1", "a@example.com", false, mailT0); err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveMember(ctx, "prj_d1", "b@example.com"); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.DigestRecipients(ctx, "prj_d1"); len(r) != 0 {
		t.Fatalf("recipients after an opt-out and a removal = %v", r)
	}
	// Re-added, b's old opt-in does not count.
	if _, err := db.AddMember(ctx, catalog.Member{ProjectID: "prj_d1", Email: "b@example.com", Role: "member", CreatedAt: mailT0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.DigestRecipients(ctx, "prj_d1"); len(r) != 0 {
		t.Fatalf("a re-added member's old opt-in counted: %v", r)
	}
	if d, _ := db.DigestState(ctx, "prj_d1"); d.RecipientCount != 0 {
		t.Fatalf("state.Recipients = %d after the opt-out and the removal", d.RecipientCount)
	}
	wantErr(t, "opt-in to an unknown project", db.SetDigestOptIn(ctx, "prj_nope", "a@example.com", true, mailT0), catalog.ErrNotFound)
}

// testCommitDigestOnce commits the same digest from two handles at once: one wins,
// and only its messages are queued.
func testCommitDigestOnce(t *testing.T, a, b catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, a, "prj_once")
	next := catalog.DigestState{ProjectID: "prj_once", LastPeriod: "daily 2026-11-24", LastAt: mailT0, LastEvents: 7, LastAudit: 2}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, db := range []catalog.Catalog{a, b} {
		wg.Go(func() {
			msg := catalog.MailMessage{ID: fmt.Sprintf("mail_digest_%d", i), To: "a@example.com", Subject: "digest", Body: "b", CreatedAt: mailT0}
			errs[i] = db.CommitDigest(ctx, "", next, []catalog.MailMessage{msg})
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, catalog.ErrConflict):
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d replicas committed the digest, want 1 (%v)", won, errs)
	}
	queued, err := a.ClaimMail(ctx, "check", mailT0, time.Minute, 10)
	if err != nil || len(queued) != 1 {
		t.Fatalf("queued = %+v, %v; want the winner's message only", queued, err)
	}
	d, err := b.DigestState(ctx, "prj_once")
	if err != nil || d.LastPeriod != next.LastPeriod || d.LastEvents != 7 || d.LastAudit != 2 || !d.LastAt.Equal(mailT0) || d.Schedule != catalog.DigestDaily {
		t.Fatalf("state after the digest = %+v, %v", d, err)
	}
	wantErr(t, "the same period again", a.CommitDigest(ctx, "", next, nil), catalog.ErrConflict)
	wantErr(t, "no new period", a.CommitDigest(ctx, next.LastPeriod, next, nil), catalog.ErrInvalid)
}
