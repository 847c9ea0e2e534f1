package control

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/sequencer"
)

// TestEveryChangeIsAuditedFirst makes every kind of change and checks that each one's
// audit record was sealed before the catalog write, that the stream names every
// action with its actor in order, and that a full rebuild of the stream is valid.
func TestEveryChangeIsAuditedFirst(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	p := e.project("acme")
	evt := e.event(p.ID, "user.login")
	bob := Actor{Type: "operator", ID: "bob", Display: "Bob"}

	steps := []struct {
		action, write string
		actor         Actor
		do            func() error
	}{
		{"member.added", "AddMember", operator, func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "carol@example.com", "admin")
			return err
		}},
		{"member.removed", "RemoveMember", bob, func() error {
			return e.svc.RemoveMember(ctx, bob, p.ID, "carol@example.com")
		}},
		{"api_key.created", "CreateAPIKey", operator, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "ci", []string{catalog.ScopeWrite}, time.Now().Add(time.Hour))
			return err
		}},
		{"api_key.revoked", "RevokeAPIKey", bob, func() error {
			ks, err := e.svc.ListAPIKeys(ctx, p.ID)
			if err != nil || len(ks) != 1 {
				return fmt.Errorf("list keys: %v %v", ks, err)
			}
			_, err = e.svc.RevokeAPIKey(ctx, bob, p.ID, ks[0].ID)
			return err
		}},
		{"signing_key.registered", "CreateSigningKey", operator, func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, p.ID, newPublicKey(t))
			return err
		}},
		{"signing_key.revoked", "RevokeSigningKey", operator, func() error {
			ks, err := e.svc.ListSigningKeys(ctx, p.ID)
			if err != nil || len(ks) != 1 {
				return fmt.Errorf("list signing keys: %v %v", ks, err)
			}
			_, err = e.svc.RevokeSigningKey(ctx, operator, p.ID, ks[0].ID)
			return err
		}},
		{"retention.set", "SetRetention", bob, func() error {
			_, err := e.svc.SetRetention(ctx, bob, p.ID, catalog.StreamEvents, 30)
			return err
		}},
		{"legal_hold.created", "CreateLegalHold", operator, func() error {
			_, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt}, "litigation")
			return err
		}},
		{"legal_hold.released", "ReleaseLegalHold", bob, func() error {
			hs, err := e.svc.ListHolds(ctx, p.ID)
			if err != nil || len(hs) != 1 {
				return fmt.Errorf("list holds: %v %v", hs, err)
			}
			_, err = e.svc.ReleaseHold(ctx, bob, p.ID, hs[0].ID)
			return err
		}},
		{"project.rate_limit.set", "SetIngestRateLimit", bob, func() error {
			_, err := e.svc.SetIngestRateLimit(ctx, bob, p.ID, 20_000)
			return err
		}},
	}
	e.tr.reset()
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.action, err)
		}
		got := e.tr.reset()
		want := []string{"seal " + s.action, "catalog " + s.write}
		if !slices.Equal(got, want) {
			t.Errorf("%s: calls %q, want %q (audit record sealed before the catalog write)", s.action, got, want)
		}
	}

	recs := e.audit(p.ID)
	wantActions := []string{"project.created"}
	wantActors := []Actor{operator}
	for _, s := range steps {
		wantActions = append(wantActions, s.action)
		wantActors = append(wantActors, s.actor)
	}
	if len(recs) != len(wantActions) {
		t.Fatalf("audit stream has %d records, want %d", len(recs), len(wantActions))
	}
	for i, r := range recs {
		if r.Action != wantActions[i] || r.Actor != wantActors[i] || r.Status != "success" {
			t.Errorf("record %d = %s by %+v (%s), want %s by %+v (success)", i+1, r.Action, r.Actor, r.Status, wantActions[i], wantActors[i])
		}
		if r.Target.Type == "" || r.Target.ID == "" {
			t.Errorf("record %d (%s) has no target: %+v", i+1, r.Action, r.Target)
		}
	}
	if recs[0].Target.ID != p.ID {
		t.Errorf("project.created targets %q, want %q", recs[0].Target.ID, p.ID)
	}
	if root, _ := recs[8].Metadata["membershipRoot"].(string); len(root) != 64 {
		t.Errorf("legal_hold.created commits no membership root: %v", recs[8].Metadata)
	}
	if _, ok := recs[3].Metadata["prefix"]; !ok {
		t.Errorf("api_key.created does not name the key prefix: %v", recs[3].Metadata)
	}

	res, err := e.seq.Rebuild(ctx, auditLog(p.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Break != nil || res.Size != uint64(len(wantActions)) || res.Root != res.Live.Root {
		t.Fatalf("rebuild of project_audit: size %d root %x break %+v; live %+v", res.Size, res.Root, res.Break, res.Live)
	}
}

// TestBadInputChangesNothing checks every operation's validation: the right error, no
// catalog change and no audit record.
func TestBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	p := e.project("acme")
	other := e.project("other")
	otherEvt := e.event(other.ID, "x")
	evt := e.event(p.ID, "user.login")
	if _, err := e.svc.AddMember(ctx, operator, p.ID, "carol@example.com", "member"); err != nil {
		t.Fatal(err)
	}
	_, key, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeWrite}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	_, revoked, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeRead}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RevokeAPIKey(ctx, operator, p.ID, revoked.ID); err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := e.svc.CreateAPIKey(ctx, operator, other.ID, "", []string{catalog.ScopeRead}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	pub := newPublicKey(t)
	sk, err := e.svc.AddSigningKey(ctx, operator, p.ID, pub)
	if err != nil {
		t.Fatal(err)
	}
	oldSK, err := e.svc.AddSigningKey(ctx, operator, p.ID, newPublicKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RevokeSigningKey(ctx, operator, p.ID, oldSK.ID); err != nil {
		t.Fatal(err)
	}
	hold, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt}, "")
	if err != nil {
		t.Fatal(err)
	}
	released, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReleaseHold(ctx, operator, p.ID, released.ID); err != nil {
		t.Fatal(err)
	}

	const unknown = "prj_00000000000000000000000000"
	future := time.Now().Add(time.Hour)
	cases := []struct {
		name string
		want error
		do   func() error
	}{
		{"project empty name", ErrInvalid, func() error { _, err := e.svc.CreateProject(ctx, operator, "  "); return err }},
		{"project long name", ErrInvalid, func() error {
			_, err := e.svc.CreateProject(ctx, operator, strings.Repeat("x", 129))
			return err
		}},
		{"project no actor", ErrInvalid, func() error { _, err := e.svc.CreateProject(ctx, Actor{}, "x"); return err }},
		{"member unknown project", ErrNotFound, func() error {
			_, err := e.svc.AddMember(ctx, operator, unknown, "dan@example.com", "member")
			return err
		}},
		{"member no project id", ErrInvalid, func() error {
			_, err := e.svc.AddMember(ctx, operator, "", "dan@example.com", "member")
			return err
		}},
		{"member bad email", ErrInvalid, func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "not-an-address", "member")
			return err
		}},
		{"member display-name email", ErrInvalid, func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "Dan <dan@example.com>", "member")
			return err
		}},
		{"member bad role", ErrInvalid, func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "dan@example.com", "root")
			return err
		}},
		{"member duplicate", ErrExists, func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "carol@example.com", "admin")
			return err
		}},
		{"member duplicate other case", ErrExists, func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "Carol@Example.com", "admin")
			return err
		}},
		{"member no actor", ErrInvalid, func() error {
			_, err := e.svc.AddMember(ctx, Actor{Type: "operator"}, p.ID, "dan@example.com", "member")
			return err
		}},
		{"remove unknown member", ErrNotFound, func() error { return e.svc.RemoveMember(ctx, operator, p.ID, "dan@example.com") }},
		{"remove member unknown project", ErrNotFound, func() error {
			return e.svc.RemoveMember(ctx, operator, unknown, "carol@example.com")
		}},
		{"key unknown project", ErrNotFound, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, unknown, "", []string{catalog.ScopeRead}, time.Time{})
			return err
		}},
		{"key no scope", ErrInvalid, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", nil, time.Time{})
			return err
		}},
		{"key unknown scope", ErrInvalid, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{"log:delete"}, time.Time{})
			return err
		}},
		{"key scope twice", ErrInvalid, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeRead, catalog.ScopeRead}, time.Time{})
			return err
		}},
		{"key past expiry", ErrInvalid, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeRead}, time.Now().Add(-time.Minute))
			return err
		}},
		{"key long name", ErrInvalid, func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, strings.Repeat("n", 129), []string{catalog.ScopeRead}, future)
			return err
		}},
		{"revoke unknown key", ErrNotFound, func() error {
			_, err := e.svc.RevokeAPIKey(ctx, operator, p.ID, "key_nope")
			return err
		}},
		{"revoke key of another project", ErrNotFound, func() error {
			_, err := e.svc.RevokeAPIKey(ctx, operator, p.ID, otherKey.ID)
			return err
		}},
		{"revoke revoked key", ErrState, func() error {
			_, err := e.svc.RevokeAPIKey(ctx, operator, p.ID, revoked.ID)
			return err
		}},
		{"revoke key unknown project", ErrNotFound, func() error {
			_, err := e.svc.RevokeAPIKey(ctx, operator, unknown, key.ID)
			return err
		}},
		{"signing key short", ErrInvalid, func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, p.ID, "abcd")
			return err
		}},
		{"signing key uppercase", ErrInvalid, func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, p.ID, strings.ToUpper(newPublicKey(t)))
			return err
		}},
		{"signing key not hex", ErrInvalid, func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, p.ID, strings.Repeat("zz", 32))
			return err
		}},
		{"signing key duplicate", ErrExists, func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, p.ID, pub)
			return err
		}},
		{"signing key unknown project", ErrNotFound, func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, unknown, newPublicKey(t))
			return err
		}},
		{"revoke unknown signing key", ErrNotFound, func() error {
			_, err := e.svc.RevokeSigningKey(ctx, operator, p.ID, "sk_nope")
			return err
		}},
		{"revoke revoked signing key", ErrState, func() error {
			_, err := e.svc.RevokeSigningKey(ctx, operator, p.ID, oldSK.ID)
			return err
		}},
		{"revoke signing key of another project", ErrNotFound, func() error {
			_, err := e.svc.RevokeSigningKey(ctx, operator, other.ID, sk.ID)
			return err
		}},
		{"retention negative", ErrInvalid, func() error {
			_, err := e.svc.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, -1)
			return err
		}},
		{"retention zero", ErrInvalid, func() error {
			_, err := e.svc.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, 0)
			return err
		}},
		{"retention too long", ErrInvalid, func() error {
			_, err := e.svc.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, MaxRetentionDays+1)
			return err
		}},
		{"retention bad stream", ErrInvalid, func() error {
			_, err := e.svc.SetRetention(ctx, operator, p.ID, "project-audit", 1)
			return err
		}},
		{"retention unknown project", ErrNotFound, func() error {
			_, err := e.svc.SetRetention(ctx, operator, unknown, catalog.StreamEvents, 1)
			return err
		}},
		{"hold no events", ErrInvalid, func() error {
			_, err := e.svc.CreateHold(ctx, operator, p.ID, nil, "")
			return err
		}},
		{"hold unknown event", ErrNotFound, func() error {
			_, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt, "evt_nope"}, "")
			return err
		}},
		{"hold event of another project", ErrNotFound, func() error {
			_, err := e.svc.CreateHold(ctx, operator, p.ID, []string{otherEvt}, "")
			return err
		}},
		{"hold long reason", ErrInvalid, func() error {
			_, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt}, strings.Repeat("r", 1025))
			return err
		}},
		{"hold unknown project", ErrNotFound, func() error {
			_, err := e.svc.CreateHold(ctx, operator, unknown, []string{evt}, "")
			return err
		}},
		{"release unknown hold", ErrNotFound, func() error {
			_, err := e.svc.ReleaseHold(ctx, operator, p.ID, "hold_nope")
			return err
		}},
		{"release released hold", ErrState, func() error {
			_, err := e.svc.ReleaseHold(ctx, operator, p.ID, released.ID)
			return err
		}},
		{"release hold of another project", ErrNotFound, func() error {
			_, err := e.svc.ReleaseHold(ctx, operator, other.ID, hold.ID)
			return err
		}},
		{"rate limit negative", ErrInvalid, func() error {
			_, err := e.svc.SetIngestRateLimit(ctx, operator, p.ID, -1)
			return err
		}},
		{"rate limit over the maximum", ErrInvalid, func() error {
			_, err := e.svc.SetIngestRateLimit(ctx, operator, p.ID, catalog.MaxIngestRateLimit+1)
			return err
		}},
		{"rate limit unknown project", ErrNotFound, func() error {
			_, err := e.svc.SetIngestRateLimit(ctx, operator, unknown, 10)
			return err
		}},
		{"rate limit no actor", ErrInvalid, func() error {
			_, err := e.svc.SetIngestRateLimit(ctx, Actor{}, p.ID, 10)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, beforeOther := e.state(p.ID), e.state(other.ID)
			size, sizeOther := e.auditSize(p.ID), e.auditSize(other.ID)
			e.tr.reset()
			err := c.do()
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if steps := e.tr.reset(); len(steps) != 0 {
				t.Errorf("rejected change still called %q", steps)
			}
			if got := e.state(p.ID); got != before {
				t.Errorf("catalog changed:\n%s\nwas:\n%s", got, before)
			}
			if got := e.state(other.ID); got != beforeOther {
				t.Errorf("other project changed:\n%s\nwas:\n%s", got, beforeOther)
			}
			if got, got2 := e.auditSize(p.ID), e.auditSize(other.ID); got != size || got2 != sizeOther {
				t.Errorf("audit streams grew: %d -> %d, %d -> %d", size, got, sizeOther, got2)
			}
		})
	}
}

