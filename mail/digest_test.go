package mail

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tlog"
)

var owner = control.Actor{Type: "operator", ID: "ops"}

func TestPeriod(t *testing.T) {
	for _, c := range []struct {
		schedule string
		at       time.Time
		want     string
	}{
		{catalog.DigestDaily, time.Date(2026, 11, 24, 23, 59, 59, 0, time.UTC), "daily 2026-11-24"},
		{catalog.DigestDaily, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), "daily 2026-11-25"},
		{catalog.DigestDaily, time.Date(2026, 11, 25, 1, 0, 0, 0, time.FixedZone("x", 3*3600)), "daily 2026-11-24"},
		{catalog.DigestWeekly, time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC), "weekly 2026-W48"}, // Sunday
		{catalog.DigestWeekly, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), "weekly 2026-W49"},  // Monday
		{catalog.DigestWeekly, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), "weekly 2026-W53"},
		{catalog.DigestOff, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), ""},
	} {
		if got := Period(c.schedule, c.at); got != c.want {
			t.Errorf("Period(%s, %v) = %q, want %q", c.schedule, c.at, got, c.want)
		}
	}
}

func TestSubjectName(t *testing.T) {
	for in, want := range map[string]string{
		"Acme":                  "Acme",
		"two\nlines\ttab":       "two lines tab",
		strings.Repeat("ü", 61): strings.Repeat("ü", 59) + "…",
		strings.Repeat("x", 60): strings.Repeat("x", 60),
	} {
		if got := subjectName(in); got != want {
			t.Errorf("subjectName(%q) = %q, want %q", in, got, want)
		}
	}
}

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// sealtrailCLI builds the offline verifier once for the package's tests.
func sealtrailCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sealtrail-cli")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "sealtrail")
		out, err := exec.Command("go", "build", "-o", cliPath, "github.com/sealtrail/sealtrail/cmd/sealtrail").CombinedOutput()
		if err != nil {
			cliErr = errors.New(string(out))
		}
	})
	if cliErr != nil {
		t.Fatalf("build cmd/sealtrail: %v", cliErr)
	}
	return cliPath
}

// verifyDigest runs sealtrail verify digest on eml and returns its exit status.
func verifyDigest(t *testing.T, eml []byte, pub []byte) (int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "digest.eml")
	if err := os.WriteFile(path, eml, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sealtrailCLI(t), "verify", "digest", "--file", path, "--service-key", tlog.Hex(tlog.Hash(pub)))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatal(err)
	return -1, ""
}

