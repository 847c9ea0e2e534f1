package testenv

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// RekorServer is a running Sigstore Rekor v2 log (rekor-tiles, POSIX storage).
type RekorServer struct {
	// URL is the base URL of its HTTP API (entries are POSTed to URL+"/api/v2/log/entries").
	URL string
	// Origin is the checkpoint origin (the --hostname it was started with).
	Origin string
	// PublicKey is the public half of the checkpoint signer it was given.
	PublicKey crypto.PublicKey
	// StorageDir is where its tiles and checkpoint live.
	StorageDir string
}

// RekorOrigin is the --hostname every test Rekor runs with, its checkpoint origin.
const RekorOrigin = "rekor.sealtrail.test"

// Rekor starts rekor-tiles' POSIX server (installed as rekor-posix by
// .ci/install.d/40-rekor-tiles.sh) on free loopback ports, with a fresh storage
// directory and signer as its checkpoint key (Ed25519 or ECDSA; written to a PKCS#8
// file), publishing a checkpoint every 200ms; extraArgs are added to its serve flags.
// It is stopped when the test ends. Without the binary the test skips, or fails under
// CI=true.
func Rekor(t testing.TB, signer crypto.Signer, extraArgs ...string) RekorServer {
	t.Helper()
	bin := PeerBinary(t, "rekor-posix", ".ci/install.d/40-rekor-tiles.sh")
	dir := t.TempDir()
	der, err := x509.MarshalPKCS8PrivateKey(signer)
	if err != nil {
		t.Fatalf("testenv: rekor signer key: %v", err)
	}
	keyPath := filepath.Join(dir, "signer.pem")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatalf("testenv: rekor signer key: %v", err)
	}
	storage := filepath.Join(dir, "storage")
	if err := os.Mkdir(storage, 0o700); err != nil {
		t.Fatalf("testenv: rekor storage: %v", err)
	}
	p := FreePorts(t, 3)
	args := []string{"serve",
		"--hostname=" + RekorOrigin,
		"--storage-dir=" + storage,
		"--signer-filepath=" + keyPath,
		"--http-address=127.0.0.1", "--http-port=" + strconv.Itoa(p[0]),
		"--grpc-address=127.0.0.1", "--grpc-port=" + strconv.Itoa(p[1]),
		"--http-metrics-port=" + strconv.Itoa(p[2]),
		"--checkpoint-interval=200ms",
		"--log-level=warn",
	}
	args = append(args, extraArgs...)
	addr := "127.0.0.1:" + strconv.Itoa(p[0])
	dial := dialReady(addr)
	StartPeer(t, "rekor", dir, bin, args, func(ctx context.Context) error {
		if _, err := os.Stat(filepath.Join(storage, "checkpoint")); err != nil {
			return fmt.Errorf("%w: no checkpoint yet", errNotReady)
		}
		return dial(ctx)
	})
	return RekorServer{URL: "http://" + addr, Origin: RekorOrigin, PublicKey: signer.Public(), StorageDir: storage}
}
