package rekor

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/sealtrail/sealtrail/tlog"
)

// Trust is what a verifier trusts about a Rekor log and the service.
type Trust struct {
	// LogKey is Rekor's checkpoint signing key: Ed25519 or ECDSA (P-256, P-384, P-521),
	// as Sigstore's trusted root lists it for the log.
	LogKey crypto.PublicKey
	// Origin, when set, is the log's checkpoint origin (its hostname); empty accepts
	// the origin of the checkpoint in the proof.
	Origin string
	// ServiceKey, when set, is the service key that must have signed the entry (and
	// so the checkpoint); without it, the entry's key must still have signed the
	// checkpoint note.
	ServiceKey ed25519.PublicKey
}

// ErrVerify wraps every reason Verify rejects a proof: the proof does not show that
// Rekor logged this checkpoint signed by the service key. Malformed input is wrapped too.
var ErrVerify = errors.New("rekor anchor does not verify")

// LoadTrust reads Rekor's public key from a PEM file (the --rekor-key flag): one
// PUBLIC KEY block (PKIX).
func LoadTrust(path string) (Trust, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Trust{}, fmt.Errorf("rekor: trust: %w", err)
	}
	tr, err := ParseTrust(b)
	if err != nil {
		return Trust{}, fmt.Errorf("rekor: trust %s: %w", path, err)
	}
	return tr, nil
}

// ParseTrust parses Rekor's public key from PEM: one PUBLIC KEY block.
func ParseTrust(pemKey []byte) (Trust, error) {
	blk, rest := pem.Decode(pemKey)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return Trust{}, errors.New("want one PEM PUBLIC KEY block")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return Trust{}, errors.New("trailing data after the PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return Trust{}, fmt.Errorf("public key: %w", err)
	}
	if _, err := logVerifier(k, "origin"); err != nil {
		return Trust{}, err
	}
	return Trust{LogKey: k}, nil
}

// Verify checks a rekor anchorProof offline. It returns the zero time, as Rekor v2
// attests none, and an error wrapping ErrVerify unless all of this holds:
//
//  1. the proof is {"transparencyLogEntry": ...}, a hashedrekord 0.0.2 entry;
//  2. the entry body is in RFC 8785 canonical form and records the SHA-512 of
//     signedCheckpoint and an Ed25519ph signature of it by an Ed25519 key, which is
//     Trust.ServiceKey when set and which signed the checkpoint note;
//  3. Rekor's checkpoint in the inclusion proof is signed by Trust.LogKey (under
//     Trust.Origin when set);
//  4. the inclusion proof puts the body's leaf at the entry's index in that
//     checkpoint's tree.
func Verify(signedCheckpoint []byte, proof json.RawMessage, trust Trust) (time.Time, error) {
	if trust.LogKey == nil {
		return time.Time{}, fmt.Errorf("%w: no trusted Rekor key", ErrVerify)
	}
	var p Proof
	if err := decodeOne(proof, &p, true); err != nil {
		return time.Time{}, fmt.Errorf("%w: proof: %w", ErrVerify, err)
	}
	if len(p.TransparencyLogEntry) == 0 {
		return time.Time{}, fmt.Errorf("%w: proof has no transparencyLogEntry", ErrVerify)
	}
	tle, err := parseEntry(p.TransparencyLogEntry)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrVerify, err)
	}
	key, err := checkBody(tle, signedCheckpoint)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrVerify, err)
	}
	if trust.ServiceKey != nil && !key.Equal(trust.ServiceKey) {
		return time.Time{}, fmt.Errorf("%w: the entry is signed by another key than the trusted service key", ErrVerify)
	}
	origin, _, _ := strings.Cut(string(signedCheckpoint), "\n")
	if _, err := tlog.OpenCheckpoint(key, origin, signedCheckpoint); err != nil {
		return time.Time{}, fmt.Errorf("%w: the entry's key did not sign this checkpoint: %w", ErrVerify, err)
	}
	cp, err := openLogCheckpoint(tle.InclusionProof.Checkpoint.Envelope, trust)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrVerify, err)
	}
	if err := checkInclusion(tle, cp); err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrVerify, err)
	}
	return time.Time{}, nil
}

// checkBody checks step 2 of Verify but the note signature, and returns the entry's key.
func checkBody(tle *transparencyLogEntry, signedCheckpoint []byte) (ed25519.PublicKey, error) {
	body := tle.CanonicalizedBody
	canon, err := tlog.Canonicalize(body)
	if err != nil {
		return nil, fmt.Errorf("entry body: %w", err)
	}
	if !bytes.Equal(canon, body) {
		return nil, errors.New("entry body is not in canonical (RFC 8785) form")
	}
	var e entryBody
	if err := decodeOne(body, &e, true); err != nil {
		return nil, fmt.Errorf("entry body: %w", err)
	}
	hr := e.Spec.HashedRekordV002
	switch {
	case e.Kind != kindHashedRekord || e.APIVersion != versionHashedRekord || hr == nil:
		return nil, fmt.Errorf("entry body is %s %s, want %s %s", e.Kind, e.APIVersion, kindHashedRekord, versionHashedRekord)
	case hr.Data.Algorithm != hashSHA512:
		return nil, fmt.Errorf("entry digest algorithm %q, want %s", hr.Data.Algorithm, hashSHA512)
	case hr.Signature.Verifier.KeyDetails != keyDetailsEd25519ph || hr.Signature.Verifier.PublicKey == nil:
		return nil, fmt.Errorf("entry signature is %q, want %s with a public key", hr.Signature.Verifier.KeyDetails, keyDetailsEd25519ph)
	}
	digest := sha512.Sum512(signedCheckpoint)
	if !bytes.Equal(hr.Data.Digest, digest[:]) {
		return nil, errors.New("entry digest is not the SHA-512 of this checkpoint")
	}
	k, err := x509.ParsePKIXPublicKey(hr.Signature.Verifier.PublicKey.RawBytes)
	if err != nil {
		return nil, fmt.Errorf("entry public key: %w", err)
	}
	key, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("entry public key is %T, want Ed25519", k)
	}
	if err := ed25519.VerifyWithOptions(key, digest[:], hr.Signature.Content, &ed25519.Options{Hash: crypto.SHA512}); err != nil {
		return nil, fmt.Errorf("entry signature: %w", err)
	}
	return key, nil
}

