package integration

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/anchor/rekor"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestAnchoringExternal runs the service with an omniwitness, a rekor-tiles POSIX log
// and a sigstore timestamp-authority on loopback and a short anchoring interval:
// /anchors holds all three attestations end to end, anchoredAt is the TSA's genTime,
// and `sealtrail verify anchor` with every trust passes, and fails with exit 1 on each
// edited link of the rekor and rfc3161 proofs (inclusion proof, Rekor checkpoint,
// token) and with the wrong Rekor key or TSA chain.
func TestAnchoringExternal(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		dir := t.TempDir()
		pub, w, anchorEnv := anchoringSetup(t, dir)
		rk := testenv.Rekor(t, newEd25519(t))
		prepublish(t, rk.URL)
		ts := testenv.TSA(t)
		var cfg map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(anchorEnv, "SEALTRAIL_ANCHOR=")), &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["rekor"] = map[string]string{"url": rk.URL}
		cfg["tsa"] = map[string]string{"url": ts.URL + "/api/v1/timestamp"}
		raw, _ := json.Marshal(cfg)
		s := startServer(t, serveOpts{dir: dir, env: c.env("SEALTRAIL_ANCHOR=" + string(raw))})

		p := s.newProject("external")
		for i := range 2 {
			s.mustLog(p.key["log:write"], "external."+string(rune('a'+i)))
		}
		page := waitAnchored(t, s, p.all, 2)
		var doc map[string]any
		if err := json.Unmarshal([]byte(page), &doc); err != nil {
			t.Fatal(err)
		}
		head := doc["heads"].([]any)[0].(map[string]any)
		ext := head["anchorProof"].(map[string]any)["external"].([]any)
		var types []string
		for _, x := range ext {
			types = append(types, x.(map[string]any)["anchorType"].(string))
		}
		if strings.Join(types, ",") != "witness,rekor,rfc3161" {
			t.Fatalf("attestations %v, want witness, rekor and rfc3161: %s", types, page)
		}
		if tsaAt := ext[2].(map[string]any)["anchoredAt"]; tsaAt == nil || head["anchoredAt"] != tsaAt {
			t.Fatalf("anchoredAt %v, want the RFC 3161 genTime %v", head["anchoredAt"], tsaAt)
		}
		if ref := ext[1].(map[string]any)["anchorRef"].(string); !strings.HasPrefix(ref, rk.Origin+"/") {
			t.Fatalf("rekor anchorRef %q, want %s/<index>", ref, rk.Origin)
		}

		tmp := t.TempDir()
		write := func(name string, data []byte) string {
			f := filepath.Join(tmp, name)
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return f
		}
		rekorKey := write("rekor.pem", pemKey(t, rk.PublicKey))
		tsaCert := write("tsa.pem", ts.CertChain)
		otherRekor := write("other-rekor.pem", pemKey(t, newEd25519(t).Public()))
		otherTSA := write("other-tsa.pem", selfSignedTSA(t))
		file := write("anchors.json", []byte(page))
		bin := sealtrailBin(t)
		verify := func(f, rkey, tcert string) cliResult {
			return runBin(t, bin, dir, "verify", "anchor", "--anchor", f, "--service-key", hex.EncodeToString(pub),
				"--witness-key", w.VerifierKey, "--rekor-key", rkey, "--tsa-cert", tcert)
		}
		res := verify(file, rekorKey, tsaCert)
		if res.code != 0 || !strings.Contains(res.stdout, "rekor "+ext[1].(map[string]any)["anchorRef"].(string)+": verified") ||
			!strings.Contains(res.stdout, "rfc3161 ") || !strings.Contains(res.stdout, "OK:") {
			t.Fatalf("verify anchor with every trust: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		// Each outside party alone is enough trust.
		for _, only := range [][]string{{"--rekor-key", rekorKey}, {"--tsa-cert", tsaCert}} {
			args := append([]string{"verify", "anchor", "--anchor", file}, only...)
			if res := runBin(t, bin, dir, args...); res.code != 0 {
				t.Fatalf("verify anchor %v: exit %d\n%s%s", only, res.code, res.stdout, res.stderr)
			}
		}
		for _, wrong := range []struct{ name, rkey, tcert string }{
			{"another Rekor key", otherRekor, tsaCert},
			{"another TSA chain", rekorKey, otherTSA},
		} {
			if res := verify(file, wrong.rkey, wrong.tcert); res.code != 1 || !strings.Contains(res.stderr, "tamper detected") {
				t.Errorf("verify anchor with %s: exit %d, want 1\n%s%s", wrong.name, res.code, res.stdout, res.stderr)
			}
		}

		edits := []struct {
			link string
			edit func(ext []any)
		}{
			{"rekor inclusion proof", func(ext []any) {
				hs := rekorEntry(ext)["inclusionProof"].(map[string]any)["hashes"].([]any)
				hs[0] = flipBase64(t, hs[0].(string), 0)
			}},
			{"rekor inclusion proof index", func(ext []any) {
				e := rekorEntry(ext)
				e["logIndex"] = "0"
				e["inclusionProof"].(map[string]any)["logIndex"] = "0"
			}},
			{"rekor checkpoint", func(ext []any) {
				cp := rekorEntry(ext)["inclusionProof"].(map[string]any)["checkpoint"].(map[string]any)
				lines := strings.SplitN(cp["envelope"].(string), "\n", 3)
				lines[1] += "0"
				cp["envelope"] = strings.Join(lines, "\n")
			}},
			{"rekor checkpoint signature", func(ext []any) {
				cp := rekorEntry(ext)["inclusionProof"].(map[string]any)["checkpoint"].(map[string]any)
				env := cp["envelope"].(string)
				i := strings.LastIndex(env, " ") + 1
				cp["envelope"] = env[:i] + flipBase64(t, strings.TrimSuffix(env[i:], "\n"), -1) + "\n"
			}},
			{"rekor entry body", func(ext []any) {
				e := rekorEntry(ext)
				e["canonicalizedBody"] = flipBase64(t, e["canonicalizedBody"].(string), 40)
			}},
			{"rfc3161 token signature", func(ext []any) {
				pr := ext[2].(map[string]any)["proof"].(map[string]any)
				pr["token"] = flipBase64(t, pr["token"].(string), -1)
			}},
			{"rfc3161 token imprint", func(ext []any) {
				pr := ext[2].(map[string]any)["proof"].(map[string]any)
				tok, _ := base64.StdEncoding.DecodeString(pr["token"].(string))
				pr["token"] = base64.StdEncoding.EncodeToString(flipImprint(t, tok))
			}},
		}
		for _, ed := range edits {
			var cp map[string]any
			_ = json.Unmarshal([]byte(page), &cp)
			h := cp["heads"].([]any)[0].(map[string]any)
			ed.edit(h["anchorProof"].(map[string]any)["external"].([]any))
			edited, _ := json.Marshal(cp)
			if res := verify(write("edited.json", edited), rekorKey, tsaCert); res.code != 1 || !strings.Contains(res.stderr, "tamper detected") {
				t.Errorf("edited %s: exit %d, want 1\n%s%s", ed.link, res.code, res.stdout, res.stderr)
			}
		}
		s.stop()
	})
}

func newEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// prepublish logs an entry of another key in the Rekor log, so that the service's entry
// is not alone in it and its inclusion proof has hashes to edit.
func prepublish(t *testing.T, url string) {
	t.Helper()
	k := newEd25519(t)
	p, err := rekor.New(url, k, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := tlog.SignCheckpoint(k, "other.test/tree_heads", 1, tlog.LeafHash([]byte("other")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := p.Publish(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
}

func pemKey(t *testing.T, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// selfSignedTSA is a PEM certificate of a timestamping authority the service never used.
func selfSignedTSA(t *testing.T) []byte {
	t.Helper()
	k := newEd25519(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "other TSA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// rekorEntry is the transparencyLogEntry of the rekor attestation (the second).
func rekorEntry(ext []any) map[string]any {
	return ext[1].(map[string]any)["proof"].(map[string]any)["transparencyLogEntry"].(map[string]any)
}

// flipBase64 flips one bit of the decoded byte at i (from the end when negative).
func flipBase64(t *testing.T, s string, i int) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("base64 %q: %v", s, err)
	}
	if i < 0 {
		i += len(b)
	}
	b[i] ^= 0x01
	return base64.StdEncoding.EncodeToString(b)
}

// flipImprint flips a bit of the message imprint in a DER token: the first SHA-256
// AlgorithmIdentifier followed by a 32-byte OCTET STRING, which is the TSTInfo's
// (the SignedData's digestAlgorithms come first but are followed by the content).
func flipImprint(t *testing.T, tok []byte) []byte {
	t.Helper()
	// The imprint is SEQUENCE { AlgorithmIdentifier sha256, OCTET STRING (32) }; the
	// sha256 OID is 2.16.840.1.101.3.4.2.1.
	oid := []byte{0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01}
	for i := 0; i+len(oid) < len(tok); i++ {
		if string(tok[i:i+len(oid)]) != string(oid) {
			continue
		}
		// Skip the optional NULL parameters, then the OCTET STRING header.
		j := i + len(oid)
		if tok[j] == 0x05 && tok[j+1] == 0x00 {
			j += 2
		}
		if tok[j] == 0x04 && tok[j+1] == 0x20 {
			out := append([]byte(nil), tok...)
			out[j+2] ^= 0x01
			return out
		}
	}
	t.Fatal("no SHA-256 message imprint in the token")
	return nil
}
