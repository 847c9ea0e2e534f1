package rekor_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/anchor/rekor"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tlog"
)

const treeHeadsOrigin = "sealtrail.test/tree_heads"

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func sign(t *testing.T, key ed25519.PrivateKey, size uint64) []byte {
	t.Helper()
	msg, err := tlog.SignCheckpoint(key, treeHeadsOrigin, size, tlog.LeafHash([]byte{byte(size)}))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func pemPublicKey(t *testing.T, k crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestPublishVerify publishes to a real Rekor v2 log with each kind of checkpoint key
// Rekor uses and checks Verify accepts the proof and rejects each edited piece.
func TestPublishVerify(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, signer := range map[string]crypto.Signer{"ecdsa-p256": ecKey, "ed25519": newKey(t)} {
		t.Run(name, func(t *testing.T) { testPublishVerify(t, signer) })
	}
}

func testPublishVerify(t *testing.T, logSigner crypto.Signer) {
	srv := testenv.Rekor(t, logSigner)
	keyFile := filepath.Join(t.TempDir(), "rekor.pub")
	if err := os.WriteFile(keyFile, pemPublicKey(t, srv.PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	trust, err := rekor.LoadTrust(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	service := newKey(t)
	pub, err := rekor.New(srv.URL, service, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Type() != "rekor" {
		t.Fatalf("Type() = %q", pub.Type())
	}
	ctx := context.Background()
	var cp []byte
	var proof json.RawMessage
	for i, size := range []uint64{5, 6, 7} { // log indexes 0 (members left out in protojson), 1, 2
		cp = sign(t, service, size)
		ref, pr, at, err := pub.Publish(ctx, cp)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if want := srv.Origin + "/" + strconv.Itoa(i); ref != want || !at.IsZero() {
			t.Fatalf("Publish = ref %q, at %v; want %q and no time", ref, at, want)
		}
		if _, err := rekor.Verify(cp, pr, trust); err != nil {
			t.Fatalf("Verify(index %d): %v", i, err)
		}
		proof = pr
	}
	withService := trust
	withService.ServiceKey = service.Public().(ed25519.PublicKey)
	withService.Origin = srv.Origin
	if _, err := rekor.Verify(cp, proof, withService); err != nil {
		t.Fatalf("Verify with service key and origin: %v", err)
	}

	// A second Publish of the same checkpoint is a duplicate entry to Rekor.
	if _, _, _, err := pub.Publish(ctx, cp); !errors.Is(err, rekor.ErrDuplicate) || !errors.Is(err, rekor.ErrRekor) {
		t.Fatalf("Publish again = %v, want ErrDuplicate", err)
	}

	other := newKey(t)
	otherLog, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wrongService, wrongOrigin, wrongLog := withService, withService, withService
	wrongService.ServiceKey = other.Public().(ed25519.PublicKey)
	wrongOrigin.Origin = "rekor.example"
	wrongLog.LogKey = otherLog.Public()
	for name, c := range map[string]struct {
		cp    []byte
		proof json.RawMessage
		trust rekor.Trust
	}{
		"checkpoint text":     {[]byte(strings.Replace(string(cp), "\n7\n", "\n8\n", 1)), proof, trust},
		"other checkpoint":    {sign(t, service, 7+1), proof, trust},
		"checkpoint by other": {sign(t, other, 7), proof, trust},
		"entry digest":        {cp, editBody(t, proof, func(hr map[string]any) { flipB64(t, hr["data"].(map[string]any), "digest") }), trust},
		"entry signature":     {cp, editBody(t, proof, func(hr map[string]any) { flipB64(t, sig(hr), "content") }), trust},
		"entry key": {cp, editBody(t, proof, func(hr map[string]any) {
			sig(hr)["verifier"].(map[string]any)["publicKey"].(map[string]any)["rawBytes"] = pkixB64(t, other.Public())
		}), trust},
		"entry not canonical":  {cp, editEntry(t, proof, func(e map[string]any) { e["canonicalizedBody"] = reencode(t, e["canonicalizedBody"].(string), " ") }), trust},
		"inclusion proof":      {cp, editEntry(t, proof, func(e map[string]any) { flipB64(t, ip(e)["hashes"].([]any), 0) }), trust},
		"inclusion index":      {cp, editEntry(t, proof, func(e map[string]any) { e["logIndex"] = "1"; ip(e)["logIndex"] = "1" }), trust},
		"inclusion root":       {cp, editEntry(t, proof, func(e map[string]any) { flipB64(t, ip(e), "rootHash") }), trust},
		"rekor checkpoint":     {cp, editEntry(t, proof, func(e map[string]any) { editEnvelope(ip(e), "\n3\n", "\n4\n") }), trust},
		"rekor checkpoint sig": {cp, editEntry(t, proof, func(e map[string]any) { flipNoteSig(t, ip(e)) }), trust},
		"wrong rekor key":      {cp, proof, wrongLog},
		"wrong origin":         {cp, proof, wrongOrigin},
		"wrong service key":    {cp, proof, wrongService},
		"no trust":             {cp, proof, rekor.Trust{}},
		"proof not JSON":       {cp, json.RawMessage(`{"transparencyLogEntry":`), trust},
		"proof extra member":   {cp, json.RawMessage(`{"transparencyLogEntry":{},"x":1}`), trust},
		"proof empty":          {cp, json.RawMessage(`{}`), trust},
		"entry empty":          {cp, json.RawMessage(`{"transparencyLogEntry":{}}`), trust},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := rekor.Verify(c.cp, c.proof, c.trust)
			if !errors.Is(err, rekor.ErrVerify) {
				t.Fatalf("Verify = %v, want ErrVerify", err)
			}
			t.Log(err)
		})
	}
}

func TestPublishErrors(t *testing.T) {
	logKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.Rekor(t, logKey)
	service := newKey(t)
	cp := sign(t, service, 1)
	client := &http.Client{Timeout: 30 * time.Second}
	for name, url := range map[string]string{
		"not found":   srv.URL + "/no/such/log",
		"closed port": "http://127.0.0.1:" + strconv.Itoa(testenv.FreePorts(t, 1)[0]),
	} {
		t.Run(name, func(t *testing.T) {
			pub, err := rekor.New(url, service, client)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, err = pub.Publish(context.Background(), cp)
			if !errors.Is(err, rekor.ErrRekor) {
				t.Fatalf("Publish = %v, want ErrRekor", err)
			}
			t.Log(err)
		})
	}
	// A log that accepts only ECDSA entries refuses the Ed25519ph one: a clear error.
	ecOnly := testenv.Rekor(t, logKey, "--client-signing-algorithms=ecdsa-sha2-256-nistp256")
	pub, err := rekor.New(ecOnly.URL, service, client)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = pub.Publish(context.Background(), cp)
	if !errors.Is(err, rekor.ErrRekor) || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("Publish to an ECDSA-only log = %v, want ErrRekor with HTTP 400", err)
	}
	t.Log(err)

	pub, err = rekor.New(srv.URL, newKey(t), client)
	if err != nil {
		t.Fatal(err)
	}
	for name, msg := range map[string][]byte{"not the service key's": cp, "empty": nil, "not a note": []byte("x\n")} {
		if _, _, _, err := pub.Publish(context.Background(), msg); err == nil || errors.Is(err, rekor.ErrRekor) {
			t.Errorf("Publish(%s) = %v, want the caller's error", name, err)
		}
	}
	for _, bad := range []string{"", "ftp://x/y", "::", "http://"} {
		if _, err := rekor.New(bad, service, nil); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
	if _, err := rekor.New(srv.URL, service[:10], nil); err == nil {
		t.Error("New(short key) succeeded")
	}
}

func TestParseTrust(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rekor.ParseTrust(pemPublicKey(t, ecKey.Public())); err != nil {
		t.Errorf("ParseTrust(P-384) = %v", err)
	}
	good := pemPublicKey(t, newKey(t).Public())
	for name, in := range map[string][]byte{
		"empty":       nil,
		"garbage":     []byte("not pem"),
		"certificate": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}),
		"bad key":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2}}),
		"trailing":    append(good, "junk"...),
	} {
		if _, err := rekor.ParseTrust(in); err == nil {
			t.Errorf("ParseTrust(%s) succeeded", name)
		}
	}
	if _, err := rekor.LoadTrust(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("LoadTrust(missing file) succeeded")
	}
}
