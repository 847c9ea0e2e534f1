package tlog

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func keyHex(k ed25519.PrivateKey) string { return hex.EncodeToString(k.Public().(ed25519.PublicKey)) }

func newTestKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rotatedHistory returns keys k0, k1, k2 and a history k0 -> k1 (at t1) -> k2 (at t2).
func rotatedHistory(t *testing.T, t1, t2 time.Time) ([]ed25519.PrivateKey, *KeyHistory) {
	t.Helper()
	keys := []ed25519.PrivateKey{newTestKey(t), newTestKey(t), newTestKey(t)}
	h := &KeyHistory{}
	for i, at := range []time.Time{t1, t2} {
		tr, err := NewKeyTransition(h, keys[i], keys[i+1], at)
		if err != nil {
			t.Fatal(err)
		}
		h.Transitions = append(h.Transitions, tr)
	}
	return keys, h
}

func signedHead(t *testing.T, k ed25519.PrivateKey, at time.Time) *STH {
	t.Helper()
	s := &STH{V: TreeHeadVersion, ProjectID: "prj_x", Stream: StreamEvents, TreeSize: 3,
		RootHash: Hex(EmptyRoot), Timestamp: FormatTime(at)}
	if err := SignSTH(k, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKeyHistoryRoundTrip(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys, h := rotatedHistory(t, t1, t1.Add(time.Hour))
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseKeyHistory(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Current() != keyHex(keys[2]) {
		t.Fatalf("current key %s, want %s", got.Current(), keyHex(keys[2]))
	}
	if ps := got.Keys(); len(ps) != 3 || ps[0].Key != keyHex(keys[0]) || !ps[0].Until.Equal(t1) || !ps[1].From.Equal(t1) || !ps[2].Until.IsZero() {
		t.Fatalf("periods %+v", ps)
	}
	// A transition from a key that is not the current one is refused.
	if _, err := NewKeyTransition(got, keys[0], newTestKey(t), t1.Add(2*time.Hour)); err == nil {
		t.Fatal("a transition from a retired key was accepted")
	}
}

func TestKeyHistoryRejectsTampering(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	other := newTestKey(t)
	cases := map[string]func(h *KeyHistory){
		"signature":         func(h *KeyHistory) { h.Transitions[1].Signature = h.Transitions[0].Signature },
		"new key signature": func(h *KeyHistory) { h.Transitions[0].NewKeySignature = h.Transitions[0].Signature },
		"seq":               func(h *KeyHistory) { h.Transitions[1].Seq = 5 },
		"version":           func(h *KeyHistory) { h.Transitions[0].V = 2 },
		"broken chain":      func(h *KeyHistory) { h.Transitions[1].PreviousKey = keyHex(other) },
		"substituted key":   func(h *KeyHistory) { h.Transitions[1].NewKey = keyHex(other) },
		"time order": func(h *KeyHistory) {
			h.Transitions[1].Timestamp = h.Transitions[0].Timestamp
		},
		"dropped first": func(h *KeyHistory) { h.Transitions = h.Transitions[1:] },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			_, h := rotatedHistory(t, t1, t1.Add(time.Hour))
			damage(h)
			raw, _ := json.Marshal(h)
			if _, err := ParseKeyHistory(raw); err == nil {
				t.Fatal("damaged history accepted")
			}
		})
	}
	if _, err := ParseKeyHistory([]byte(`{"transitions":[],"transitions":[]}`)); err == nil {
		t.Fatal("duplicate members accepted")
	}
}

func TestKeyHistoryAnnounced(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys, h := rotatedHistory(t, t1, t1.Add(time.Hour))
	k0, k1, k2 := keyHex(keys[0]), keyHex(keys[1]), keyHex(keys[2])
	for _, ok := range [][2]string{{k0, k1}, {k0, k2}, {k1, k2}, {k2, k2}} {
		if err := h.Announced(ok[0], ok[1]); err != nil {
			t.Errorf("%s -> %s: %v", ok[0][:8], ok[1][:8], err)
		}
	}
	stranger := keyHex(newTestKey(t))
	for _, bad := range [][2]string{{k2, k0}, {k1, k0}, {k0, stranger}, {stranger, k2}} {
		if err := h.Announced(bad[0], bad[1]); !errors.Is(err, ErrKeyNotAnnounced) {
			t.Errorf("%s -> %s: %v, want ErrKeyNotAnnounced", bad[0][:8], bad[1][:8], err)
		}
	}
	if err := (&KeyHistory{}).Announced(k0, k1); !errors.Is(err, ErrKeyNotAnnounced) {
		t.Errorf("empty history announced a change: %v", err)
	}
}

func TestVerifySTHWithHistory(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	keys, h := rotatedHistory(t, t1, t2)
	pub := func(i int) ed25519.PublicKey { return keys[i].Public().(ed25519.PublicKey) }
	cases := []struct {
		name    string
		trusted int
		head    *STH
		signer  int
		want    error
	}{
		{"old head, new trust", 2, signedHead(t, keys[0], t1.Add(-time.Minute)), 0, nil},
		{"new head, old trust", 0, signedHead(t, keys[2], t2.Add(time.Minute)), 2, nil},
		{"middle key in period", 0, signedHead(t, keys[1], t1.Add(time.Minute)), 1, nil},
		{"retired key signs later", 2, signedHead(t, keys[0], t2), 0, ErrKeyNotAnnounced},
		{"new key backdated", 0, signedHead(t, keys[2], t1), 2, ErrKeyNotAnnounced},
		{"stranger", 0, signedHead(t, newTestKey(t), t2), -1, ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			signer, err := VerifySTHWithHistory(pub(c.trusted), h, c.head)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if c.signer >= 0 && signer != keyHex(keys[c.signer]) {
				t.Fatalf("signer %s, want key %d", signer, c.signer)
			}
		})
	}
	// A trusted key outside the history is refused, whatever signed the head.
	if _, err := VerifySTHWithHistory(newTestKey(t).Public().(ed25519.PublicKey), h, signedHead(t, keys[2], t2)); !errors.Is(err, ErrKeyNotAnnounced) {
		t.Fatalf("trusted key outside the history: %v", err)
	}
	// Without a history it is VerifySTH.
	if _, err := VerifySTHWithHistory(pub(0), nil, signedHead(t, keys[1], t2)); !errors.Is(err, ErrBadSignature) || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("no history: %v", err)
	}
}