// TestFailedApplyIsRecorded fails each catalog write after its audit record sealed: the
// caller gets the error, the catalog is unchanged, and the stream records the attempt
// followed by "<action>.failed".
func TestFailedApplyIsRecorded(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	p := e.project("acme")
	evt := e.event(p.ID, "user.login")
	if _, err := e.svc.AddMember(ctx, operator, p.ID, "carol@example.com", "member"); err != nil {
		t.Fatal(err)
	}
	_, key, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeWrite}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	sk, err := e.svc.AddSigningKey(ctx, operator, p.ID, newPublicKey(t))
	if err != nil {
		t.Fatal(err)
	}
	hold, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt}, "")
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		write, action string
		do            func() error
	}{
		{"AddMember", "member.added", func() error {
			_, err := e.svc.AddMember(ctx, operator, p.ID, "dan@example.com", "member")
			return err
		}},
		{"RemoveMember", "member.removed", func() error { return e.svc.RemoveMember(ctx, operator, p.ID, "carol@example.com") }},
		{"CreateAPIKey", "api_key.created", func() error {
			_, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeRead}, time.Time{})
			return err
		}},
		{"RevokeAPIKey", "api_key.revoked", func() error { _, err := e.svc.RevokeAPIKey(ctx, operator, p.ID, key.ID); return err }},
		{"CreateSigningKey", "signing_key.registered", func() error {
			_, err := e.svc.AddSigningKey(ctx, operator, p.ID, newPublicKey(t))
			return err
		}},
		{"RevokeSigningKey", "signing_key.revoked", func() error {
			_, err := e.svc.RevokeSigningKey(ctx, operator, p.ID, sk.ID)
			return err
		}},
		{"SetRetention", "retention.set", func() error {
			_, err := e.svc.SetRetention(ctx, operator, p.ID, catalog.StreamProjectAudit, 7)
			return err
		}},
		{"CreateLegalHold", "legal_hold.created", func() error {
			_, err := e.svc.CreateHold(ctx, operator, p.ID, []string{evt}, "")
			return err
		}},
		{"ReleaseLegalHold", "legal_hold.released", func() error {
			_, err := e.svc.ReleaseHold(ctx, operator, p.ID, hold.ID)
			return err
		}},
		{"SetIngestRateLimit", "project.rate_limit.set", func() error {
			_, err := e.svc.SetIngestRateLimit(ctx, operator, p.ID, 1234)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.write, func(t *testing.T) {
			before := e.state(p.ID)
			size := e.auditSize(p.ID)
			e.cat.failOn(c.write)
			defer e.cat.failOn("")
			if err := c.do(); !errors.Is(err, errInjected) {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			if got := e.state(p.ID); got != before {
				t.Errorf("catalog changed:\n%s\nwas:\n%s", got, before)
			}
			recs := e.audit(p.ID)
			if uint64(len(recs)) != size+2 {
				t.Fatalf("audit stream grew by %d records, want 2", uint64(len(recs))-size)
			}
			attempt, failed := recs[size], recs[size+1]
			if attempt.Action != c.action || attempt.Status != "success" {
				t.Errorf("first record = %s (%s), want %s (success)", attempt.Action, attempt.Status, c.action)
			}
			if failed.Action != c.action+".failed" || failed.Status != "failed" || failed.Actor != operator ||
				failed.Target != attempt.Target {
				t.Errorf("second record = %+v, want %s.failed by %+v on %+v", failed, c.action, operator, attempt.Target)
			}
			if msg, _ := failed.Metadata["error"].(string); !strings.Contains(msg, errInjected.Error()) {
				t.Errorf("failed record's error = %q, want it to name the failure", msg)
			}
		})
	}

	// A failed project creation leaves no project, and its audit stream says so.
	e.cat.failOn("CreateProject")
	n := len(e.state(""))
	_, err = e.svc.CreateProject(ctx, operator, "doomed")
	e.cat.failOn("")
	if !errors.Is(err, errInjected) {
		t.Fatalf("CreateProject err = %v, want the injected failure", err)
	}
	if len(e.state("")) != n {
		t.Error("failed CreateProject left a project")
	}

	res, err := e.seq.Rebuild(ctx, auditLog(p.ID), nil)
	if err != nil || res.Break != nil || res.Size != e.auditSize(p.ID) {
		t.Fatalf("rebuild after failures: %+v, %v", res, err)
	}
}

