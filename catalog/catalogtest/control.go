package catalogtest

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 456_789_000, time.UTC)

func createProjects(t *testing.T, db catalog.Catalog, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := db.CreateProject(ctxT(t), catalog.Project{ID: id, Name: "Project " + id, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
}

func testProjects(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	p, err := db.CreateProject(ctx, catalog.Project{ID: "prj_b", Name: "B", CreatedAt: t0})
	if err != nil || !p.CreatedAt.Equal(catalog.MS(t0)) || p.RequireSigned {
		t.Fatalf("CreateProject = %+v, %v", p, err)
	}
	_, err = db.CreateProject(ctx, catalog.Project{ID: "prj_b", Name: "again"})
	wantErr(t, "duplicate project", err, catalog.ErrExists)
	_, err = db.CreateProject(ctx, catalog.Project{ID: "b", Name: "no prefix"})
	wantErr(t, "project id without prj_", err, catalog.ErrInvalid)
	noTime, err := db.CreateProject(ctx, catalog.Project{ID: "prj_a", Name: "A"})
	if err != nil || noTime.CreatedAt.IsZero() {
		t.Fatalf("CreateProject without a time = %+v, %v", noTime, err)
	}
	createProjects(t, db, "prj_c", "prj_d")
	got, err := db.Project(ctx, "prj_b")
	if err != nil || got != p {
		t.Fatalf("Project = %+v, %v; want %+v", got, err, p)
	}
	_, err = db.Project(ctx, "prj_x")
	wantErr(t, "unknown project", err, catalog.ErrNotFound)
	var ids []string
	after := ""
	for {
		page, err := db.ListProjects(ctx, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			ids = append(ids, p.ID)
		}
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(ids, []string{"prj_a", "prj_b", "prj_c", "prj_d"}) {
		t.Fatalf("ListProjects pages gave %v", ids)
	}
}

// testProjectRateLimit: the operator's ingest rate limit override is stored, read back
// by Project and ListProjects, cleared with 0; bad values and unknown projects change
// nothing.
func testProjectRateLimit(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b")
	if p, err := db.Project(ctx, "prj_a"); err != nil || p.IngestRateLimit != 0 {
		t.Fatalf("a new project = %+v, %v; want no override", p, err)
	}
	p, err := db.SetIngestRateLimit(ctx, "prj_a", 20_000)
	if err != nil || p.ID != "prj_a" || p.IngestRateLimit != 20_000 || p.Name != "Project prj_a" {
		t.Fatalf("SetIngestRateLimit = %+v, %v", p, err)
	}
	if got, err := db.Project(ctx, "prj_a"); err != nil || got != p {
		t.Fatalf("Project after the override = %+v, %v; want %+v", got, err, p)
	}
	if got, err := db.Project(ctx, "prj_b"); err != nil || got.IngestRateLimit != 0 {
		t.Fatalf("the other project = %+v, %v; want no override", got, err)
	}
	ps, err := db.ListProjects(ctx, "", 10)
	if err != nil || len(ps) != 2 || ps[0].IngestRateLimit != 20_000 || ps[1].IngestRateLimit != 0 {
		t.Fatalf("ListProjects = %+v, %v", ps, err)
	}
	_, err = db.SetIngestRateLimit(ctx, "prj_a", -1)
	wantErr(t, "negative limit", err, catalog.ErrInvalid)
	_, err = db.SetIngestRateLimit(ctx, "prj_a", catalog.MaxIngestRateLimit+1)
	wantErr(t, "limit over the maximum", err, catalog.ErrInvalid)
	_, err = db.SetIngestRateLimit(ctx, "prj_x", 10)
	wantErr(t, "unknown project", err, catalog.ErrNotFound)
	if got, err := db.Project(ctx, "prj_a"); err != nil || got.IngestRateLimit != 20_000 {
		t.Fatalf("a refused change changed the project: %+v, %v", got, err)
	}
	if p, err := db.SetIngestRateLimit(ctx, "prj_a", 0); err != nil || p.IngestRateLimit != 0 {
		t.Fatalf("clearing the override = %+v, %v", p, err)
	}
}

func testAPIKeys(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b")
	exp := t0.Add(24 * time.Hour)
	k := catalog.APIKey{ID: "key_1", ProjectID: "prj_a", Name: "ci", Hash: bytes.Repeat([]byte{1}, 32), Prefix: "st_live_ab",
		Scopes: []string{catalog.ScopeWrite, catalog.ScopeRead}, CreatedAt: t0, ExpiresAt: exp}
	created, err := db.CreateAPIKey(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.APIKeyByHash(ctx, k.Hash)
	if err != nil || got.ID != "key_1" || got.ProjectID != "prj_a" || got.Prefix != k.Prefix || got.Name != "ci" ||
		!slices.Equal(got.Scopes, k.Scopes) || !got.ExpiresAt.Equal(catalog.MS(exp)) || !got.CreatedAt.Equal(created.CreatedAt) ||
		!got.RevokedAt.IsZero() {
		t.Fatalf("APIKeyByHash = %+v, %v", got, err)
	}
	if !got.HasScope(catalog.ScopeRead) || got.HasScope(catalog.ScopeExport) {
		t.Fatal("HasScope wrong")
	}
	if s := got.State(t0); s != catalog.KeyActive {
		t.Fatalf("state before expiry %s", s)
	}
	if s := got.State(exp); s != catalog.KeyExpired {
		t.Fatalf("state at expiry %s", s)
	}
	_, err = db.APIKeyByHash(ctx, bytes.Repeat([]byte{2}, 32))
	wantErr(t, "unknown hash", err, catalog.ErrNotFound)

	dupHash := k
	dupHash.ID, dupHash.ProjectID = "key_2", "prj_b"
	_, err = db.CreateAPIKey(ctx, dupHash)
	wantErr(t, "duplicate hash", err, catalog.ErrExists)
	orphan := k
	orphan.ID, orphan.ProjectID, orphan.Hash = "key_3", "prj_none", bytes.Repeat([]byte{3}, 32)
	_, err = db.CreateAPIKey(ctx, orphan)
	wantErr(t, "key of an unknown project", err, catalog.ErrNotFound)
	noScope := k
	noScope.ID, noScope.Hash, noScope.Scopes = "key_4", bytes.Repeat([]byte{4}, 32), nil
	_, err = db.CreateAPIKey(ctx, noScope)
	wantErr(t, "key without scopes", err, catalog.ErrInvalid)

	forever := catalog.APIKey{ID: "key_5", ProjectID: "prj_a", Hash: bytes.Repeat([]byte{5}, 32), Prefix: "st_", Scopes: []string{catalog.ScopeVerify}}
	if _, err := db.CreateAPIKey(ctx, forever); err != nil {
		t.Fatal(err)
	}
	other := catalog.APIKey{ID: "key_6", ProjectID: "prj_b", Hash: bytes.Repeat([]byte{6}, 32), Prefix: "st_", Scopes: []string{catalog.ScopeVerify}}
	if _, err := db.CreateAPIKey(ctx, other); err != nil {
		t.Fatal(err)
	}
	keys, err := db.ListAPIKeys(ctx, "prj_a")
	if err != nil || len(keys) != 2 || keys[0].ID != "key_1" || keys[1].ID != "key_5" || !keys[1].ExpiresAt.IsZero() {
		t.Fatalf("ListAPIKeys = %+v, %v", keys, err)
	}
	_, err = db.RevokeAPIKey(ctx, "prj_b", "key_1", t0)
	wantErr(t, "revoking another project's key", err, catalog.ErrNotFound)
	rev, err := db.RevokeAPIKey(ctx, "prj_a", "key_1", t0.Add(time.Hour))
	if err != nil || rev.State(t0) != catalog.KeyRevoked || !rev.RevokedAt.Equal(catalog.MS(t0.Add(time.Hour))) {
		t.Fatalf("RevokeAPIKey = %+v, %v", rev, err)
	}
	again, err := db.RevokeAPIKey(ctx, "prj_a", "key_1", t0.Add(2*time.Hour))
	if err != nil || !again.RevokedAt.Equal(rev.RevokedAt) {
		t.Fatalf("second revoke moved the time: %+v, %v", again, err)
	}
	if got, err := db.APIKeyByHash(ctx, k.Hash); err != nil || got.State(t0) != catalog.KeyRevoked {
		t.Fatalf("revoked key by hash: %+v, %v", got, err)
	}
}

func testMembers(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b")
	for _, m := range []catalog.Member{
		{ProjectID: "prj_a", Email: "zoe@example.com", Role: "admin"},
		{ProjectID: "prj_a", Email: "al@example.com", Role: "viewer"},
		{ProjectID: "prj_b", Email: "al@example.com", Role: "admin"},
	} {
		if _, err := db.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	_, err := db.AddMember(ctx, catalog.Member{ProjectID: "prj_a", Email: "al@example.com", Role: "admin"})
	wantErr(t, "duplicate member", err, catalog.ErrExists)
	_, err = db.AddMember(ctx, catalog.Member{ProjectID: "prj_none", Email: "al@example.com", Role: "admin"})
	wantErr(t, "member of an unknown project", err, catalog.ErrNotFound)
	ms, err := db.ListMembers(ctx, "prj_a")
	if err != nil || len(ms) != 2 || ms[0].Email != "al@example.com" || ms[0].Role != "viewer" || ms[1].Email != "zoe@example.com" || ms[0].CreatedAt.IsZero() {
		t.Fatalf("ListMembers = %+v, %v", ms, err)
	}
	if err := db.RemoveMember(ctx, "prj_a", "al@example.com"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "removing twice", db.RemoveMember(ctx, "prj_a", "al@example.com"), catalog.ErrNotFound)
	if ms, err := db.ListMembers(ctx, "prj_b"); err != nil || len(ms) != 1 {
		t.Fatalf("removing from a hurt another project: %+v, %v", ms, err)
	}
}

func testSigningKeys(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b")
	pub := fmt.Sprintf("%064x", 42)
	k, err := db.CreateSigningKey(ctx, catalog.SigningKey{ID: "sk_1", ProjectID: "prj_a", PublicKey: pub, CreatedAt: t0})
	if err != nil || k.State() != catalog.KeyActive {
		t.Fatalf("CreateSigningKey = %+v, %v", k, err)
	}
	_, err = db.CreateSigningKey(ctx, catalog.SigningKey{ID: "sk_1", ProjectID: "prj_a", PublicKey: pub})
	wantErr(t, "duplicate signing key", err, catalog.ErrExists)
	_, err = db.CreateSigningKey(ctx, catalog.SigningKey{ID: "sk_2", ProjectID: "prj_a", PublicKey: "ABCD"})
	wantErr(t, "bad public key", err, catalog.ErrInvalid)
	if _, err := db.CreateSigningKey(ctx, catalog.SigningKey{ID: "sk_2", ProjectID: "prj_a", PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	if p, err := db.Project(ctx, "prj_a"); err != nil || !p.RequireSigned {
		t.Fatalf("project with signing keys: %+v, %v; want RequireSigned", p, err)
	}
	if p, err := db.Project(ctx, "prj_b"); err != nil || p.RequireSigned {
		t.Fatalf("project without signing keys: %+v, %v", p, err)
	}
	got, err := db.SigningKey(ctx, "prj_a", "sk_1")
	if err != nil || got != k {
		t.Fatalf("SigningKey = %+v, %v; want %+v", got, err, k)
	}
	_, err = db.SigningKey(ctx, "prj_b", "sk_1")
	wantErr(t, "another project's signing key", err, catalog.ErrNotFound)
	for _, id := range []string{"sk_1", "sk_2"} {
		rk, err := db.RevokeSigningKey(ctx, "prj_a", id, time.Time{})
		if err != nil || rk.State() != catalog.KeyRevoked {
			t.Fatalf("RevokeSigningKey(%s) = %+v, %v", id, rk, err)
		}
	}
	_, err = db.RevokeSigningKey(ctx, "prj_a", "sk_9", time.Time{})
	wantErr(t, "revoking an unknown signing key", err, catalog.ErrNotFound)
	if p, err := db.Project(ctx, "prj_a"); err != nil || p.RequireSigned {
		t.Fatalf("project with only revoked signing keys: %+v, %v", p, err)
	}
	ks, err := db.ListSigningKeys(ctx, "prj_a")
	if err != nil || len(ks) != 2 || ks[0].ID != "sk_1" || ks[1].State() != catalog.KeyRevoked {
		t.Fatalf("ListSigningKeys = %+v, %v", ks, err)
	}
}

func testRetention(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a")
	_, err := db.Retention(ctx, logA)
	wantErr(t, "retention never set", err, catalog.ErrNotFound)
	if _, err := db.SetRetention(ctx, catalog.Retention{Log: logA, Days: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetRetention(ctx, catalog.Retention{Log: logC, Days: 365}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetRetention(ctx, catalog.Retention{Log: logA, Days: 90, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	r, err := db.Retention(ctx, logA)
	if err != nil || r.Days != 90 || r.Log != logA || !r.UpdatedAt.Equal(catalog.MS(t0)) {
		t.Fatalf("Retention = %+v, %v", r, err)
	}
	_, err = db.SetRetention(ctx, catalog.Retention{Log: logA, Days: 0})
	wantErr(t, "zero days", err, catalog.ErrInvalid)
	_, err = db.SetRetention(ctx, catalog.Retention{Log: logB, Days: 1})
	wantErr(t, "retention of an unknown project", err, catalog.ErrNotFound)
	rs, err := db.ListRetention(ctx, "prj_a")
	if err != nil || len(rs) != 2 || rs[0].Log != logA || rs[1].Log != logC || rs[1].Days != 365 {
		t.Fatalf("ListRetention = %+v, %v", rs, err)
	}
}

func testLegalHolds(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b")
	h := catalog.LegalHold{ID: "hold_1", ProjectID: "prj_a", MembershipRoot: H("members"), EventIDs: []string{"e3", "e1", "e2"}, CreatedAt: t0}
	if _, err := db.CreateLegalHold(ctx, h); err != nil {
		t.Fatal(err)
	}
	_, err := db.CreateLegalHold(ctx, h)
	wantErr(t, "duplicate hold", err, catalog.ErrExists)
	if _, err := db.CreateLegalHold(ctx, catalog.LegalHold{ID: "hold_0", ProjectID: "prj_a", MembershipRoot: H("none")}); err != nil {
		t.Fatal(err)
	}
	got, err := db.LegalHold(ctx, "prj_a", "hold_1")
	if err != nil || got.State() != catalog.HoldActive || got.MembershipRoot != h.MembershipRoot ||
		!slices.Equal(got.EventIDs, h.EventIDs) || !got.CreatedAt.Equal(catalog.MS(t0)) {
		t.Fatalf("LegalHold = %+v, %v", got, err)
	}
	_, err = db.LegalHold(ctx, "prj_b", "hold_1")
	wantErr(t, "another project's hold", err, catalog.ErrNotFound)
	rel, err := db.ReleaseLegalHold(ctx, "prj_a", "hold_1", t0.Add(time.Hour))
	if err != nil || rel.State() != catalog.HoldReleased || len(rel.EventIDs) != 3 {
		t.Fatalf("ReleaseLegalHold = %+v, %v", rel, err)
	}
	_, err = db.ReleaseLegalHold(ctx, "prj_b", "hold_1", time.Time{})
	wantErr(t, "releasing another project's hold", err, catalog.ErrNotFound)
	hs, err := db.ListLegalHolds(ctx, "prj_a")
	if err != nil || len(hs) != 2 || hs[0].ID != "hold_0" || len(hs[0].EventIDs) != 0 || hs[1].State() != catalog.HoldReleased {
		t.Fatalf("ListLegalHolds = %+v, %v", hs, err)
	}
}

func testDataKeys(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	_, err := db.DataKey(ctx, logA, "2026-11")
	wantErr(t, "unknown data key", err, catalog.ErrNotFound)
	// Racing inserts for one epoch: every caller gets the same, first key.
	var wg sync.WaitGroup
	got := make([]catalog.DataKey, 8)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = db.InsertDataKey(ctx, catalog.DataKey{Log: logA, Epoch: "2026-11", KeyID: fmt.Sprintf("k%d", i),
				KEKID: "kek1", Wrapped: []byte(fmt.Sprintf("wrapped %d", i))})
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i].KeyID != got[0].KeyID || !bytes.Equal(got[i].Wrapped, got[0].Wrapped) || got[i].Destroyed() {
			t.Fatalf("racing inserts returned different keys: %+v and %+v", got[0], got[i])
		}
	}
	_, err = db.InsertDataKey(ctx, catalog.DataKey{Log: logA, Epoch: "2026-12", KeyID: got[0].KeyID, KEKID: "kek1", Wrapped: []byte("w")})
	wantErr(t, "re-used key id", err, catalog.ErrExists)
	_, err = db.InsertDataKey(ctx, catalog.DataKey{Log: logA, Epoch: "2026-12", KeyID: "k", KEKID: "kek1"})
	wantErr(t, "data key without bytes", err, catalog.ErrInvalid)
	if _, err := db.InsertDataKey(ctx, catalog.DataKey{Log: logA, Epoch: "2026-10", KeyID: "old", KEKID: "kek1", Wrapped: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertDataKey(ctx, catalog.DataKey{Log: logB, Epoch: "2026-10", KeyID: "b-old", KEKID: "kek1", Wrapped: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	k, err := db.DataKey(ctx, logA, "2026-11")
	if err != nil || k.KeyID != got[0].KeyID || k.KEKID != "kek1" || k.CreatedAt.IsZero() {
		t.Fatalf("DataKey = %+v, %v", k, err)
	}
	d, err := db.DestroyDataKey(ctx, logA, "2026-10", t0)
	if err != nil || !d.Destroyed() || d.Wrapped != nil || d.KeyID != "old" || !d.DestroyedAt.Equal(catalog.MS(t0)) {
		t.Fatalf("DestroyDataKey = %+v, %v", d, err)
	}
	if d2, err := db.DestroyDataKey(ctx, logA, "2026-10", t0.Add(time.Hour)); err != nil || !d2.DestroyedAt.Equal(d.DestroyedAt) {
		t.Fatalf("second destroy: %+v, %v", d2, err)
	}
	_, err = db.DestroyDataKey(ctx, logA, "1999-01", t0)
	wantErr(t, "destroying an unknown key", err, catalog.ErrNotFound)
	// A destroyed epoch is never given a new key.
	again, err := db.InsertDataKey(ctx, catalog.DataKey{Log: logA, Epoch: "2026-10", KeyID: "new", KEKID: "kek1", Wrapped: []byte("new")})
	if err != nil || !again.Destroyed() || again.KeyID != "old" || again.Wrapped != nil {
		t.Fatalf("insert over a destroyed key: %+v, %v", again, err)
	}
	if b, err := db.DataKey(ctx, logB, "2026-10"); err != nil || b.Destroyed() {
		t.Fatalf("destroying a key of project a touched project b: %+v, %v", b, err)
	}
	ks, err := db.ListDataKeys(ctx, logA)
	if err != nil || len(ks) != 2 || ks[0].Epoch != "2026-10" || !ks[0].Destroyed() || ks[1].Epoch != "2026-11" || ks[1].Destroyed() {
		t.Fatalf("ListDataKeys = %+v, %v", ks, err)
	}
	testInsertDataKeys(t, db)
}

// testInsertDataKeys checks the batch insert after testDataKeys: new keys are stored,
// an epoch with a key (live or destroyed) keeps it and returns it, results come in
// the order asked, and a bad key or a taken key id stores none of the batch.
func testInsertDataKeys(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	if got, err := db.InsertDataKeys(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("InsertDataKeys(nil) = %+v, %v", got, err)
	}
	batch := []catalog.DataKey{
		{Log: logB, Epoch: "2027-01", KeyID: "batch-b", KEKID: "kek2", Wrapped: []byte("wb"), CreatedAt: t0},
		{Log: logA, Epoch: "2026-11", KeyID: "batch-a-live", KEKID: "kek2", Wrapped: []byte("no")},      // has a live key
		{Log: logA, Epoch: "2026-10", KeyID: "batch-a-destroyed", KEKID: "kek2", Wrapped: []byte("no")}, // destroyed
		{Log: logC, Epoch: "2027-01", KeyID: "batch-c", KEKID: "kek2", Wrapped: []byte("wc"), CreatedAt: t0},
	}
	got, err := db.InsertDataKeys(ctx, batch)
	if err != nil || len(got) != len(batch) {
		t.Fatalf("InsertDataKeys = %+v, %v", got, err)
	}
	live, _ := db.DataKey(ctx, logA, "2026-11")
	for i, want := range []struct {
		log       catalog.LogID
		keyID     string
		destroyed bool
	}{{logB, "batch-b", false}, {logA, live.KeyID, false}, {logA, "old", true}, {logC, "batch-c", false}} {
		if got[i].Log != want.log || got[i].KeyID != want.keyID || got[i].Destroyed() != want.destroyed {
			t.Fatalf("InsertDataKeys[%d] = %+v, want %s key %s (destroyed %v)", i, got[i], want.log, want.keyID, want.destroyed)
		}
	}
	if k, err := db.DataKey(ctx, logC, "2027-01"); err != nil || k.KeyID != "batch-c" || !bytes.Equal(k.Wrapped, []byte("wc")) || k.KEKID != "kek2" {
		t.Fatalf("DataKey after InsertDataKeys = %+v, %v", k, err)
	}
	// All or nothing: a bad key, or a key id already taken, stores no key of the batch.
	for _, c := range []struct {
		name string
		bad  catalog.DataKey
		want error
	}{
		{"a key without bytes", catalog.DataKey{Log: logB, Epoch: "2027-03", KeyID: "nobytes", KEKID: "kek2"}, catalog.ErrInvalid},
		{"a taken key id", catalog.DataKey{Log: logB, Epoch: "2027-03", KeyID: "batch-c", KEKID: "kek2", Wrapped: []byte("x")}, catalog.ErrExists},
	} {
		_, err := db.InsertDataKeys(ctx, []catalog.DataKey{
			{Log: logA, Epoch: "2027-02", KeyID: "first-" + c.name, KEKID: "kek2", Wrapped: []byte("w")}, c.bad})
		wantErr(t, "InsertDataKeys with "+c.name, err, c.want)
		_, err = db.DataKey(ctx, logA, "2027-02")
		wantErr(t, "the batch's other key after "+c.name, err, catalog.ErrNotFound)
	}
}

func testTreeHeads(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	_, err := db.LatestTreeHead(ctx, logA)
	wantErr(t, "no tree head", err, catalog.ErrNotFound)
	for _, size := range []uint64{10, 30, 20} {
		h := catalog.TreeHead{Log: logA, TreeSize: size, RootHash: H(fmt.Sprint(size)), Timestamp: t0.Add(time.Duration(size) * time.Minute), Signature: []byte("sig")}
		got, err := db.AddTreeHead(ctx, h)
		if err != nil || got.TreeSize != size || got.RootHash != h.RootHash || !got.Timestamp.Equal(catalog.MS(h.Timestamp)) || got.Anchor != nil {
			t.Fatalf("AddTreeHead(%d) = %+v, %v", size, got, err)
		}
	}
	same, err := db.AddTreeHead(ctx, catalog.TreeHead{Log: logA, TreeSize: 10, RootHash: H("10"), Timestamp: t0.Add(time.Hour), Signature: []byte("sig2")})
	if err != nil || !same.Timestamp.Equal(catalog.MS(t0.Add(10*time.Minute))) {
		t.Fatalf("re-adding a head: %+v, %v; want the stored one", same, err)
	}
	_, err = db.AddTreeHead(ctx, catalog.TreeHead{Log: logA, TreeSize: 10, RootHash: H("fork"), Signature: []byte("sig")})
	wantErr(t, "a second root for size 10", err, catalog.ErrConflict)
	if _, err := db.AddTreeHead(ctx, catalog.TreeHead{Log: logB, TreeSize: 10, RootHash: H("b"), Signature: []byte("sig")}); err != nil {
		t.Fatal(err)
	}
	latest, err := db.LatestTreeHead(ctx, logA)
	if err != nil || latest.TreeSize != 30 {
		t.Fatalf("LatestTreeHead = %+v, %v", latest, err)
	}
	a := catalog.Anchor{Type: "rekor", Ref: "entry-1", Proof: []byte(`{"x":1}`), AnchoredAt: t0.Add(2 * time.Hour)}
	anchored, err := db.SetAnchor(ctx, logA, 20, a)
	if err != nil || anchored.Anchor == nil || anchored.Anchor.Ref != "entry-1" || !bytes.Equal(anchored.Anchor.Proof, a.Proof) ||
		!anchored.Anchor.AnchoredAt.Equal(catalog.MS(a.AnchoredAt)) {
		t.Fatalf("SetAnchor = %+v, %v", anchored, err)
	}
	if _, err := db.SetAnchor(ctx, logA, 20, a); err != nil {
		t.Fatalf("setting the same anchor again: %v", err)
	}
	b := a
	b.Ref = "entry-2"
	_, err = db.SetAnchor(ctx, logA, 20, b)
	wantErr(t, "re-anchoring elsewhere", err, catalog.ErrConflict)
	_, err = db.SetAnchor(ctx, logA, 25, a)
	wantErr(t, "anchoring an unknown head", err, catalog.ErrNotFound)
	hs, err := db.ListTreeHeads(ctx, logA, 2)
	if err != nil || len(hs) != 2 || hs[0].TreeSize != 30 || hs[0].Anchor != nil || hs[1].TreeSize != 20 || hs[1].Anchor == nil {
		t.Fatalf("ListTreeHeads = %+v, %v", hs, err)
	}
}
