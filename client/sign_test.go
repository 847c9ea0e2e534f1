package client

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestSignEvent: the signed body carries the canonical payload and the transport
// members, the status is explicit, and the signature verifies over the commitment that
// an independent re-derivation (canonicalize, drop transport members) finds.
func TestSignEvent(t *testing.T) {
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	in := EventInput{Action: "doc.read", Actor: Entity{Type: "user", ID: "ålice <a&b>"},
		Target:   &Entity{Type: "doc", ID: "d1"},
		Metadata: map[string]any{"z": 1.5, "a": []any{"x", nil, true}, "big": 1e21}, ToolCallID: "call_1"}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	s, err := signEvent(priv, "sk_1", in, now)
	if err != nil {
		t.Fatal(err)
	}
	if !tlog.ValidEventID(s.ID) || !strings.HasPrefix(s.ID, "evt_") {
		t.Fatalf("id %q", s.ID)
	}
	if err := checkSignedBody(pub, s.Body); err != nil {
		t.Fatalf("independent check of the body: %v", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(s.Body, &body); err != nil {
		t.Fatal(err)
	}
	for member, want := range map[string]string{`"id"`: `"` + s.ID + `"`, `"nonce"`: `"` + s.Nonce.Hex() + `"`,
		`"signingKeyId"`: `"sk_1"`, `"signature"`: `"` + s.Signature + `"`, `"status"`: `"success"`} {
		if got := string(body[strings.Trim(member, `"`)]); got != want {
			t.Errorf("member %s = %s, want %s", member, got, want)
		}
	}
	if got := tlog.Commitment(s.Nonce, s.Payload); got != s.PayloadHash {
		t.Fatal("commitment does not match the payload")
	}
	canon, err := tlog.Canonicalize(s.Payload)
	if err != nil || string(canon) != string(s.Payload) {
		t.Fatalf("payload is not in RFC 8785 form: %s", s.Payload)
	}
	if err := tlog.VerifyEventSignature(pub, s.ID, s.PayloadHash, s.Signature); err != nil {
		t.Fatal(err)
	}

	// An explicit status is kept; two signings never share an id or a nonce.
	in.Status = StatusDenied
	s2, err := signEvent(priv, "sk_1", in, now)
	if err != nil {
		t.Fatal(err)
	}
	if s2.ID == s.ID || s2.Nonce == s.Nonce || !strings.Contains(string(s2.Payload), `"status":"denied"`) {
		t.Fatalf("second signing: %s %s", s2.ID, s2.Payload)
	}

	// Input that JCS cannot represent exactly is refused before anything is sent.
	in.Metadata = map[string]any{"n": int64(1) << 60}
	if _, err := signEvent(priv, "sk_1", in, now); err == nil {
		t.Fatal("an integer beyond 2^53 was signed")
	}
}

// TestLogSigned: with signing configured, Log sends events a signature-checking
// service accepts, and returns the client-minted id.
func TestLogSigned(t *testing.T) {
	f := newFakeLog(t)
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f.signer = pub
	c := newTestClient(t, f, Config{SigningKeyID: "sk_1", SigningPrivateKey: tlog.Hex(tlog.Hash(priv.Seed()))})
	res, err := c.Log(context.Background(), EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct{ ID string }
	if err := json.Unmarshal(f.logged[0], &sent); err != nil || res.ID != sent.ID || res.Status != "sealed" {
		t.Fatalf("result %+v for body %s", res, f.logged[0])
	}
	// A client holding another key is refused by the same service.
	_, other, _ := tlog.GenerateKey()
	bad := newTestClient(t, f, Config{SigningKeyID: "sk_1", SigningPrivateKey: tlog.Hex(tlog.Hash(other.Seed()))})
	if _, err := bad.Log(context.Background(), EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}); err == nil {
		t.Fatal("an event signed by another key was accepted")
	}
}

// TestLogResendsSignedOnly: a signed event is resent, byte for byte, after a 503; an
// unsigned one is not (a resend could record it twice).
func TestLogResendsSignedOnly(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		first := len(bodies)%2 == 1
		mu.Unlock()
		if first {
			writeTestJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "Event committed but not yet published"})
			return
		}
		writeTestJSON(w, http.StatusAccepted, map[string]string{"id": "evt_1", "status": "sealed"})
	}))
	defer srv.Close()
	_, priv, _ := tlog.GenerateKey()
	ev := EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}}
	signed, err := New(Config{APIKey: "k", BaseURL: srv.URL, AutoVerify: boolPtr(false), SigningKeyID: "sk_1",
		SigningPrivateKey: hex.EncodeToString(priv.Seed())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signed.Log(context.Background(), ev); err != nil {
		t.Fatalf("signed Log with one 503: %v", err)
	}
	sent := func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), bodies...)
	}
	if b := sent(); len(b) != 2 || !bytes.Equal(b[0], b[1]) {
		t.Fatalf("%d sends, want 2 identical ones", len(b))
	}
	unsigned, err := New(Config{APIKey: "k", BaseURL: srv.URL, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	var ae *APIError
	if _, err := unsigned.Log(context.Background(), ev); !errors.As(err, &ae) || ae.Status != 503 || len(sent()) != 3 {
		t.Fatalf("unsigned Log: %v after %d sends", err, len(sent()))
	}
}