// TestAuditFailureChangesNothing: when the audit record cannot be sealed, the change is
// not made.
func TestAuditFailureChangesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	p := e.project("acme")
	before, size := e.state(p.ID), e.auditSize(p.ID)
	e.seq.mu.Lock()
	e.seq.fail = true
	e.seq.mu.Unlock()
	e.tr.reset()
	if _, err := e.svc.AddMember(ctx, operator, p.ID, "dan@example.com", "member"); !errors.Is(err, sequencer.ErrSealFailed) {
		t.Fatalf("AddMember err = %v, want the seal failure", err)
	}
	if _, _, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeRead}, time.Time{}); !errors.Is(err, sequencer.ErrSealFailed) {
		t.Fatalf("CreateAPIKey err = %v, want the seal failure", err)
	}
	if _, err := e.svc.CreateProject(ctx, operator, "x"); !errors.Is(err, sequencer.ErrSealFailed) {
		t.Fatalf("CreateProject err = %v, want the seal failure", err)
	}
	for _, s := range e.tr.reset() {
		if strings.HasPrefix(s, "catalog ") {
			t.Errorf("catalog written after a failed seal: %s", s)
		}
	}
	if got := e.state(p.ID); got != before {
		t.Errorf("catalog changed:\n%s\nwas:\n%s", got, before)
	}
	if got := e.auditSize(p.ID); got != size {
		t.Errorf("audit stream grew from %d to %d", size, got)
	}
}