// seal appends n events to the project's events stream and returns their ids.
func seal(t *testing.T, r *replica, projectID string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		payload, err := tlog.Canonicalize([]byte(`{"action":"doc.read","actor":{"type":"user","id":"u1"}}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.seq.Submit(t.Context(), catalog.LogID{ProjectID: projectID, Stream: catalog.StreamEvents},
			sequencer.Entry{Payload: payload, Index: sequencer.Index{Action: "doc.read", Status: "success", ActorType: "user", ActorID: "u1"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	return ids
}

// digestRound runs both replicas' digesters and queues at once and returns the
// messages mailpit received in the round, by recipient.
func digestRound(t *testing.T, w *world, a, b *replica, before int) map[string]testenv.MailpitMessage {
	t.Helper()
	var queued [2]int
	both(a, b, func(r *replica) {
		n, err := r.digest.RunOnce(w.ctx)
		if err != nil {
			t.Error(err)
		}
		if r == a {
			queued[0] = n
		} else {
			queued[1] = n
		}
	})
	if queued[0]+queued[1] > 1 {
		t.Fatalf("both replicas queued the digest: %v", queued)
	}
	both(a, b, func(r *replica) {
		if _, err := r.queue.Drain(w.ctx); err != nil {
			t.Error(err)
		}
	})
	all := w.pit.Messages(t)
	got := map[string]testenv.MailpitMessage{}
	for _, m := range all[:len(all)-before] { // newest first
		to := m.To[0].Address
		if _, dup := got[to]; dup {
			t.Fatalf("%s received the digest twice", to)
		}
		got[to] = m
	}
	return got
}

func recipients(got map[string]testenv.MailpitMessage) []string {
	var out []string
	for to := range got {
		out = append(out, to)
	}
	slices.Sort(out)
	return out
}

// TestDigests: digests go out on schedule (fake clock), to opted-in members only,
// once across two replicas; each verifies offline, and an edited one does not.
func TestDigests(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { testDigests(t, kind) })
	}
}

func testDigests(t *testing.T, kind string) {
	w := newWorld(t)
	a, b := w.twoReplicas(kind)
	ctx := w.ctx
	p, err := a.ctl.CreateProject(ctx, owner, "Acme \"audit\"")
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := a.ctl.CreateProject(ctx, owner, "no recipients")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"ann@example.com", "bob@example.com", "cy@example.com"} {
		if _, err := a.ctl.AddMember(ctx, owner, p.ID, m, "member"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.ctl.AddMember(ctx, owner, quiet.ID, "ann@example.com", "member"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"ann@example.com", "cy@example.com"} {
		if _, err := b.ctl.SetDigestOptIn(ctx, control.Actor{Type: "member", ID: m}, p.ID, m, true); err != nil {
			t.Fatal(err)
		}
	}
	ids := seal(t, a, p.ID, 3)
	hold, err := a.ctl.CreateHold(ctx, owner, p.ID, ids[:2], "case 7")
	if err != nil {
		t.Fatal(err)
	}
	// The events stream's head at size 3 is anchored; project_audit is not.
	evLog := catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamEvents}
	tree, err := a.seq.Tree(ctx, evLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.AddTreeHead(ctx, catalog.TreeHead{Log: evLog, TreeSize: tree.Size, RootHash: tree.Root,
		Timestamp: w.clock.Now().Add(-time.Hour), Signature: bytes.Repeat([]byte{1}, 64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.SetAnchor(ctx, evLog, tree.Size, catalog.Anchor{Type: "rekor", Ref: "https://rekor.test/1 index 5",
		AnchoredAt: w.clock.Now().Add(-30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}

	// Day 1: one digest, to ann and cy only, although both replicas ran.
	got := digestRound(t, w, a, b, 0)
	if r := recipients(got); !slices.Equal(r, []string{"ann@example.com", "cy@example.com"}) {
		t.Fatalf("day 1 recipients = %v, want the opted-in members", r)
	}
	eml := w.pit.Raw(t, got["ann@example.com"].ID)
	if code, out := verifyDigest(t, eml, w.pub); code != 0 {
		t.Fatalf("verify digest = %d:\n%s", code, out)
	}
	text, err := emailBody(eml)
	if err != nil {
		t.Fatal(err)
	}
	d, err := tlog.VerifyDigestText(w.pub, text)
	if err != nil {
		t.Fatal(err)
	}
	auditSize, err := a.seq.Tree(ctx, catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamProjectAudit})
	if err != nil {
		t.Fatal(err)
	}
	if d.ProjectID != p.ID || d.Name != p.Name || d.Period != "daily 2026-11-24" || d.Previous != "" ||
		d.Heads[0].TreeSize != 3 || d.Heads[0].RootHash != tlog.Hex(tree.Root) || d.Heads[1].TreeSize != auditSize.Size ||
		d.Counts[0].Count != 3 || d.Counts[1].Count != auditSize.Size {
		t.Fatalf("day 1 facts:\n%s", d.Marshal())
	}
	if d.Anchors[0].Type != "rekor" || d.Anchors[0].TreeSize != 3 || d.Anchors[0].Ref != "https://rekor.test/1 index 5" || d.Anchors[1].Type != "" {
		t.Fatalf("day 1 anchors: %+v", d.Anchors)
	}
	if len(d.Holds) != 1 || d.Holds[0].ID != hold.ID || d.Holds[0].MembershipRoot != tlog.Hex(hold.MembershipRoot) || d.Holds[0].Events != 2 {
		t.Fatalf("day 1 holds: %+v", d.Holds)
	}
	if !strings.Contains(text, "project_audit: not yet anchored") {
		t.Fatalf("the text does not say project_audit is not yet anchored:\n%s", text)
	}
	// An edited digest fails with exit 1.
	edited := bytes.Replace(eml, []byte("events:        3 added"), []byte("events:        0 added"), 1)
	if bytes.Equal(edited, eml) {
		t.Fatalf("the count line is not in the raw message:\n%s", eml)
	}
	if code, out := verifyDigest(t, edited, w.pub); code != 1 || !strings.Contains(out, "digest_text_edited") {
		t.Fatalf("verify an edited digest = %d:\n%s", code, out)
	}

	// Later the same day: nothing new.
	w.clock.Set(w.clock.Now().Add(10 * time.Hour))
	if got := digestRound(t, w, a, b, 2); len(got) != 0 {
		t.Fatalf("a second digest the same day went to %v", recipients(got))
	}

	// Day 2: cy is removed, bob opts in; two more events.
	if err := a.ctl.RemoveMember(ctx, owner, p.ID, "cy@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ctl.SetDigestOptIn(ctx, owner, p.ID, "bob@example.com", true); err != nil {
		t.Fatal(err)
	}
	seal(t, a, p.ID, 2)
	w.clock.Set(time.Date(2026, 11, 25, 0, 0, 1, 0, time.UTC))
	got = digestRound(t, w, a, b, 2)
	if r := recipients(got); !slices.Equal(r, []string{"ann@example.com", "bob@example.com"}) {
		t.Fatalf("day 2 recipients = %v", r)
	}
	text, err = emailBody(w.pit.Raw(t, got["bob@example.com"].ID))
	if err != nil {
		t.Fatal(err)
	}
	if d, err = tlog.VerifyDigestText(w.pub, text); err != nil {
		t.Fatal(err)
	}
	if d.Period != "daily 2026-11-25" || d.Previous != "2026-11-24T10:00:00.000Z" || d.Counts[0].Count != 2 || d.Heads[0].TreeSize != 5 ||
		d.Counts[1].Count != 2 { // cy removed, bob opted in
		t.Fatalf("day 2 facts:\n%s", d.Marshal())
	}

	// Weekly: one digest in the new week, then none until the next; off: none.
	if _, err := a.ctl.SetDigestSchedule(ctx, owner, p.ID, catalog.DigestWeekly); err != nil {
		t.Fatal(err)
	}
	sent := 4
	for _, c := range []struct {
		at   time.Time
		want int
	}{
		{time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), 2},  // W48's first weekly digest
		{time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC), 0}, // still W48
		{time.Date(2026, 11, 30, 0, 5, 0, 0, time.UTC), 2},  // W49
	} {
		w.clock.Set(c.at)
		got := digestRound(t, w, a, b, sent)
		if len(got) != c.want {
			t.Fatalf("weekly at %v: %d messages, want %d", c.at, len(got), c.want)
		}
		sent += len(got)
	}
	if _, err := b.ctl.SetDigestSchedule(ctx, owner, p.ID, catalog.DigestOff); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(time.Date(2026, 12, 14, 0, 0, 0, 0, time.UTC))
	if got := digestRound(t, w, a, b, sent); len(got) != 0 {
		t.Fatalf("schedule off: digest sent to %v", recipients(got))
	}
}
