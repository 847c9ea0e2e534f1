package tlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// The tree_heads log (docs/anchoring.md): every interval the service appends one leaf
// per project-stream whose head grew, and publishes only that log's checkpoint to
// witnesses or public logs. This file holds its formats and their offline checks.

// TreeHeadsOrigin is the checkpoint origin of the service's tree_heads log.
func TreeHeadsOrigin(serviceOrigin string) string { return serviceOrigin + "/tree_heads" }

// AnchorProofVersion is the `v` member of an anchor proof.
const AnchorProofVersion = 1

// ErrAnchor wraps every reason an attested head does not verify: a broken link
// between the stream head and the external proof.
var ErrAnchor = errors.New("anchor does not verify")

// TreeHeadLeaf returns the leaf data of s in the tree_heads log: the RFC 8785 form of
// the signed tree head, signature included. Its leaf hash is LeafHash of it.
func TreeHeadLeaf(s *STH) ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if len(s.Signature) != 2*ed25519.SignatureSize || decodeLowerHex(make([]byte, ed25519.SignatureSize), s.Signature) != nil {
		return nil, errors.New("tree head signature must be 64 bytes of lowercase hex")
	}
	return canonicalJSON(s)
}

// AnchorProof is the anchorProof member of an attested head: the head's inclusion in
// the tree_heads log, that log's signed checkpoint, and what outside parties attested
// of the checkpoint.
type AnchorProof struct {
	V         int    `json:"v"`
	ProjectID string `json:"projectId"`
	// LeafIndex is the head's leaf in the tree_heads log, Inclusion its RFC 6962
	// inclusion proof (lowercase hex) in the tree of the checkpoint's size.
	LeafIndex uint64   `json:"leafIndex"`
	Inclusion []string `json:"inclusion"`
	// Checkpoint is the tree_heads signed note exactly as published: body and the
	// service's signature line.
	Checkpoint string `json:"checkpoint"`
	// External holds one entry per publisher that attested the checkpoint.
	External []ExternalProof `json:"external"`
}

// ExternalProof is one outside party's attestation of the tree_heads checkpoint.
type ExternalProof struct {
	AnchorType string          `json:"anchorType"`
	AnchorRef  string          `json:"anchorRef"`
	Proof      json.RawMessage `json:"proof"`
	// AnchoredAt is the time the party attests (RFC 3339, ms), empty if none.
	AnchoredAt string `json:"anchoredAt,omitempty"`
}

// WitnessProof is the proof of an ExternalProof of type "witness": the C2SP
// tlog-cosignature lines a witness returned for the checkpoint ("— <name> <base64>").
type WitnessProof struct {
	Cosignatures []string `json:"cosignatures"`
}

// CheckTreeHeadInclusion checks the first links of an attested head: s is a head of
// project p.ProjectID, its leaf is at p.LeafIndex of the tree_heads checkpoint
// p.Checkpoint, and, when servicePub is not nil, s and the checkpoint are signed by
// the service. It returns the checkpoint body. Every failure wraps ErrAnchor.
func CheckTreeHeadInclusion(s *STH, p *AnchorProof, servicePub ed25519.PublicKey) (Checkpoint, error) {
	if p.V != AnchorProofVersion {
		return Checkpoint{}, fmt.Errorf("%w: anchor proof version %d, want %d", ErrAnchor, p.V, AnchorProofVersion)
	}
	if s.ProjectID != p.ProjectID {
		return Checkpoint{}, fmt.Errorf("%w: head of project %q, proof of %q", ErrAnchor, s.ProjectID, p.ProjectID)
	}
	if servicePub != nil {
		if err := VerifySTH(servicePub, s); err != nil {
			return Checkpoint{}, fmt.Errorf("%w: stream head: %w", ErrAnchor, err)
		}
	}
	leaf, err := TreeHeadLeaf(s)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: stream head: %w", ErrAnchor, err)
	}
	cp, err := checkpointBody([]byte(p.Checkpoint))
	if err != nil {
		return Checkpoint{}, err
	}
	if !strings.HasSuffix(cp.Origin, "/tree_heads") {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint origin %q is not a tree_heads log", ErrAnchor, cp.Origin)
	}
	if servicePub != nil {
		if _, err := OpenCheckpoint(servicePub, cp.Origin, []byte(p.Checkpoint)); err != nil {
			return Checkpoint{}, fmt.Errorf("%w: tree_heads checkpoint: %w", ErrAnchor, err)
		}
	}
	path := make([]Hash, len(p.Inclusion))
	for i, h := range p.Inclusion {
		if path[i], err = ParseHash(h); err != nil {
			return Checkpoint{}, fmt.Errorf("%w: inclusion proof: %w", ErrAnchor, err)
		}
	}
	if err := VerifyInclusion(LeafHash(leaf), p.LeafIndex, cp.Size, path, cp.Root); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: the head is not in the tree_heads checkpoint: %w", ErrAnchor, err)
	}
	return cp, nil
}