// TestAuthenticate covers API key authentication: unknown tokens, scopes kept,
// revocation honoured at once by the revoking process and within the cache TTL (one
// second) by another process, and expiry honoured at once even from the cache.
func TestAuthenticate(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	p := e.project("acme")
	token, k, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeWrite, catalog.ScopeVerify}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, tokenPrefix) || k.Prefix != token[:12] || string(k.Hash) != string(HashToken(token)) {
		t.Fatalf("token %q, key %+v", token, k)
	}
	got, err := e.svc.Authenticate(ctx, token)
	if err != nil || got.ID != k.ID || got.ProjectID != p.ID || !got.HasScope(catalog.ScopeVerify) || got.HasScope(catalog.ScopeRead) {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "stk_", token + "x", "Bearer " + token, strings.Repeat("stk_", 100), "sto_" + token[4:]} {
		if _, err := e.svc.Authenticate(ctx, bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("Authenticate(%q) err = %v, want ErrBadKey", bad, err)
		}
	}

	// A second Service over the same catalog is another replica with its own cache.
	var mu sync.Mutex
	clock := time.Now()
	replica := New(e.db, e.seq, nil)
	replica.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	if _, err := replica.Authenticate(ctx, token); err != nil {
		t.Fatalf("replica: %v", err)
	}
	if _, err := e.svc.RevokeAPIKey(ctx, operator, p.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(ctx, token); !errors.Is(err, ErrBadKey) {
		t.Fatalf("revoking process still accepts the key: %v", err)
	}
	advance(999 * time.Millisecond)
	if _, err := replica.Authenticate(ctx, token); err != nil {
		t.Logf("replica refused the revoked key early (allowed): %v", err)
	}
	advance(time.Millisecond)
	if _, err := replica.Authenticate(ctx, token); !errors.Is(err, ErrBadKey) {
		t.Fatalf("replica accepts a key revoked 1 s ago: %v", err)
	}

	// Expiry needs no catalog read: a cached key is refused the moment it expires.
	expToken, _, err := replica.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeWrite}, clock.Add(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Authenticate(ctx, expToken); err != nil {
		t.Fatalf("fresh key refused: %v", err)
	}
	advance(500 * time.Millisecond)
	if _, err := replica.Authenticate(ctx, expToken); !errors.Is(err, ErrBadKey) {
		t.Fatalf("expired key accepted from the cache: %v", err)
	}
}

