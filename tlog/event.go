package tlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// NonceSize is the size of the blinding nonce of a payload commitment.
const NonceSize = 32

// Nonce blinds a payload commitment so it cannot be dictionary-attacked.
type Nonce [NonceSize]byte

// NewNonce returns a fresh random nonce.
func NewNonce() (Nonce, error) {
	var n Nonce
	if _, err := rand.Read(n[:]); err != nil {
		return Nonce{}, fmt.Errorf("nonce: %w", err)
	}
	return n, nil
}

// Hex returns the nonce as lowercase hex, its wire form.
func (n Nonce) Hex() string { return hex.EncodeToString(n[:]) }

// ParseNonce parses a nonce from 64 lowercase hex digits.
func ParseNonce(s string) (Nonce, error) {
	var n Nonce
	if err := decodeLowerHex(n[:], s); err != nil {
		return Nonce{}, fmt.Errorf("nonce: %w", err)
	}
	return n, nil
}

// Commitment is the payload commitment SHA-256(nonce || canonicalPayload), where
// canonicalPayload is already in RFC 8785 form.
func Commitment(nonce Nonce, canonicalPayload []byte) Hash {
	h := sha256.New()
	h.Write(nonce[:])
	h.Write(canonicalPayload)
	var out Hash
	h.Sum(out[:0])
	return out
}

// CommitPayload canonicalizes payload (any JSON text) and returns its JCS bytes and the
// commitment under nonce.
func CommitPayload(nonce Nonce, payload []byte) (canonical []byte, commitment Hash, err error) {
	canonical, err = Canonicalize(payload)
	if err != nil {
		return nil, Hash{}, fmt.Errorf("payload: %w", err)
	}
	return canonical, Commitment(nonce, canonical), nil
}

// Event ids are "evt_" followed by 1 to MaxEventIDLen-4 characters of [A-Za-z0-9_-].
// Server-minted ids carry 26 characters of Crockford base32: 48 bits of milliseconds
// then 80 random bits, so ids sort by mint time.
const (
	EventIDPrefix = "evt_"
	MaxEventIDLen = 128
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewEventID mints an event id for time t.
func NewEventID(t time.Time) (string, error) {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		return "", fmt.Errorf("event id: %w", err)
	}
	// 128 bits as 26 base32 digits, most significant first (the top digit holds 3 bits).
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return EventIDPrefix + string(out[:]), nil
}

// ValidEventID reports whether id is a well-formed event id.
func ValidEventID(id string) bool {
	if len(id) <= len(EventIDPrefix) || len(id) > MaxEventIDLen || id[:len(EventIDPrefix)] != EventIDPrefix {
		return false
	}
	for i := len(EventIDPrefix); i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// GenerateKey returns a new Ed25519 key pair.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	return pub, priv, nil
}

// ParsePublicKey parses an Ed25519 public key from 64 lowercase hex digits.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	pub := make(ed25519.PublicKey, ed25519.PublicKeySize)
	if err := decodeLowerHex(pub, s); err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return pub, nil
}

// ParsePrivateKey parses an Ed25519 private key from lowercase hex: either the 32-byte
// seed or the 64-byte seed||public form, whose public half must match the seed.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	switch len(s) {
	case 2 * ed25519.SeedSize:
		seed := make([]byte, ed25519.SeedSize)
		if err := decodeLowerHex(seed, s); err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	case 2 * ed25519.PrivateKeySize:
		raw := make([]byte, ed25519.PrivateKeySize)
		if err := decodeLowerHex(raw, s); err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if string(priv[ed25519.SeedSize:]) != string(raw[ed25519.SeedSize:]) {
			return nil, errors.New("private key: public half does not match the seed")
		}
		return priv, nil
	default:
		return nil, fmt.Errorf("private key: want %d or %d hex digits, got %d",
			2*ed25519.SeedSize, 2*ed25519.PrivateKeySize, len(s))
	}
}

// EventSigningMessage is the message a customer signs for an event:
// "sealtrail/event/v1\n<eventId>\n<payloadHash hex>".
func EventSigningMessage(eventID string, payloadHash Hash) []byte {
	msg := make([]byte, 0, 19+len(eventID)+1+2*HashSize)
	msg = append(msg, "sealtrail/event/v1\n"...)
	msg = append(msg, eventID...)
	msg = append(msg, '\n')
	return hex.AppendEncode(msg, payloadHash[:])
}

// SignEvent returns the customer signature of an event as lowercase hex.
func SignEvent(priv ed25519.PrivateKey, eventID string, payloadHash Hash) string {
	return hex.EncodeToString(ed25519.Sign(priv, EventSigningMessage(eventID, payloadHash)))
}

// ErrBadSignature means a signature is well-formed but does not verify.
var ErrBadSignature = errors.New("signature does not verify")

// VerifyEventSignature checks a hex customer signature of an event.
func VerifyEventSignature(pub ed25519.PublicKey, eventID string, payloadHash Hash, sigHex string) error {
	sig, err := ParseSignature(sigHex)
	if err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, EventSigningMessage(eventID, payloadHash), sig) {
		return ErrBadSignature
	}
	return nil
}

// ParseSignature decodes a 128-digit lowercase hex Ed25519 signature (a leaf's, an
// STH's).
func ParseSignature(s string) ([]byte, error) {
	sig := make([]byte, ed25519.SignatureSize)
	if err := decodeLowerHex(sig, s); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return sig, nil
}
