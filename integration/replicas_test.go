package integration

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// revocationBound is how soon after a revocation (or an expiry) another replica must
// refuse the key. The service promises one second (its key cache lives at most that
// long); the test allows one more for scheduling on a loaded machine with the race
// detector, and logs the measured delay.
const revocationBound = 2 * time.Second

// TestReplicasShareRevocation runs two replicas on one PostgreSQL database, one object
// store and one set of key files. A key created on replica A works on B at once; after
// A revokes it, B refuses it within the bound; a key that expires is refused by B within
// the bound of its expiry and never before. Both trees then rebuild from storage.
func TestReplicasShareRevocation(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDB(t)
	dataDir := t.TempDir()
	if err := os.Chmod(dataDir, 0o700); err != nil { // t.TempDir's is 0777 less the umask, which serve refuses
		t.Fatal(err)
	}
	env := []string{"SEALTRAIL_CATALOG=" + dsn}
	a := startServer(t, serveOpts{dataDir: dataDir, env: env})
	b := startServer(t, serveOpts{dataDir: dataDir, env: env})
	if a.token != b.token || !a.pub.Equal(b.pub) {
		t.Fatal("replicas do not share the operator token and service key")
	}

	pid := a.mustAdmin(http.StatusCreated, http.MethodPost, "/projects", "ops", map[string]string{"name": "shared"}).str("id")
	if r := b.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+pid, "", nil); r.str("id") != pid {
		t.Fatalf("replica B does not see the project: %s", r.raw)
	}
	created := a.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/keys", "ops", map[string]any{"scopes": []string{"log:write"}})
	token, keyID := created.str("secret"), created.body["key"].(map[string]any)["id"].(string)
	sealed := 0
	b.mustLog(token, "on.b")
	a.mustLog(token, "on.a")
	sealed += 2

	// Keep B's cache warm right up to the revocation, then revoke through A.
	for range 5 {
		b.mustLog(token, "warm")
		sealed++
	}
	a.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+pid+"/keys/"+keyID+"/revoke", "ops", nil)
	revoked := time.Now()
	if r := a.logEvent(token, "after.revoke"); r.status != http.StatusUnauthorized || r.str("error") != "Invalid API key" {
		t.Fatalf("replica A accepts the key it revoked: %d %s", r.status, r.raw)
	}
	delay, n := pollRefused(t, b, token, revoked)
	sealed += n
	t.Logf("replica B refused the revoked key %s after the revocation was acknowledged", delay)

	// Expiry: a key expiring in ~2 s works on B until then and is refused after.
	expiresAt := time.Now().Add(2 * time.Second).UTC().Truncate(time.Millisecond)
	created = a.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/keys", "ops",
		map[string]any{"scopes": []string{"log:write"}, "expiresAt": expiresAt.Format(time.RFC3339Nano)})
	expToken := created.str("secret")
	for time.Now().Before(expiresAt) {
		r := b.logEvent(expToken, "before.expiry")
		answered := time.Now()
		switch {
		case r.status == http.StatusAccepted:
			sealed++
		case r.status == http.StatusUnauthorized && answered.Before(expiresAt):
			t.Fatalf("replica B refused a key %s before its expiry", expiresAt.Sub(answered))
		case r.status != http.StatusUnauthorized:
			t.Fatalf("before expiry: %d %s", r.status, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	delay, n = pollRefused(t, b, expToken, expiresAt)
	sealed += n
	t.Logf("replica B refused the expired key %s after its expiry", delay)
	if r := a.logEvent(expToken, "after.expiry"); r.status != http.StatusUnauthorized {
		t.Fatalf("replica A accepts an expired key: %d %s", r.status, r.raw)
	}

	a.stop()
	b.stop()
	o := openOffline(t, dataDir, dsn)
	o.rebuild(t, pid, catalog.StreamEvents, uint64(sealed))
	// project.created, two api_key.created, one api_key.revoked.
	o.rebuild(t, pid, catalog.StreamProjectAudit, 4)
}

// pollRefused posts with token to s until it answers 401 and requires that to happen
// within revocationBound of since. It returns the delay and how many events were
// sealed meanwhile.
func pollRefused(t *testing.T, s *server, token string, since time.Time) (time.Duration, int) {
	t.Helper()
	sealed := 0
	for {
		r := s.logEvent(token, "poll")
		delay := time.Since(since)
		switch r.status {
		case http.StatusUnauthorized:
			if r.str("error") != "Invalid API key" {
				t.Fatalf("refusal body %s, want Invalid API key", r.raw)
			}
			return delay, sealed
		case http.StatusAccepted:
			sealed++
		default:
			t.Fatalf("while polling: %d %s", r.status, r.raw)
		}
		if delay > revocationBound {
			t.Fatalf("key still accepted %s after it was revoked or expired (bound %s)", delay, revocationBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
