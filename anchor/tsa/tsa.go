// Package tsa anchors the signed tree_heads checkpoint in time with an RFC 3161
// time-stamping authority: Publisher asks the TSA to timestamp the SHA-256 of the whole
// signed note, and Verify checks the returned token offline against the TSA's
// certificate chain, giving the genTime that becomes the anchor's anchoredAt.
//
// The proof document (docs/anchoring-external.md) is {"token": base64 DER}, the
// TimeStampToken exactly as the TSA signed it. The package satisfies package anchor's
// Publisher interface without importing it.
package tsa

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"time"

	"github.com/digitorus/timestamp"

	"github.com/sealtrail/sealtrail/anchor/internal/peerhttp"
)

// AnchorType is the anchorType of the anchors this package produces.
const AnchorType = "rfc3161"

// maxResponse bounds what Publish reads from the TSA: a token with a certificate
// chain is a few kilobytes.
const maxResponse = 1 << 20

// ErrTSA wraps every failure of the time-stamping authority itself: unreachable, an
// HTTP error, a rejected request, or a response that is not a timestamp of what was
// asked. Publish's other errors are the caller's (an empty checkpoint, a cancelled ctx).
var ErrTSA = errors.New("time-stamping authority")

// Publisher timestamps signed checkpoints at one RFC 3161 TSA. It is safe for
// concurrent use; each Publish is one HTTP request.
type Publisher struct {
	url    string
	client *http.Client
}

// New returns a Publisher that POSTs RFC 3161 requests to endpoint, the TSA's full
// timestamp URL (for sigstore timestamp-authority, <base>/api/v1/timestamp), with
// client (http.DefaultClient when nil; give it a timeout).
func New(endpoint string, client *http.Client) (*Publisher, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("tsa: endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tsa: endpoint %q: want an http or https URL", endpoint)
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &Publisher{url: u.String(), client: client}, nil
}

// Type returns "rfc3161".
func (p *Publisher) Type() string { return AnchorType }

// Proof is the anchorProof of an rfc3161 anchor.
type Proof struct {
	// Token is the DER TimeStampToken (a CMS ContentInfo with SignedData over TSTInfo),
	// base64 (standard alphabet, padded) in JSON.
	Token []byte `json:"token"`
}

// Publish asks the TSA for a timestamp of SHA-256(signedCheckpoint), with a fresh
// nonce and the signing certificate included. It checks that the response is a
// signed timestamp of exactly that digest and nonce and returns the token's serial
// number (decimal) as ref, the Proof, and the token's genTime. It does not check the
// TSA's certificate chain (Verify does, against the chain the verifier trusts).
func (p *Publisher) Publish(ctx context.Context, signedCheckpoint []byte) (string, json.RawMessage, time.Time, error) {
	if len(signedCheckpoint) == 0 {
		return "", nil, time.Time{}, errors.New("tsa: publish: empty checkpoint")
	}
	nonce, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("tsa: nonce: %w", err)
	}
	digest := sha256.Sum256(signedCheckpoint)
	tsq, err := (&timestamp.Request{
		HashAlgorithm: crypto.SHA256,
		HashedMessage: digest[:],
		Certificates:  true,
		Nonce:         nonce,
	}).Marshal()
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("tsa: encode request: %w", err)
	}
	tsr, err := p.post(ctx, tsq)
	if err != nil {
		return "", nil, time.Time{}, err
	}
	ts, err := timestamp.ParseResponse(tsr)
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: response from %s: %w", ErrTSA, p.url, err)
	}
	if ts.HashAlgorithm != crypto.SHA256 || !bytes.Equal(ts.HashedMessage, digest[:]) {
		return "", nil, time.Time{}, fmt.Errorf("%w: %s timestamped another digest than the checkpoint's", ErrTSA, p.url)
	}
	if ts.Nonce == nil || ts.Nonce.Cmp(nonce) != 0 {
		return "", nil, time.Time{}, fmt.Errorf("%w: %s answered with another nonce", ErrTSA, p.url)
	}
	if len(ts.Certificates) == 0 {
		return "", nil, time.Time{}, fmt.Errorf("%w: %s returned a token without its signing certificate", ErrTSA, p.url)
	}
	if ts.SerialNumber == nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: %s returned a token without a serial number", ErrTSA, p.url)
	}
	proof, err := json.Marshal(Proof{Token: ts.RawToken})
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("tsa: encode proof: %w", err)
	}
	return ts.SerialNumber.String(), proof, ts.Time.UTC(), nil
}

// post sends one DER request and returns the DER response body.
func (p *Publisher) post(ctx context.Context, tsq []byte) ([]byte, error) {
	status, body, err := peerhttp.Post(ctx, p.client, p.url, "application/timestamp-query", "application/timestamp-reply", tsq, maxResponse)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTSA, err)
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return nil, fmt.Errorf("%w: %s: HTTP %d: %s", ErrTSA, p.url, status, peerhttp.Snippet(body))
	}
	return body, nil
}
