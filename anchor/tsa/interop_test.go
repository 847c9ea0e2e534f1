package tsa_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/anchor/tsa"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// The contract of package anchor, restated: the Publisher must satisfy it.
var _ interface {
	Type() string
	Publish(ctx context.Context, signedCheckpoint []byte) (string, json.RawMessage, time.Time, error)
} = (*tsa.Publisher)(nil)

// TestOpenSSLInterop checks the token the Publisher keeps with another implementation:
// `openssl ts -verify` accepts it for the checkpoint and the TSA's chain.
func TestOpenSSLInterop(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	srv := testenv.TSA(t)
	pub, err := tsa.New(srv.URL+"/api/v1/timestamp", &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cp := signedCheckpoint(t, 3)
	_, proof, _, err := pub.Publish(context.Background(), cp)
	if err != nil {
		t.Fatal(err)
	}
	var p tsa.Proof
	if err := json.Unmarshal(proof, &p); err != nil {
		t.Fatal(err)
	}
	trust, err := tsa.ParseTrust(srv.CertChain)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var roots, inter []byte
	for _, c := range trust.Roots {
		roots = append(roots, pemCert(c.Raw)...)
	}
	for _, c := range trust.Intermediates {
		inter = append(inter, pemCert(c.Raw)...)
	}
	args := []string{"ts", "-verify", "-token_in", "-in", write("token.der", p.Token),
		"-data", write("checkpoint", cp), "-CAfile", write("roots.pem", roots)}
	if len(inter) > 0 {
		args = append(args, "-untrusted", write("inter.pem", inter))
	}
	out, err := exec.Command(openssl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl ts -verify: %v\n%s", err, out)
	}
	t.Logf("openssl: %s", out)
	edited := append([]byte("x"), cp...)
	args[6] = write("edited", edited)
	if out, err := exec.Command(openssl, args...).CombinedOutput(); err == nil {
		t.Fatalf("openssl ts -verify accepted an edited checkpoint: %s", out)
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
