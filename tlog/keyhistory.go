package tlog

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// KeyHistoryVersion is the `v` member of a key transition.
const KeyHistoryVersion = 1

// keyTransitionType separates a key transition's signed bytes from every other JCS
// object a service key signs (tree heads and receipts have no `type` member).
const keyTransitionType = "sealtrail/service-key-transition"

// MaxKeyTransitions bounds a key history; a service that rotates monthly for a
// century stays far below it.
const MaxKeyTransitions = 4096

// ErrKeyNotAnnounced is returned (wrapped) when a service key is not reachable from a
// trusted key through a valid key history: an unannounced change of the service key,
// which clients report as service_key_changed.
var ErrKeyNotAnnounced = errors.New("service key change not announced in the key history")

// A KeyTransition is one entry of the service's key history: from Timestamp on,
// NewKey signs for the service and PreviousKey signs nothing more. Signature is by
// PreviousKey (the old key announces its successor) and NewKeySignature by NewKey
// (proof that whoever announced it holds it), both lowercase hex Ed25519 over the
// RFC 8785 form of the transition without the two signatures, with the member
// `type` = "sealtrail/service-key-transition" added.
type KeyTransition struct {
	V               int    `json:"v"`
	Seq             uint64 `json:"seq"`
	PreviousKey     string `json:"previousKey"`
	NewKey          string `json:"newKey"`
	Timestamp       string `json:"timestamp"`
	Signature       string `json:"signature"`
	NewKeySignature string `json:"newKeySignature"`
}

type keyTransitionBody struct {
	Type        string `json:"type"`
	V           int    `json:"v"`
	Seq         uint64 `json:"seq"`
	PreviousKey string `json:"previousKey"`
	NewKey      string `json:"newKey"`
	Timestamp   string `json:"timestamp"`
}

// SigningBytes returns the bytes both signatures of the transition cover.
func (t *KeyTransition) SigningBytes() ([]byte, error) {
	return canonicalJSON(keyTransitionBody{keyTransitionType, t.V, t.Seq, t.PreviousKey, t.NewKey, t.Timestamp})
}

// A KeyHistory is the service's signed key history: transitions in order, each
// starting from the key the previous one introduced. The first transition's
// PreviousKey is the service's first key. An empty history means the service never
// rotated its key.
type KeyHistory struct {
	Transitions []KeyTransition `json:"transitions"`
}

// NewKeyTransition returns the transition that appends to h a hand-over from the
// current key oldKey to newKey at time at, signed by both.
func NewKeyTransition(h *KeyHistory, oldKey, newKey ed25519.PrivateKey, at time.Time) (KeyTransition, error) {
	oldPub := hex.EncodeToString(oldKey.Public().(ed25519.PublicKey))
	if cur := h.Current(); cur != "" && cur != oldPub {
		return KeyTransition{}, fmt.Errorf("key history: the current key is %s, not %s", cur, oldPub)
	}
	t := KeyTransition{V: KeyHistoryVersion, Seq: uint64(len(h.Transitions)) + 1, PreviousKey: oldPub,
		NewKey: hex.EncodeToString(newKey.Public().(ed25519.PublicKey)), Timestamp: FormatTime(at)}
	if err := signJCS(oldKey, &t.Signature, t.SigningBytes); err != nil {
		return KeyTransition{}, err
	}
	if err := signJCS(newKey, &t.NewKeySignature, t.SigningBytes); err != nil {
		return KeyTransition{}, err
	}
	next := KeyHistory{Transitions: append(append([]KeyTransition(nil), h.Transitions...), t)}
	if err := next.Verify(); err != nil {
		return KeyTransition{}, err
	}
	return t, nil
}

// ParseKeyHistory decodes and verifies a key history (the JSON that GET
// /api/v1/key-history returns and `sealtrail verify sth --key-history` reads).
func ParseKeyHistory(data []byte) (*KeyHistory, error) {
	canon, err := Canonicalize(data)
	if err != nil {
		return nil, fmt.Errorf("key history: %w", err)
	}
	var h KeyHistory
	if err := json.Unmarshal(canon, &h); err != nil {
		return nil, fmt.Errorf("key history: %w", err)
	}
	if err := h.Verify(); err != nil {
		return nil, err
	}
	return &h, nil
}

