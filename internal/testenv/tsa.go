package testenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// TSA starts sealtrail-tsa (sigstore timestamp-authority's API, built from .ci/peers/tsa
// by .ci/install.d/40-timestamp-authority.sh) on a free loopback port with an
// in-memory signer, whose fresh certificate chain it returns; it is stopped when the
// test ends. It listens on that port only (upstream's timestamp-server also binds
// metrics to :2112 on every interface). Without the binary the test skips, or fails
// under CI=true.
func TSA(t testing.TB) TSAServer {
	t.Helper()
	bin := PeerBinary(t, "sealtrail-tsa", ".ci/install.d/40-timestamp-authority.sh")
	dir := t.TempDir()
	p := FreePorts(t, 1)
	base := "http://127.0.0.1:" + strconv.Itoa(p[0])
	args := []string{"-addr=127.0.0.1:" + strconv.Itoa(p[0])}
	var chain []byte
	StartPeer(t, "sealtrail-tsa", dir, bin, args, func(ctx context.Context) error {
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
