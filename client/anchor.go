package client

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// ErrNotAnchored is returned by VerifyAnchor for a head whose anchor is not published
// yet (anchorProof is null).
var ErrNotAnchored = errors.New("sealtrail: head not anchored yet")

// VerifiedAnchor is an attested head that verified against the client's pins.
type VerifiedAnchor struct {
	// Head is the attested stream head, Proof its anchor proof and TreeHeads the
	// tree_heads checkpoint it is in.
	Head      tlog.STH
	Proof     tlog.AnchorProof
	TreeHeads tlog.Checkpoint
	// AnchoredAt is the latest time a verified witness cosignature attests (zero when
	// no witness key is configured).
	AnchoredAt time.Time
	// Pinned is the pinned head the anchored one was checked against: the same tree,
	// or a consistency proof from the anchored head to it verified.
	Pinned tlog.STH
}

// VerifyAnchor checks an attested head from GetAnchors against the client's own trust
// (docs/anchoring.md):
//
//  1. every link of the anchor: the head's signature under the trusted service key,
//     its leaf's inclusion in the tree_heads checkpoint, the checkpoint's signature,
//     and, when Config.WitnessKeys is set, at least one cosignature of a trusted
//     witness; a broken link is ErrProofFailed;
//  2. a consistency check (which pins the current head), then the anchored head
//     against that pin: the same root at the same size, or a verified consistency
//     proof from the anchored size to the pinned size. A service whose pinned history
//     contradicts what it anchored is inconsistent_tree (tree_shrunk when its tree is
//     smaller than the anchored one), which poisons the client.
func (c *Client) VerifyAnchor(ctx context.Context, stream Stream, h *AttestedHead) (*VerifiedAnchor, error) {
	s, pub, _, err := c.beginVerified(ctx, stream)
	if err != nil {
		return nil, err
	}
	va, err := c.openAnchor(s, pub, h)
	if err != nil {
		return nil, err
	}
	pinned, err := c.CheckConsistency(ctx, s)
	if err != nil {
		return nil, err
	}
	terr, err := c.againstPin(ctx, s, pinned, &va.Head)
	if terr != nil {
		return nil, c.tamper(terr)
	}
	if err != nil {
		return nil, err
	}
	va.Pinned = *pinned
	return va, nil
}

// openAnchor checks the links of an attested head of s under the service key pub.
func (c *Client) openAnchor(s Stream, pub ed25519.PublicKey, h *AttestedHead) (*VerifiedAnchor, error) {
	if len(h.AnchorProof) == 0 || string(h.AnchorProof) == "null" {
		return nil, ErrNotAnchored
	}
	va := &VerifiedAnchor{}
	if err := json.Unmarshal(h.AnchorProof, &va.Proof); err != nil {
		return nil, fmt.Errorf("%w: anchorProof: %w", ErrUnexpectedResponse, err)
	}
	va.Head = tlog.STH{V: tlog.TreeHeadVersion, ProjectID: va.Proof.ProjectID, Stream: s.SignedName(), TreeSize: h.TreeSize,
		RootHash: h.RootHash, Timestamp: h.Timestamp, Signature: h.Signature}
	if c.projectID != "" && va.Proof.ProjectID != c.projectID {
		return nil, fmt.Errorf("%w: anchor of project %s, the client is configured for %s", ErrProofFailed, va.Proof.ProjectID, c.projectID)
	}
	cp, err := tlog.CheckTreeHeadInclusion(&va.Head, &va.Proof, pub)
	if err != nil {
		return nil, fmt.Errorf("%w: anchored head of size %d: %w", ErrProofFailed, h.TreeSize, err)
	}
	va.TreeHeads = cp
	if len(c.witnessKeys) > 0 {
		for _, x := range va.Proof.External {
			if x.AnchorType != "witness" {
				continue
			}
			if at, err := tlog.VerifyWitness([]byte(va.Proof.Checkpoint), x.Proof, c.witnessKeys); err == nil {
				va.AnchoredAt = at
				break
			}
		}
		if va.AnchoredAt.IsZero() {
			return nil, fmt.Errorf("%w: anchored head of size %d: no cosignature of a trusted witness", ErrProofFailed, h.TreeSize)
		}
	}
	return va, nil
}

// againstPin checks that the anchored head and the pinned one are one history.
func (c *Client) againstPin(ctx context.Context, s Stream, pinned, anchored *tlog.STH) (*TamperError, error) {
	tamper := func(reason TamperReason, format string, args ...any) (*TamperError, error) {
		return &TamperError{Stream: s, PinnedSTH: pinned, CurrentSTH: anchored, Reason: reason,
			Detail: fmt.Sprintf(format, args...)}, nil
	}
	aRoot, _ := tlog.ParseHash(anchored.RootHash) // checked by CheckTreeHeadInclusion
	pRoot, _ := tlog.ParseHash(pinned.RootHash)
	switch {
	case anchored.TreeSize > pinned.TreeSize:
		return tamper(ReasonTreeShrunk, "pinned size %d is smaller than the anchored size %d", pinned.TreeSize, anchored.TreeSize)
	case anchored.TreeSize == pinned.TreeSize:
		if aRoot != pRoot {
			return tamper(ReasonInconsistentTree, "two roots for size %d: anchored %s, pinned %s", pinned.TreeSize, anchored.RootHash, pinned.RootHash)
		}
	case anchored.TreeSize > 0:
		failure, err := c.proveGrowth(ctx, s, anchored, pinned, aRoot, pRoot)
		if err != nil {
			return nil, err
		}
		if failure != "" {
			return tamper(ReasonInconsistentTree, "the pinned head does not extend the anchored one: %s", failure)
		}
	}
	return nil, nil
}

// checkLatestAnchor is the opportunistic anchor check after a consistency check that
// pinned pinned: the newest anchored head of s must be in the pinned history. A
// service without /anchors (404) has nothing to check.
func (c *Client) checkLatestAnchor(ctx context.Context, s Stream, pinned *tlog.STH) (*TamperError, error) {
	var page Anchors
	err := c.doJSON(ctx, http.MethodGet, "/anchors", url.Values{"stream": {string(s)}}, nil, &page)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pub, err := tlog.ParsePublicKey(c.pinnedKeyOr(ctx, s))
	if err != nil {
		return nil, err
	}
	for i := range page.Heads {
		h := &page.Heads[i]
		if len(h.AnchorProof) == 0 || string(h.AnchorProof) == "null" {
			continue
		}
		va, err := c.openAnchor(s, pub, h)
		if err != nil {
			return nil, err
		}
		return c.againstPin(ctx, s, pinned, &va.Head)
	}
	return nil, nil
}

// pinnedKeyOr returns the trusted service key of s in hex: the configured one or the
// pinned one ("" if neither, which ParsePublicKey refuses).
func (c *Client) pinnedKeyOr(ctx context.Context, s Stream) string {
	if c.serviceKey != nil {
		return fmt.Sprintf("%x", []byte(c.serviceKey))
	}
	pin, err := c.store.Load(ctx, PinKey(c.baseURL, s))
	if err != nil || pin == nil {
		return ""
	}
	return pin.ServicePublicKey
}