// checkpointBody parses the body of a signed note without checking signatures.
func checkpointBody(signed []byte) (Checkpoint, error) {
	body, _, ok := bytes.Cut(signed, []byte("\n\n"))
	if !ok {
		return Checkpoint{}, fmt.Errorf("%w: tree_heads checkpoint is not a signed note", ErrAnchor)
	}
	cp, err := ParseCheckpoint(append(body, '\n'))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: tree_heads checkpoint: %w", ErrAnchor, err)
	}
	return cp, nil
}

// VerifyWitness checks the proof of a "witness" anchor: at least one cosignature line
// of proof verifies over signedCheckpoint's body under one of vkeys (C2SP
// tlog-cosignature/v1, or a plain Ed25519 note signature). It returns the latest
// time a verified cosignature attests (zero for a plain signature). Every failure of
// the proof wraps ErrAnchor; a malformed key is a plain error.
func VerifyWitness(signedCheckpoint []byte, proof json.RawMessage, vkeys []string) (time.Time, error) {
	var vs []note.Verifier
	for _, k := range vkeys {
		v, err := NewCosignatureVerifier(k)
		if err != nil {
			return time.Time{}, err
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return time.Time{}, errors.New("no witness key given")
	}
	var wp WitnessProof
	dec := json.NewDecoder(bytes.NewReader(proof))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wp); err != nil || len(wp.Cosignatures) == 0 {
		return time.Time{}, fmt.Errorf("%w: witness proof holds no cosignature", ErrAnchor)
	}
	body, _, ok := bytes.Cut(signedCheckpoint, []byte("\n\n"))
	if !ok {
		return time.Time{}, fmt.Errorf("%w: checkpoint is not a signed note", ErrAnchor)
	}
	msg := append(body, '\n', '\n')
	for _, line := range wp.Cosignatures {
		if !strings.HasPrefix(line, "— ") || strings.Contains(line, "\n") {
			return time.Time{}, fmt.Errorf("%w: cosignature %q is not a note signature line", ErrAnchor, line)
		}
		msg = append(append(msg, line...), '\n')
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: no cosignature verifies under the witness keys: %w", ErrAnchor, err)
	}
	var latest time.Time
	for _, s := range n.Sigs {
		if t := cosignatureTime(s); t.After(latest) {
			latest = t
		}
	}
	return latest, nil
}

// Signature algorithms of signed-note keys (C2SP signed-note).
const (
	algEd25519       = 0x01
	algCosignatureV1 = 0x04
)

// NewCosignatureVerifier returns a note verifier for a witness's key: a C2SP
// tlog-cosignature/v1 key (algorithm 0x04), or a plain Ed25519 key (0x01), which
// checks timestamped cosignatures under the derived cosignature key hash, as the
// witnesses do.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, rest, _ := strings.Cut(vkey, "+")
	hash16, key64, _ := strings.Cut(rest, "+")
	key, err := base64.StdEncoding.DecodeString(key64)
	if len(hash16) != 8 || err != nil || !validKeyName(name) || len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("witness key %q: want <name>+<hash>+<base64 key>", vkey)
	}
	if key[0] != algEd25519 && key[0] != algCosignatureV1 {
		return nil, fmt.Errorf("witness key %q: algorithm %#x, want Ed25519 (0x01) or cosignature/v1 (0x04)", vkey, key[0])
	}
	pub := ed25519.PublicKey(key[1:])
	return &cosigVerifier{name: name, hash: cosigKeyHash(name, pub), pub: pub}, nil
}

func validKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

func cosigKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', algCosignatureV1})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// cosigVerifier checks cosignature/v1 signatures: 8 bytes of big-endian Unix time,
// then Ed25519 over "cosignature/v1\ntime <t>\n" followed by the note body.
type cosigVerifier struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }
func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize || bytes.Count(msg, []byte("\n")) < 3 {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	m := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	return ed25519.Verify(v.pub, m, sig[8:])
}

// cosignatureTime is the time a cosignature/v1 signature attests.
func cosignatureTime(s note.Signature) time.Time {
	raw, err := base64.StdEncoding.DecodeString(s.Base64)
	if err != nil || len(raw) != 4+8+ed25519.SignatureSize {
		return time.Time{}
	}
	return time.Unix(int64(binary.BigEndian.Uint64(raw[4:])), 0).UTC()
}
