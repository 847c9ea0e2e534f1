package tsa_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/anchor/tsa"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tlog"
	"strconv"
)

// signedCheckpoint returns a tree_heads-style signed note under a fresh key.
func signedCheckpoint(t *testing.T, size uint64) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := tlog.SignCheckpoint(priv, "sealtrail.test/tree_heads", size, tlog.LeafHash([]byte("root")))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestPublishVerify(t *testing.T) {
	srv := testenv.TSA(t)
	trustFile := filepath.Join(t.TempDir(), "tsa-chain.pem")
	if err := os.WriteFile(trustFile, srv.CertChain, 0o600); err != nil {
		t.Fatal(err)
	}
	trust, err := tsa.LoadTrust(trustFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := tsa.New(srv.URL+"/api/v1/timestamp", &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Type() != "rfc3161" {
		t.Fatalf("Type() = %q", pub.Type())
	}
	cp := signedCheckpoint(t, 7)
	before := time.Now().Add(-time.Minute)
	ref, proof, at, err := pub.Publish(context.Background(), cp)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if ref == "" || at.Before(before) || at.After(time.Now().Add(time.Minute)) {
		t.Fatalf("Publish = ref %q, at %v; want a serial and about now", ref, at)
	}
	got, err := tsa.Verify(cp, proof, trust)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !got.Equal(at) {
		t.Fatalf("Verify = %v, Publish said %v", got, at)
	}

	var p tsa.Proof
	if err := json.Unmarshal(proof, &p); err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(cp)
	imprintAt := bytes.Index(p.Token, digest[:])
	if imprintAt < 0 {
		t.Fatal("the token does not hold the checkpoint's digest")
	}
	edit := func(f func(tok []byte)) json.RawMessage {
		tok := bytes.Clone(p.Token)
		f(tok)
		b, err := json.Marshal(tsa.Proof{Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	wrong, err := tsa.ParseTrust(otherChain(t))
	if err != nil {
		t.Fatal(err)
	}
	editedCp := bytes.Replace(cp, []byte("\n7\n"), []byte("\n8\n"), 1)
	for name, c := range map[string]struct {
		cp    []byte
		proof json.RawMessage
		trust tsa.Trust
	}{
		"checkpoint text":    {editedCp, proof, trust},
		"other checkpoint":   {signedCheckpoint(t, 7), proof, trust},
		"token imprint":      {cp, edit(func(tok []byte) { tok[imprintAt] ^= 1 }), trust},
		"token signature":    {cp, edit(func(tok []byte) { tok[len(tok)-1] ^= 1 }), trust},
		"token truncated":    {cp, nil, trust},
		"wrong cert":         {cp, proof, wrong},
		"no trust":           {cp, proof, tsa.Trust{}},
		"proof not JSON":     {cp, json.RawMessage(`{"token":`), trust},
		"proof extra member": {cp, json.RawMessage(`{"token":"AA==","x":1}`), trust},
		"proof no token":     {cp, json.RawMessage(`{}`), trust},
		"token not DER":      {cp, json.RawMessage(`{"token":"AAECAw=="}`), trust},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "token truncated" {
				c.proof, _ = json.Marshal(tsa.Proof{Token: p.Token[:len(p.Token)/2]})
			}
			_, err := tsa.Verify(c.cp, c.proof, c.trust)
			if !errors.Is(err, tsa.ErrVerify) {
				t.Fatalf("Verify = %v, want ErrVerify", err)
			}
			t.Log(err)
		})
	}
}

func TestPublishErrors(t *testing.T) {
	srv := testenv.TSA(t)
	cp := signedCheckpoint(t, 1)
	client := &http.Client{Timeout: 10 * time.Second}
	closed := "http://127.0.0.1:" + strconv.Itoa(testenv.FreePorts(t, 1)[0]) + "/api/v1/timestamp"
	for name, url := range map[string]string{
		"not found":   srv.URL + "/no/such/path",
		"not a TSA":   srv.URL + "/api/v1/timestamp/certchain",
		"closed port": closed,
	} {
		t.Run(name, func(t *testing.T) {
			pub, err := tsa.New(url, client)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, err = pub.Publish(context.Background(), cp)
			if !errors.Is(err, tsa.ErrTSA) {
				t.Fatalf("Publish = %v, want ErrTSA", err)
			}
		})
	}
	pub, err := tsa.New(srv.URL+"/api/v1/timestamp", client)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := pub.Publish(context.Background(), nil); err == nil {
		t.Fatal("Publish(empty checkpoint) succeeded")
	}
	for _, bad := range []string{"", "ftp://x/y", "::", "http://"} {
		if _, err := tsa.New(bad, nil); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
}

func TestParseTrust(t *testing.T) {
	chain := otherChain(t)
	tr, err := tsa.ParseTrust(chain)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Roots) != 1 || len(tr.Intermediates) != 1 || tr.Roots[0].Subject.CommonName != "other root" {
		t.Fatalf("ParseTrust = %d roots, %d intermediates", len(tr.Roots), len(tr.Intermediates))
	}
	for name, in := range map[string][]byte{
		"empty":    nil,
		"garbage":  []byte("not pem"),
		"key":      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}}),
		"bad cert": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}}),
		"trailing": append(bytes.Clone(chain), "junk"...),
	} {
		if _, err := tsa.ParseTrust(in); err == nil {
			t.Errorf("ParseTrust(%s) succeeded", name)
		}
	}
	if _, err := tsa.LoadTrust(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("LoadTrust(missing file) succeeded")
	}
}

// otherChain is a PEM chain (leaf with the timeStamping usage, then its root) of a TSA
// that is not the test's.
func otherChain(t testing.TB) []byte {
	t.Helper()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	root := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, rootKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "other tsa"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, root, leafKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER})...)
}
