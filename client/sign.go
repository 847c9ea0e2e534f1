package client

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// signedEvent is a signed ingest body and what went into it.
type signedEvent struct {
	ID          string
	Nonce       tlog.Nonce
	Payload     []byte    // RFC 8785 payload, exactly what the commitment covers
	PayloadHash tlog.Hash // the commitment
	Signature   string
	Body        []byte // payload members plus id, nonce, signingKeyId, signature
}

// signEvent builds the signed ingest body of in (spec, "Commitment and signature
// construction"): mint the id and a 32-byte nonce, set the status explicitly, take the
// RFC 8785 form of the payload, commit to it with the nonce and sign the commitment.
// Every step is the tlog function the service and the offline verifier use, and the
// body carries the canonical payload bytes themselves, so the service re-derives the
// same commitment from what it persists.
func signEvent(priv ed25519.PrivateKey, keyID string, in EventInput, now time.Time) (*signedEvent, error) {
	if in.Status == "" {
		// The service adds nothing to a signed payload, so the default status must be
		// part of what is signed.
		in.Status = StatusSuccess
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("sealtrail client: encode event: %w", err)
	}
	id, err := tlog.NewEventID(now)
	if err != nil {
		return nil, fmt.Errorf("sealtrail client: %w", err)
	}
	nonce, err := tlog.NewNonce()
	if err != nil {
		return nil, fmt.Errorf("sealtrail client: %w", err)
	}
	payload, commitment, err := tlog.CommitPayload(nonce, raw)
	if err != nil {
		return nil, fmt.Errorf("sealtrail client: event cannot be signed: %w", err)
	}
	sig := tlog.SignEvent(priv, id, commitment)
	transport, err := json.Marshal(struct {
		ID           string `json:"id"`
		Nonce        string `json:"nonce"`
		SigningKeyID string `json:"signingKeyId"`
		Signature    string `json:"signature"`
	}{id, nonce.Hex(), keyID, sig})
	if err != nil {
		return nil, fmt.Errorf("sealtrail client: encode event: %w", err)
	}
	// payload is a non-empty JCS object ({"action":...,"actor":...}); splice the
	// transport members into it.
	body := make([]byte, 0, len(payload)+len(transport))
	body = append(body, payload[:len(payload)-1]...)
	body = append(body, ',')
	body = append(body, transport[1:]...)
	return &signedEvent{ID: id, Nonce: nonce, Payload: payload, PayloadHash: commitment, Signature: sig, Body: body}, nil
}