// Verify checks that h is one chain: sequence numbers 1, 2, ...; each transition
// starts from the key the previous one introduced; timestamps strictly increase; no
// key appears twice; and both signatures of every transition verify.
func (h *KeyHistory) Verify() error {
	if len(h.Transitions) > MaxKeyTransitions {
		return fmt.Errorf("key history of %d transitions (limit %d)", len(h.Transitions), MaxKeyTransitions)
	}
	seen := map[string]bool{}
	var last time.Time
	for i := range h.Transitions {
		t := &h.Transitions[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("key history transition %d: %w", i+1, fmt.Errorf(format, args...))
		}
		if t.V != KeyHistoryVersion {
			return bad("version %d, want %d", t.V, KeyHistoryVersion)
		}
		if t.Seq != uint64(i)+1 {
			return bad("seq %d", t.Seq)
		}
		prev, err := ParsePublicKey(t.PreviousKey)
		if err != nil {
			return bad("previousKey: %v", err)
		}
		next, err := ParsePublicKey(t.NewKey)
		if err != nil {
			return bad("newKey: %v", err)
		}
		if i > 0 && t.PreviousKey != h.Transitions[i-1].NewKey {
			return bad("starts from %s, but the key before it is %s", t.PreviousKey, h.Transitions[i-1].NewKey)
		}
		if i == 0 {
			seen[t.PreviousKey] = true
		}
		if seen[t.NewKey] {
			return bad("key %s appears twice", t.NewKey)
		}
		seen[t.NewKey] = true
		at, err := ParseTime(t.Timestamp)
		if err != nil {
			return bad("%v", err)
		}
		if i > 0 && !at.After(last) {
			return bad("timestamp %s is not after the previous transition's", t.Timestamp)
		}
		last = at
		if err := verifyJCSSignature(prev, t.Signature, t.SigningBytes); err != nil {
			return bad("signature by the previous key: %w", err)
		}
		if err := verifyJCSSignature(next, t.NewKeySignature, t.SigningBytes); err != nil {
			return bad("signature by the new key: %w", err)
		}
	}
	return nil
}

// Current returns the key the last transition introduced, or "" for an empty history.
func (h *KeyHistory) Current() string {
	if h == nil || len(h.Transitions) == 0 {
		return ""
	}
	return h.Transitions[len(h.Transitions)-1].NewKey
}

// A KeyPeriod is when a key of the history signed for the service: from From (zero
// for the first key) to Until (zero for the current key), both inclusive.
type KeyPeriod struct {
	Key         string
	From, Until time.Time
}

// Keys returns every key of a verified history with its period, oldest first.
func (h *KeyHistory) Keys() []KeyPeriod {
	if len(h.Transitions) == 0 {
		return nil
	}
	out := []KeyPeriod{{Key: h.Transitions[0].PreviousKey}}
	for _, t := range h.Transitions {
		at, _ := ParseTime(t.Timestamp) // checked by Verify
		out[len(out)-1].Until = at
		out = append(out, KeyPeriod{Key: t.NewKey, From: at})
	}
	return out
}

// index returns the position of key in Keys(), or -1.
func (h *KeyHistory) index(key string) int {
	for i, p := range h.Keys() {
		if p.Key == key {
			return i
		}
	}
	return -1
}

// Announced reports whether the service may move from the trusted key from to the key
// to: to is from itself, or a later key of the verified history h. A move to an older
// key (a rollback) or to a key the history does not hold wraps ErrKeyNotAnnounced.
func (h *KeyHistory) Announced(from, to string) error {
	if from == to {
		return nil
	}
	i, j := h.index(from), h.index(to)
	switch {
	case i < 0:
		return fmt.Errorf("%w: the trusted key %s is not in the key history", ErrKeyNotAnnounced, from)
	case j < 0:
		return fmt.Errorf("%w: key %s is not in the key history", ErrKeyNotAnnounced, to)
	case j < i:
		return fmt.Errorf("%w: key %s was retired before the trusted key %s", ErrKeyNotAnnounced, to, from)
	}
	return nil
}

// VerifySTHWithHistory checks an STH signed by any key of the verified history h that
// the trusted key belongs to, within that key's period: a head signed by a retired key
// must be dated no later than its retirement, a head signed by a newer key no earlier
// than its introduction. With a nil or empty h it is VerifySTH under trusted. It
// returns the key that signed. A head that verifies under no key of the history wraps
// ErrBadSignature; a key outside its period wraps ErrKeyNotAnnounced.
func VerifySTHWithHistory(trusted ed25519.PublicKey, h *KeyHistory, s *STH) (string, error) {
	want := hex.EncodeToString(trusted)
	if h == nil || len(h.Transitions) == 0 {
		return want, VerifySTH(trusted, s)
	}
	if err := s.validate(); err != nil {
		return "", err
	}
	if h.index(want) < 0 {
		return "", fmt.Errorf("%w: the trusted key %s is not in the key history", ErrKeyNotAnnounced, want)
	}
	at, _ := ParseTime(s.Timestamp) // checked by validate
	for _, p := range h.Keys() {
		pub, _ := ParsePublicKey(p.Key) // checked by Verify
		if verifyJCSSignature(pub, s.Signature, s.SigningBytes) != nil {
			continue
		}
		if !p.Until.IsZero() && at.After(p.Until) {
			return p.Key, fmt.Errorf("%w: head dated %s is signed by key %s, retired at %s",
				ErrKeyNotAnnounced, s.Timestamp, p.Key, FormatTime(p.Until))
		}
		if at.Before(p.From) {
			return p.Key, fmt.Errorf("%w: head dated %s is signed by key %s, introduced at %s",
				ErrKeyNotAnnounced, s.Timestamp, p.Key, FormatTime(p.From))
		}
		return p.Key, nil
	}
	return "", ErrBadSignature
}