// checkInclusion checks step 4 of Verify against the (verified) Rekor checkpoint cp.
func checkInclusion(tle *transparencyLogEntry, cp tlog.Checkpoint) error {
	ip := tle.InclusionProof
	switch {
	case ip.LogIndex != tle.LogIndex:
		return fmt.Errorf("inclusion proof is for index %d, the entry has %d", ip.LogIndex, tle.LogIndex)
	case uint64(ip.TreeSize) != cp.Size:
		return fmt.Errorf("inclusion proof is for size %d, the checkpoint has %d", ip.TreeSize, cp.Size)
	case !bytes.Equal(ip.RootHash, cp.Root[:]):
		return errors.New("inclusion proof names another root than the checkpoint")
	}
	path := make([]tlog.Hash, len(ip.Hashes))
	for i, h := range ip.Hashes {
		if len(h) != tlog.HashSize {
			return fmt.Errorf("inclusion proof hash %d has %d bytes", i, len(h))
		}
		copy(path[i][:], h)
	}
	if err := tlog.VerifyInclusion(tlog.LeafHash(tle.CanonicalizedBody), uint64(tle.LogIndex), cp.Size, path, cp.Root); err != nil {
		return fmt.Errorf("inclusion proof: %w", err)
	}
	return nil
}

// openLogCheckpoint verifies Rekor's signed checkpoint (step 3 of Verify).
func openLogCheckpoint(envelope string, trust Trust) (tlog.Checkpoint, error) {
	origin := trust.Origin
	if origin == "" {
		origin, _, _ = strings.Cut(envelope, "\n")
	}
	v, err := logVerifier(trust.LogKey, origin)
	if err != nil {
		return tlog.Checkpoint{}, err
	}
	n, err := note.Open([]byte(envelope), note.VerifierList(v))
	if err != nil {
		return tlog.Checkpoint{}, fmt.Errorf("rekor checkpoint: %w", err)
	}
	cp, err := tlog.ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return tlog.Checkpoint{}, fmt.Errorf("rekor checkpoint: %w", err)
	}
	if cp.Origin != origin {
		return tlog.Checkpoint{}, fmt.Errorf("rekor checkpoint origin %q, want %q", cp.Origin, origin)
	}
	return cp, nil
}

// noteText is the text of a signed note (up to its blank line), unverified.
func noteText(envelope string) []byte {
	text, _, _ := strings.Cut(envelope, "\n\n")
	return []byte(text + "\n")
}

// logVerifier is the signed-note verifier of a Rekor checkpoint key, as rekor-tiles
// signs (its pkg/note): Ed25519 is the standard note algorithm; ECDSA signs the
// note text's hash (SHA-256, -384 or -512 by curve) in ASN.1, under the key id
// SHA-256(PKIX key)[:4].
func logVerifier(key crypto.PublicKey, origin string) (note.Verifier, error) {
	switch k := key.(type) {
	case ed25519.PublicKey:
		vkey, err := note.NewEd25519VerifierKey(origin, k)
		if err != nil {
			return nil, fmt.Errorf("rekor key: %w", err)
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("rekor key: %w", err)
		}
		return v, nil
	case *ecdsa.PublicKey:
		var h crypto.Hash
		switch k.Curve {
		case elliptic.P256():
			h = crypto.SHA256
		case elliptic.P384():
			h = crypto.SHA384
		case elliptic.P521():
			h = crypto.SHA512
		default:
			return nil, errors.New("rekor key: unsupported ECDSA curve")
		}
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			return nil, fmt.Errorf("rekor key: %w", err)
		}
		id := sha256.Sum256(der)
		return &ecdsaVerifier{name: origin, hash: binary.BigEndian.Uint32(id[:4]), key: k, h: h}, nil
	default:
		return nil, fmt.Errorf("rekor key: %T, want Ed25519 or ECDSA", key)
	}
}

// ecdsaVerifier is a note.Verifier for an ECDSA Rekor key.
type ecdsaVerifier struct {
	name string
	hash uint32
	key  *ecdsa.PublicKey
	h    crypto.Hash
}

func (v *ecdsaVerifier) Name() string    { return v.name }
func (v *ecdsaVerifier) KeyHash() uint32 { return v.hash }
func (v *ecdsaVerifier) Verify(msg, sig []byte) bool {
	h := v.h.New()
	h.Write(msg)
	return ecdsa.VerifyASN1(v.key, h.Sum(nil), sig)
}
