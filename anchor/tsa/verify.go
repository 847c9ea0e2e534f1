package tsa

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/digitorus/pkcs7"
	"github.com/digitorus/timestamp"
)

// Trust is what a verifier trusts about a TSA: its certificate chain.
type Trust struct {
	// Roots are the trust anchors: the self-signed certificates of the chain file (its
	// last certificate when none is self-signed).
	Roots []*x509.Certificate
	// Intermediates are the chain file's other certificates (the TSA's signing
	// certificate among them); they help build a path to a root but anchor nothing.
	Intermediates []*x509.Certificate
}

// ErrVerify wraps every reason Verify rejects a proof: the proof, token or chain does
// not show that the TSA timestamped this checkpoint. Malformed input is wrapped too.
var ErrVerify = errors.New("rfc3161 anchor does not verify")

// LoadTrust reads a PEM certificate chain file (the --tsa-cert flag), such as the one
// sigstore timestamp-authority serves at /api/v1/timestamp/certchain.
func LoadTrust(path string) (Trust, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Trust{}, fmt.Errorf("tsa: trust: %w", err)
	}
	tr, err := ParseTrust(b)
	if err != nil {
		return Trust{}, fmt.Errorf("tsa: trust %s: %w", path, err)
	}
	return tr, nil
}

// ParseTrust parses a PEM certificate chain: only CERTIFICATE blocks, at least one.
func ParseTrust(pemChain []byte) (Trust, error) {
	var certs []*x509.Certificate
	rest := pemChain
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return Trust{}, fmt.Errorf("PEM block %q, want CERTIFICATE", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return Trust{}, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return Trust{}, errors.New("trailing data after the PEM certificates")
	}
	if len(certs) == 0 {
		return Trust{}, errors.New("no PEM certificate")
	}
	var tr Trust
	for _, c := range certs {
		if bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignatureFrom(c) == nil {
			tr.Roots = append(tr.Roots, c)
		} else {
			tr.Intermediates = append(tr.Intermediates, c)
		}
	}
	if len(tr.Roots) == 0 {
		last := len(tr.Intermediates) - 1
		tr.Roots, tr.Intermediates = tr.Intermediates[last:], tr.Intermediates[:last]
	}
	return tr, nil
}

// Verify checks an rfc3161 anchorProof offline and returns the attested genTime:
//
//  1. the proof is {"token": base64} and the token a CMS SignedData over a TSTInfo;
//  2. the TSTInfo's message imprint is the hash of signedCheckpoint (SHA-256, or
//     SHA-384/512 if the TSA chose them; nothing weaker);
//  3. the SignedData's signature verifies under the signer's certificate, which
//     chains to a root of trust (through the chain file's certificates or the
//     token's), is valid at genTime, and has the timeStamping extended key usage.
func Verify(signedCheckpoint []byte, proof json.RawMessage, trust Trust) (time.Time, error) {
	if len(trust.Roots) == 0 {
		return time.Time{}, fmt.Errorf("%w: no trusted TSA certificate", ErrVerify)
	}
	var p Proof
	dec := json.NewDecoder(bytes.NewReader(proof))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return time.Time{}, fmt.Errorf("%w: proof: %w", ErrVerify, err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return time.Time{}, fmt.Errorf("%w: proof: data after the JSON object", ErrVerify)
	}
	if len(p.Token) == 0 {
		return time.Time{}, fmt.Errorf("%w: proof has no token", ErrVerify)
	}
	var at time.Time
	err := safely(func() error {
		var err error
		at, err = verifyToken(signedCheckpoint, p.Token, trust)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrVerify, err)
	}
	return at, nil
}

// verifyToken checks the token (steps 2 and 3 of Verify) and returns its genTime.
func verifyToken(signedCheckpoint, token []byte, trust Trust) (time.Time, error) {
	// timestamp.Parse also checks the signature against certificates embedded in the
	// token, without a chain; the chain is checked below.
	ts, err := timestamp.Parse(token)
	if err != nil {
		return time.Time{}, fmt.Errorf("token: %w", err)
	}
	switch ts.HashAlgorithm {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default:
		return time.Time{}, fmt.Errorf("token imprint uses %v, want SHA-256 or stronger", ts.HashAlgorithm)
	}
	h := ts.HashAlgorithm.New()
	h.Write(signedCheckpoint)
	if !bytes.Equal(h.Sum(nil), ts.HashedMessage) {
		return time.Time{}, fmt.Errorf("token imprint is not the %v of this checkpoint", ts.HashAlgorithm)
	}
	p7, err := pkcs7.Parse(token)
	if err != nil {
		return time.Time{}, fmt.Errorf("token: %w", err)
	}
	// The signer's certificate may be in the token or only in the chain file.
	p7.Certificates = append(p7.Certificates, trust.Intermediates...)
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range trust.Roots {
		roots.AddCert(c)
	}
	for _, c := range p7.Certificates {
		inter.AddCert(c)
	}
	if err := p7.VerifyWithOpts(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   ts.Time,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping},
	}); err != nil {
		return time.Time{}, fmt.Errorf("token signature or certificate chain: %w", err)
	}
	return ts.Time.UTC(), nil
}

// safely runs f, turning a panic of the third-party DER parsers on hostile input into
// an error.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed token (%v)", r)
		}
	}()
	return f()
}
