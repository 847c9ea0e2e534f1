package rekor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The JSON below is protojson, the protobuf JSON mapping Rekor v2 speaks: bytes are
// base64 (encoding/json's []byte), int64 are decimal strings, and members with their
// zero value are left out (so a log index 0 has no logIndex member).

// keyDetailsEd25519ph names the entry signature's algorithm (Sigstore's
// PublicKeyDetails), and hashSHA512 the digest algorithm Rekor derives from it.
const (
	keyDetailsEd25519ph = "PKIX_ED25519_PH"
	hashSHA512          = "SHA2_512"
	kindHashedRekord    = "hashedrekord"
	versionHashedRekord = "0.0.2"
)

// createEntryRequest is dev.sigstore.rekor.v2.CreateEntryRequest with its hashedrekord
// member.
type createEntryRequest struct {
	HashedRekordRequestV002 *hashedRekordRequest `json:"hashedRekordRequestV002"`
}

type hashedRekordRequest struct {
	Digest    []byte         `json:"digest"`
	Signature entrySignature `json:"signature"`
}

type entrySignature struct {
	Content  []byte        `json:"content"`
	Verifier entryVerifier `json:"verifier"`
}

type entryVerifier struct {
	PublicKey  *rawKey `json:"publicKey,omitempty"`
	KeyDetails string  `json:"keyDetails"`
}

type rawKey struct {
	RawBytes []byte `json:"rawBytes"`
}

// entryBody is the logged entry (dev.sigstore.rekor.v2.Entry), whose RFC 8785 form is
// the leaf Rekor hashes into its tree.
type entryBody struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Spec       struct {
		HashedRekordV002 *struct {
			Data struct {
				Algorithm string `json:"algorithm"`
				Digest    []byte `json:"digest"`
			} `json:"data"`
			Signature entrySignature `json:"signature"`
		} `json:"hashedRekordV002"`
	} `json:"spec"`
}

// transparencyLogEntry is the part of dev.sigstore.rekor.v1.TransparencyLogEntry that
// Verify reads; other members are kept in the proof but not read.
type transparencyLogEntry struct {
	LogIndex    int64String `json:"logIndex"`
	KindVersion struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
	} `json:"kindVersion"`
	InclusionProof struct {
		LogIndex   int64String `json:"logIndex"`
		RootHash   []byte      `json:"rootHash"`
		TreeSize   int64String `json:"treeSize"`
		Hashes     [][]byte    `json:"hashes"`
		Checkpoint struct {
			Envelope string `json:"envelope"`
		} `json:"checkpoint"`
	} `json:"inclusionProof"`
	CanonicalizedBody []byte `json:"canonicalizedBody"`
}

// int64String is a protojson int64: a decimal string (a number is accepted too).
type int64String int64

func (n *int64String) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("int64 %s: want a non-negative decimal", b)
	}
	*n = int64String(v)
	return nil
}

// parseEntry decodes a TransparencyLogEntry and checks that the members Verify needs
// are there.
func parseEntry(raw []byte) (*transparencyLogEntry, error) {
	var e transparencyLogEntry
	if err := decodeOne(raw, &e, false); err != nil {
		return nil, fmt.Errorf("transparency log entry: %w", err)
	}
	switch {
	case e.KindVersion.Kind != kindHashedRekord || e.KindVersion.Version != versionHashedRekord:
		return nil, fmt.Errorf("entry kind %q version %q, want %s %s", e.KindVersion.Kind, e.KindVersion.Version, kindHashedRekord, versionHashedRekord)
	case len(e.CanonicalizedBody) == 0:
		return nil, errors.New("entry has no canonicalizedBody")
	case e.InclusionProof.Checkpoint.Envelope == "":
		return nil, errors.New("entry has no inclusion proof checkpoint")
	}
	return &e, nil
}

// decodeOne decodes exactly one JSON value into v, rejecting unknown members when
// strict.
func decodeOne(raw []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