// TestIngestRateLimit: the override set through the control plane is what the API
// reads back, at once on this replica (the change drops the cached value).
func TestIngestRateLimit(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme")
	if n, err := e.svc.IngestRateLimit(e.ctx, p.ID); err != nil || n != 0 {
		t.Fatalf("IngestRateLimit of a new project = %d, %v; want 0", n, err)
	}
	if got, err := e.svc.SetIngestRateLimit(e.ctx, operator, p.ID, 5000); err != nil || got.IngestRateLimit != 5000 {
		t.Fatalf("SetIngestRateLimit = %+v, %v", got, err)
	}
	if n, err := e.svc.IngestRateLimit(e.ctx, p.ID); err != nil || n != 5000 {
		t.Fatalf("IngestRateLimit after the override = %d, %v; want 5000", n, err)
	}
	if _, err := e.svc.IngestRateLimit(e.ctx, "prj_00000000000000000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("IngestRateLimit of an unknown project: %v, want ErrNotFound", err)
	}
	recs := e.audit(p.ID)
	last := recs[len(recs)-1]
	if last.Action != "project.rate_limit.set" || last.Target.ID != p.ID || fmt.Sprint(last.Metadata["ingestRateLimit"]) != "5000" {
		t.Fatalf("audit record %+v", last)
	}
}
