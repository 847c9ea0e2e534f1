package integration

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/client"
	"github.com/sealtrail/sealtrail/tlog"
)

// startAt starts sealtraild serve in dir listening on addr (so that a restart keeps
// the base URL, under which clients pin their heads).
func startAt(t *testing.T, dir, addr string) *server {
	t.Helper()
	s := &server{t: t, dataDir: filepath.Join(dir, "data"), exited: make(chan struct{})}
	s.cmd = exec.Command(sealtraild, "serve", "--listen", addr)
	s.cmd.Dir = dir
	s.cmd.Env = childEnv()
	return s.launch()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestKeyRotation is issue 19's acceptance for service key rotation: a client pinned
// before the rotation accepts the announced new key (and its heads extend the pinned
// one), the offline verifier accepts an old head with the key history, and an
// unannounced key change is service_key_changed for the same client. A service whose
// key is not the last of its history refuses to start.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	dir, addr := t.TempDir(), freeAddr(t)
	s := startAt(t, dir, addr)
	p := s.newProject("rotation")
	for range 3 {
		s.mustLog(p.all, "user.login")
	}
	oldKey := hex.EncodeToString(s.pub)
	oldSTH := s.sth(p.all, "events")
	c, err := client.New(client.Config{APIKey: p.all, BaseURL: s.base, ServicePublicKey: oldKey, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CheckConsistency(ctx, client.StreamEvents); err != nil {
		t.Fatal(err)
	}
	s.stop()

	// Rotate with the service stopped.
	r := runCLI(t, dir, "rotate-key")
	if r.code != 0 || !strings.Contains(r.stdout, "old public key: "+oldKey) {
		t.Fatalf("rotate-key: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s = startAt(t, dir, addr)
	newKey := hex.EncodeToString(s.pub)
	if newKey == oldKey {
		t.Fatal("the service key did not change")
	}
	for range 2 {
		s.mustLog(p.all, "user.logout")
	}
	head, err := c.CheckConsistency(ctx, client.StreamEvents)
	if err != nil {
		t.Fatalf("a client pinned before the rotation refuses the announced key: %v", err)
	}
	if head.TreeSize != 5 {
		t.Fatalf("head of size %d, want 5", head.TreeSize)
	}
	if _, err := c.Verify(ctx, client.StreamEvents); err != nil {
		t.Fatalf("receipt under the new key: %v", err)
	}

	// The offline verifier: the old head under the new trusted key, with the history.
	history := call(t, http.MethodGet, s.base+"/api/v1/key-history", "", nil)
	if history.status != http.StatusOK {
		t.Fatalf("GET /api/v1/key-history: %d %s", history.status, history.raw)
	}
	work := t.TempDir()
	histFile, sthFile := filepath.Join(work, "history.json"), filepath.Join(work, "old-sth.json")
	raw, _ := json.Marshal(oldSTH)
	if err := os.WriteFile(histFile, []byte(history.raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sthFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	verifier := buildVerifier(t, work)
	if r := runBin(t, verifier, work, "verify", "sth", "--sth", sthFile, "--service-key", newKey, "--key-history", histFile); r.code != 0 || !strings.Contains(r.stdout, "OK: tree head signed by service key "+oldKey) {
		t.Fatalf("verify sth of an old head with the history: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, verifier, work, "verify", "sth", "--sth", sthFile, "--service-key", newKey); r.code != 1 || !strings.Contains(r.stdout, "bad_sth_signature") {
		t.Fatalf("verify sth of an old head without the history: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.stop()

	// A key the history does not end at: the service refuses to start.
	_, stranger, _ := tlog.GenerateKey()
	keyFile := filepath.Join(dir, "data", "service.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(stranger.Seed())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, dir, "serve", "--listen", "127.0.0.1:0")
	if r.code != 2 || !strings.Contains(r.stderr, "ends at key "+newKey) {
		t.Fatalf("serve with a key outside the history: %d\n%s", r.code, r.stderr)
	}

	// An unannounced change: the history is gone and the service signs with another
	// key. The client pinned under the announced key reports it.
	if err := os.Remove(filepath.Join(dir, "data", "service-key-history.json")); err != nil {
		t.Fatal(err)
	}
	s = startAt(t, dir, addr)
	_, err = c.CheckConsistency(ctx, client.StreamEvents)
	var te *client.TamperError
	if !errors.As(err, &te) || te.Reason != client.ReasonServiceKeyChanged {
		t.Fatalf("unannounced key change: %v, want service_key_changed", err)
	}
	s.stop()
}

func boolPtr(b bool) *bool { return &b }
