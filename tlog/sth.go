package tlog

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// STH is a signed tree head as the API returns it. Signature is lowercase hex Ed25519
// by the service key over the RFC 8785 form of the STH without its signature member.
type STH struct {
	V         int    `json:"v"`
	ProjectID string `json:"projectId"`
	Stream    string `json:"stream"`
	TreeSize  uint64 `json:"treeSize"`
	RootHash  string `json:"rootHash"`
	Timestamp string `json:"timestamp"`
	Signature string `json:"signature"`
}

type sthBody struct {
	V         int    `json:"v"`
	ProjectID string `json:"projectId"`
	Stream    string `json:"stream"`
	TreeSize  uint64 `json:"treeSize"`
	RootHash  string `json:"rootHash"`
	Timestamp string `json:"timestamp"`
}

// SigningBytes returns the bytes the STH signature covers.
func (s *STH) SigningBytes() ([]byte, error) {
	return canonicalJSON(sthBody{s.V, s.ProjectID, s.Stream, s.TreeSize, s.RootHash, s.Timestamp})
}

func (s *STH) validate() error {
	if s.V != TreeHeadVersion {
		return fmt.Errorf("tree head version %d, want %d", s.V, TreeHeadVersion)
	}
	if !ValidStream(s.Stream) {
		return fmt.Errorf("tree head stream %q", s.Stream)
	}
	if s.TreeSize > maxSafeInteger {
		return fmt.Errorf("tree size %d out of range", s.TreeSize)
	}
	if _, err := ParseHash(s.RootHash); err != nil {
		return fmt.Errorf("tree head root: %w", err)
	}
	if _, err := ParseTime(s.Timestamp); err != nil {
		return err
	}
	return nil
}

// SignSTH fills in s.Signature.
func SignSTH(priv ed25519.PrivateKey, s *STH) error {
	if err := s.validate(); err != nil {
		return err
	}
	return signJCS(priv, &s.Signature, s.SigningBytes)
}

// VerifySTH checks the STH's format and signature under the service key pub.
func VerifySTH(pub ed25519.PublicKey, s *STH) error {
	if err := s.validate(); err != nil {
		return err
	}
	return verifyJCSSignature(pub, s.Signature, s.SigningBytes)
}

// Break reasons of a ChainBreak.
const (
	BreakSequenceGap            = "sequence_gap"
	BreakContentTampered        = "content_tampered"
	BreakLeafMismatch           = "leaf_mismatch"
	BreakInvalidClientSignature = "invalid_client_signature"
	BreakRootMismatch           = "root_mismatch"
)

// ChainBreak is the first place a rebuild stopped agreeing with what was stored.
type ChainBreak struct {
	Sequence uint64 `json:"sequence"`
	Reason   string `json:"reason"`
	Detail   string `json:"detail"`
}

func (b *ChainBreak) Error() string {
	return fmt.Sprintf("%s at sequence %d: %s", b.Reason, b.Sequence, b.Detail)
}

// Receipt is a verify receipt. Signature is lowercase hex Ed25519 by the service key
// over the RFC 8785 form of the receipt without its signature member.
type Receipt struct {
	ReceiptVersion   int         `json:"receiptVersion"`
	Stream           string      `json:"stream"`
	ProjectID        string      `json:"projectId"`
	Valid            bool        `json:"valid"`
	CheckedCount     uint64      `json:"checkedCount"`
	TreeSize         uint64      `json:"treeSize"`
	RootHash         string      `json:"rootHash"`
	FirstBreak       *ChainBreak `json:"firstBreak"`
	VerifiedAt       string      `json:"verifiedAt"`
	ServicePublicKey string      `json:"servicePublicKey"`
	Signature        string      `json:"signature"`
}

type receiptBody struct {
	ReceiptVersion   int         `json:"receiptVersion"`
	Stream           string      `json:"stream"`
	ProjectID        string      `json:"projectId"`
	Valid            bool        `json:"valid"`
	CheckedCount     uint64      `json:"checkedCount"`
	TreeSize         uint64      `json:"treeSize"`
	RootHash         string      `json:"rootHash"`
	FirstBreak       *ChainBreak `json:"firstBreak"`
	VerifiedAt       string      `json:"verifiedAt"`
	ServicePublicKey string      `json:"servicePublicKey"`
}

// SigningBytes returns the bytes the receipt signature covers.
func (r *Receipt) SigningBytes() ([]byte, error) {
	return canonicalJSON(receiptBody{r.ReceiptVersion, r.Stream, r.ProjectID, r.Valid, r.CheckedCount,
		r.TreeSize, r.RootHash, r.FirstBreak, r.VerifiedAt, r.ServicePublicKey})
}

func (r *Receipt) validate() error {
	if r.ReceiptVersion != ReceiptVersion {
		return fmt.Errorf("receipt version %d, want %d", r.ReceiptVersion, ReceiptVersion)
	}
	if !ValidStream(r.Stream) {
		return fmt.Errorf("receipt stream %q", r.Stream)
	}
	if r.Valid != (r.FirstBreak == nil) {
		return errors.New("receipt: valid must be true exactly when firstBreak is null")
	}
	if _, err := ParseHash(r.RootHash); err != nil {
		return fmt.Errorf("receipt root: %w", err)
	}
	if _, err := ParseTime(r.VerifiedAt); err != nil {
		return err
	}
	if _, err := ParsePublicKey(r.ServicePublicKey); err != nil {
		return fmt.Errorf("receipt: servicePublicKey: %w", err)
	}
	return nil
}

// SignReceipt sets r.ServicePublicKey from priv and fills in r.Signature.
func SignReceipt(priv ed25519.PrivateKey, r *Receipt) error {
	r.ServicePublicKey = hex.EncodeToString(priv.Public().(ed25519.PublicKey))
	if err := r.validate(); err != nil {
		return err
	}
	return signJCS(priv, &r.Signature, r.SigningBytes)
}

// VerifyReceipt checks the receipt's format and its signature under pub. A caller that
// trusts only a pinned key passes that key; the receipt's own servicePublicKey member
// must equal it.
func VerifyReceipt(pub ed25519.PublicKey, r *Receipt) error {
	if err := r.validate(); err != nil {
		return err
	}
	if r.ServicePublicKey != hex.EncodeToString(pub) {
		return errors.New("receipt: servicePublicKey is not the expected service key")
	}
	return verifyJCSSignature(pub, r.Signature, r.SigningBytes)
}

// signJCS sets *sig to the hex Ed25519 signature of the bytes body returns.
func signJCS(priv ed25519.PrivateKey, sig *string, body func() ([]byte, error)) error {
	msg, err := body()
	if err != nil {
		return err
	}
	*sig = hex.EncodeToString(ed25519.Sign(priv, msg))
	return nil
}

func verifyJCSSignature(pub ed25519.PublicKey, sigHex string, body func() ([]byte, error)) error {
	sig, err := ParseSignature(sigHex)
	if err != nil {
		return err
	}
	msg, err := body()
	if err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, msg, sig) {
		return ErrBadSignature
	}
	return nil
}

// canonicalJSON marshals v with encoding/json and returns its RFC 8785 form.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	return Canonicalize(raw)
}
