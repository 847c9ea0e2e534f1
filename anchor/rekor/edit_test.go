package rekor_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// Helpers that edit one piece of a rekor proof, as a tamperer would.

// editEntry applies f to the proof's transparencyLogEntry.
func editEntry(t *testing.T, proof json.RawMessage, f func(e map[string]any)) json.RawMessage {
	t.Helper()
	var m map[string]map[string]any
	if err := json.Unmarshal(proof, &m); err != nil {
		t.Fatal(err)
	}
	f(m["transparencyLogEntry"])
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editBody applies f to the hashedRekordV002 member of the entry body and stores the
// body again in canonical form.
func editBody(t *testing.T, proof json.RawMessage, f func(hr map[string]any)) json.RawMessage {
	t.Helper()
	return editEntry(t, proof, func(e map[string]any) {
		raw, err := base64.StdEncoding.DecodeString(e["canonicalizedBody"].(string))
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		f(body["spec"].(map[string]any)["hashedRekordV002"].(map[string]any))
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = tlog.Canonicalize(b); err != nil {
			t.Fatal(err)
		}
		e["canonicalizedBody"] = base64.StdEncoding.EncodeToString(b)
	})
}

func sig(hr map[string]any) map[string]any { return hr["signature"].(map[string]any) }

func ip(e map[string]any) map[string]any { return e["inclusionProof"].(map[string]any) }

// flipB64 flips a bit of the base64 bytes at m[key] (a map member or a list element).
func flipB64[K string | int](t *testing.T, m any, key K) {
	t.Helper()
	get := func() string {
		switch c := m.(type) {
		case map[string]any:
			return c[any(key).(string)].(string)
		case []any:
			return c[any(key).(int)].(string)
		}
		t.Fatalf("flipB64: %T", m)
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(get())
	if err != nil || len(b) == 0 {
		t.Fatalf("flipB64: %v", err)
	}
	b[0] ^= 1
	v := base64.StdEncoding.EncodeToString(b)
	switch c := m.(type) {
	case map[string]any:
		c[any(key).(string)] = v
	case []any:
		c[any(key).(int)] = v
	}
}

func pkixB64(t *testing.T, k crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// reencode returns the base64 of the body with a space after its first brace: the
// same JSON, not in canonical form.
func reencode(t *testing.T, b64, space string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString([]byte("{" + space + string(raw[1:])))
}

// editEnvelope replaces old by new in Rekor's signed checkpoint.
func editEnvelope(ipm map[string]any, old, new string) {
	cp := ipm["checkpoint"].(map[string]any)
	cp["envelope"] = strings.Replace(cp["envelope"].(string), old, new, 1)
}

// flipNoteSig flips a bit of the signature in Rekor's signed checkpoint.
func flipNoteSig(t *testing.T, ipm map[string]any) {
	t.Helper()
	cp := ipm["checkpoint"].(map[string]any)
	env := cp["envelope"].(string)
	i := strings.LastIndex(strings.TrimSuffix(env, "\n"), " ")
	b, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(env[i+1:], "\n"))
	if err != nil {
		t.Fatalf("checkpoint signature: %v", err)
	}
	b[len(b)-1] ^= 1
	cp["envelope"] = env[:i+1] + base64.StdEncoding.EncodeToString(b) + "\n"
}

// newKeyPair is a fresh Ed25519 key pair, for tests without a *testing.T.
func newKeyPair() (ed25519.PrivateKey, ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, pub, err
}
