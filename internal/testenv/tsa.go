package testenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TSAServer is a running RFC 3161 time-stamping authority (sigstore timestamp-authority).
type TSAServer struct {
	// URL is its base URL: timestamps are POSTed to URL+"/api/v1/timestamp".
	URL string
	// CertChain is the PEM certificate chain it signs with (leaf first, root last), as
	// served at /api/v1/timestamp/certchain.
	CertChain []byte
}

// TSA starts timestamp-server (installed by .ci/install.d/40-timestamp-authority.sh) on
// a free loopback port with an in-memory signer, whose fresh certificate chain it
// returns; it is stopped when the test ends. timestamp-server always binds its metrics
// server to :2112 (it has no flag for it), so one runs at a time on a machine: TSA
// waits for the others to stop. Without the binary the test skips, or
// fails under CI=true.
func TSA(t testing.TB) TSAServer {
	t.Helper()
	bin := PeerBinary(t, "timestamp-server", ".ci/install.d/40-timestamp-authority.sh")
	lockTSAMetricsPort(t)
	dir := t.TempDir()
	p := FreePorts(t, 1)
	base := "http://127.0.0.1:" + strconv.Itoa(p[0])
	args := []string{"serve",
		"--host=127.0.0.1", "--port=" + strconv.Itoa(p[0]),
		"--timestamp-signer=memory",
		"--disable-ntp-monitoring",
		"--log-type=prod", "--scheme=http",
	}
	var chain []byte
	StartPeer(t, "timestamp-server", dir, bin, args, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/timestamp/certchain", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%w: certchain: HTTP %d", errNotReady, resp.StatusCode)
		}
		chain = body
		return nil
	})
	return TSAServer{URL: base, CertChain: chain}
}

// lockTSAMetricsPort takes an exclusive lock on a file named after the port 2112 until
// the test ends (after the server has stopped: cleanups run last first), across
// processes and within one.
func lockTSAMetricsPort(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "sealtrail-timestamp-server-2112.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("testenv: timestamp-server lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("testenv: timestamp-server lock: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
