package catalogtest

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// DashboardCatalog is a catalog with the dashboard's sign-in links, sessions and
// member lookup (what package dashboard's Store needs).
type DashboardCatalog interface {
	catalog.Catalog
	CreateSignInLink(ctx context.Context, l catalog.SignInLink) error
	ConsumeSignInLink(ctx context.Context, hash []byte, now time.Time) (catalog.SignInLink, error)
	CreateSession(ctx context.Context, s catalog.Session) error
	Session(ctx context.Context, hash []byte, now time.Time) (catalog.Session, error)
	DeleteSession(ctx context.Context, hash []byte) error
	MemberProjects(ctx context.Context, email string) ([]catalog.Member, error)
}

// RunDashboard runs the dashboard conformance tests, each on a fresh catalog.
func RunDashboard(t *testing.T, open func(t *testing.T) DashboardCatalog) {
	for name, fn := range map[string]func(*testing.T, DashboardCatalog){
		"SignInLinks":    testSignInLinks,
		"Sessions":       testSessions,
		"MemberProjects": testMemberProjects,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

func testSignInLinks(t *testing.T, db DashboardCatalog) {
	ctx := ctxT(t)
	link := catalog.SignInLink{Hash: bytes.Repeat([]byte{1}, 32), Email: "al@example.com", CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}
	if err := db.CreateSignInLink(ctx, link); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a second link with the same hash", db.CreateSignInLink(ctx, link), catalog.ErrExists)
	wantErr(t, "a link without a hash", db.CreateSignInLink(ctx, catalog.SignInLink{Email: "a@b", ExpiresAt: t0}), catalog.ErrInvalid)
	_, err := db.ConsumeSignInLink(ctx, link.Hash, t0.Add(15*time.Minute))
	wantErr(t, "an expired link", err, catalog.ErrNotFound)
	_, err = db.ConsumeSignInLink(ctx, bytes.Repeat([]byte{2}, 32), t0)
	wantErr(t, "an unknown link", err, catalog.ErrNotFound)

	// Of concurrent uses, exactly one succeeds.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := db.ConsumeSignInLink(ctx, link.Hash, t0.Add(time.Minute))
			if err == nil {
				wins.Add(1)
				if got.Email != link.Email || !got.UsedAt.Equal(catalog.MS(t0.Add(time.Minute))) {
					t.Errorf("consumed link = %+v", got)
				}
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d concurrent uses of one link succeeded, want 1", wins.Load())
	}
	_, err = db.ConsumeSignInLink(ctx, link.Hash, t0.Add(2*time.Minute))
	wantErr(t, "a used link", err, catalog.ErrNotFound)
}

func testSessions(t *testing.T, db DashboardCatalog) {
	ctx := ctxT(t)
	s := catalog.Session{Hash: bytes.Repeat([]byte{3}, 32), Kind: catalog.SessionMember, Email: "al@example.com",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	op := catalog.Session{Hash: bytes.Repeat([]byte{4}, 32), Kind: catalog.SessionOperator, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := db.CreateSession(ctx, op); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "an operator session with an email", db.CreateSession(ctx, catalog.Session{Hash: bytes.Repeat([]byte{5}, 32),
		Kind: catalog.SessionOperator, Email: "x@example.com", ExpiresAt: t0}), catalog.ErrInvalid)
	wantErr(t, "an unknown kind", db.CreateSession(ctx, catalog.Session{Hash: bytes.Repeat([]byte{5}, 32),
		Kind: "root", ExpiresAt: t0}), catalog.ErrInvalid)
	got, err := db.Session(ctx, s.Hash, t0.Add(time.Minute))
	if err != nil || got.Kind != s.Kind || got.Email != s.Email || !got.ExpiresAt.Equal(catalog.MS(s.ExpiresAt)) || !got.CreatedAt.Equal(catalog.MS(t0)) {
		t.Fatalf("Session = %+v, %v", got, err)
	}
	if got, err := db.Session(ctx, op.Hash, t0); err != nil || got.Kind != catalog.SessionOperator || got.Email != "" {
		t.Fatalf("operator Session = %+v, %v", got, err)
	}
	_, err = db.Session(ctx, s.Hash, t0.Add(time.Hour))
	wantErr(t, "an expired session", err, catalog.ErrNotFound)
	if err := db.DeleteSession(ctx, s.Hash); err != nil {
		t.Fatal(err)
	}
	_, err = db.Session(ctx, s.Hash, t0)
	wantErr(t, "a deleted session", err, catalog.ErrNotFound)
	if err := db.DeleteSession(ctx, s.Hash); err != nil {
		t.Fatalf("deleting a deleted session: %v", err)
	}
	if _, err := db.Session(ctx, op.Hash, t0); err != nil {
		t.Fatalf("deleting one session hurt another: %v", err)
	}
}

func testMemberProjects(t *testing.T, db DashboardCatalog) {
	ctx := ctxT(t)
	createProjects(t, db, "prj_a", "prj_b", "prj_c")
	for _, m := range []catalog.Member{
		{ProjectID: "prj_b", Email: "Al@Example.com", Role: "admin"},
		{ProjectID: "prj_a", Email: "al@example.com", Role: "auditor"},
		{ProjectID: "prj_c", Email: "zoe@example.com", Role: "owner"},
	} {
		if _, err := db.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := db.MemberProjects(ctx, "AL@example.COM")
	if err != nil || len(ms) != 2 || ms[0].ProjectID != "prj_a" || ms[0].Role != "auditor" || ms[1].ProjectID != "prj_b" || ms[1].Role != "admin" {
		t.Fatalf("MemberProjects = %+v, %v", ms, err)
	}
	if ms, err := db.MemberProjects(ctx, "nobody@example.com"); err != nil || len(ms) != 0 {
		t.Fatalf("MemberProjects of a stranger = %+v, %v", ms, err)
	}
}
