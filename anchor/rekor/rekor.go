// Package rekor anchors the signed tree_heads checkpoint in Sigstore's Rekor v2
// transparency log (rekor-tiles): Publisher submits a hashedrekord entry (the SHA-512
// of the whole signed note, signed with Ed25519ph by the service key, as Rekor
// refuses pure Ed25519 for hashed data) and keeps the TransparencyLogEntry Rekor
// returns: the entry body, its inclusion proof and Rekor's signed checkpoint. Verify
// checks all of it offline against Rekor's public key.
//
// The wire formats are Rekor v2's protobuf JSON (protojson), written and read here by
// hand with encoding/json: the rekor-tiles client module would pull its server's
// dependency graph into this module, and Verify must stay small enough for the
// offline verifier. The proof document is described in docs/anchoring-external.md.
// The package satisfies package anchor's Publisher interface without importing it.
package rekor

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/anchor/internal/peerhttp"
	"github.com/sealtrail/sealtrail/tlog"
)

// AnchorType is the anchorType of the anchors this package produces.
const AnchorType = "rekor"

// entriesPath is Rekor v2's endpoint for new entries, under the log's base URL.
const entriesPath = "/api/v2/log/entries"

// maxResponse bounds what Publish reads from Rekor: an entry with its proof and
// checkpoint is a few kilobytes.
const maxResponse = 1 << 20

var (
	// ErrRekor wraps every failure of the Rekor log itself: unreachable, an HTTP
	// error, a refused entry, or a response that is not an inclusion of what was sent.
	ErrRekor = errors.New("rekor")
	// ErrDuplicate (with ErrRekor) is Rekor's answer to an entry it already holds: the
	// same checkpoint was published before (Ed25519ph signatures are deterministic).
	// Rekor v2 returns no proof then; the earlier Publish's proof is the anchor.
	ErrDuplicate = errors.New("entry already in the log")
)

// Publisher submits signed checkpoints to one Rekor v2 log. It is safe for concurrent
// use; each Publish is one HTTP request, which Rekor answers once the entry is in a
// published checkpoint (about its --checkpoint-interval).
type Publisher struct {
	url    string
	key    ed25519.PrivateKey
	pkix   []byte
	client *http.Client
}

// New returns a Publisher for the Rekor v2 log at baseURL (such as
// https://log2025-1.rekor.sigstore.dev) that signs entries with the service key and
// talks through client (http.DefaultClient when nil; give it a timeout of some
// seconds, as Rekor answers after its next checkpoint).
func New(baseURL string, key ed25519.PrivateKey, client *http.Client) (*Publisher, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("rekor: URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rekor: URL %q: want an http or https URL", baseURL)
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("rekor: service key: %d bytes, want an Ed25519 private key", len(key))
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("rekor: service key: %w", err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &Publisher{url: strings.TrimSuffix(u.String(), "/") + entriesPath, key: key, pkix: der, client: client}, nil
}

// Type returns "rekor".
func (p *Publisher) Type() string { return AnchorType }

// Proof is the anchorProof of a rekor anchor.
type Proof struct {
	// TransparencyLogEntry is the entry exactly as Rekor returned it: Sigstore's
	// dev.sigstore.rekor.v1.TransparencyLogEntry in protobuf JSON, with the
	// canonicalized entry body, the inclusion proof and Rekor's signed checkpoint.
	TransparencyLogEntry json.RawMessage `json:"transparencyLogEntry"`
}

// Publish submits signedCheckpoint, which the service key must have signed, as a
// hashedrekord entry and returns "<rekor origin>/<log index>" as ref, the Proof, and
// a zero time (Rekor v2 attests no time). It checks Rekor's answer holds this entry
// and an inclusion proof to the root it names, but not Rekor's checkpoint signature,
// which Verify checks with the Rekor key the verifier trusts.
func (p *Publisher) Publish(ctx context.Context, signedCheckpoint []byte) (string, json.RawMessage, time.Time, error) {
	origin, _, _ := strings.Cut(string(signedCheckpoint), "\n")
	if _, err := tlog.OpenCheckpoint(p.key.Public().(ed25519.PublicKey), origin, signedCheckpoint); err != nil {
		return "", nil, time.Time{}, fmt.Errorf("rekor: publish: not a checkpoint signed by the service key: %w", err)
	}
	digest := sha512.Sum512(signedCheckpoint)
	sig, err := p.key.Sign(nil, digest[:], &ed25519.Options{Hash: crypto.SHA512})
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("rekor: sign: %w", err)
	}
	req, err := json.Marshal(createEntryRequest{HashedRekordRequestV002: &hashedRekordRequest{
		Digest:    digest[:],
		Signature: entrySignature{Content: sig, Verifier: entryVerifier{PublicKey: &rawKey{RawBytes: p.pkix}, KeyDetails: keyDetailsEd25519ph}},
	}})
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("rekor: encode request: %w", err)
	}
	raw, err := p.post(ctx, req)
	if err != nil {
		return "", nil, time.Time{}, err
	}
	tle, err := parseEntry(raw)
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: response from %s: %w", ErrRekor, p.url, err)
	}
	if _, err := checkBody(tle, signedCheckpoint); err != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: %s logged another entry than the one sent: %w", ErrRekor, p.url, err)
	}
	cp, err := tlog.ParseCheckpoint(noteText(tle.InclusionProof.Checkpoint.Envelope))
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: response from %s: checkpoint: %w", ErrRekor, p.url, err)
	}
	if err := checkInclusion(tle, cp); err != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: response from %s: %w", ErrRekor, p.url, err)
	}
	proof, err := json.Marshal(Proof{TransparencyLogEntry: raw})
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("rekor: encode proof: %w", err)
	}
	return cp.Origin + "/" + strconv.FormatInt(int64(tle.LogIndex), 10), proof, time.Time{}, nil
}

// post sends the entry and returns Rekor's response body.
func (p *Publisher) post(ctx context.Context, body []byte) (json.RawMessage, error) {
	status, b, err := peerhttp.Post(ctx, p.client, p.url, "application/json", "application/json", body, maxResponse)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRekor, err)
	}
	switch status {
	case http.StatusCreated:
		if !json.Valid(b) {
			return nil, fmt.Errorf("%w: response from %s is not JSON: %s", ErrRekor, p.url, peerhttp.Snippet(b))
		}
		return b, nil
	case http.StatusConflict:
		return nil, fmt.Errorf("%w: %s: %w: %s", ErrRekor, p.url, ErrDuplicate, errorMessage(b))
	default:
		return nil, fmt.Errorf("%w: %s: HTTP %d: %s", ErrRekor, p.url, status, errorMessage(b))
	}
}

// errorMessage is the message of a gRPC-gateway error body ({"code":..,"message":..})
// or the start of any other body.
func errorMessage(b []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		return peerhttp.Snippet([]byte(e.Message))
	}
	return peerhttp.Snippet(b)
}
