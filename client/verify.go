package client

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// TamperReason says which check a served tree head failed.
type TamperReason string

// Tamper reasons (spec, "Verification rules a client applies").
const (
	// ReasonInconsistentTree: the service did not prove that the served head extends
	// the pinned one (the proof failed, was malformed, was for other sizes or another
	// stream, or the sizes were refused with 400), or a head of the pinned size has a
	// different root.
	ReasonInconsistentTree TamperReason = "inconsistent_tree"
	// ReasonTreeShrunk: the served tree is smaller than the pinned one.
	ReasonTreeShrunk TamperReason = "tree_shrunk"
	// ReasonBadSTHSignature: the served head does not verify under the expected key as
	// a head of this project and stream (a valid signature on another log's head
	// counts).
	ReasonBadSTHSignature TamperReason = "bad_sth_signature"
	// ReasonServiceKeyChanged: the service public key changed mid-history.
	ReasonServiceKeyChanged TamperReason = "service_key_changed"
)

// ErrTampered matches every *TamperError with errors.Is.
var ErrTampered = errors.New("sealtrail: tamper detected")

// TamperError is proof that the service served something its own history rules out.
// The first one poisons the client: every later call returns the same *TamperError.
type TamperError struct {
	// Stream is the stream whose check failed.
	Stream Stream
	// PinnedSTH is the head pinned before the check (nil on first use).
	PinnedSTH *tlog.STH
	// CurrentSTH is the head the service served (nil when a verify receipt, not a
	// head, revealed a changed service key).
	CurrentSTH *tlog.STH
	// Reason says which check failed; Detail says how.
	Reason TamperReason
	Detail string
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("sealtrail: tamper detected on stream %s: %s: %s", e.Stream, e.Reason, e.Detail)
}

// Is makes errors.Is(err, ErrTampered) true.
func (e *TamperError) Is(target error) bool { return target == ErrTampered }

// ErrProofFailed wraps an inclusion proof, an event's rebuilt leaf or a receipt
// signature that does not verify. It does not poison the client: only the four tamper
// reasons do.
var ErrProofFailed = errors.New("sealtrail: verification failed")

// ErrProjectMismatch means the head store holds a pin of another project than the
// configured Config.ProjectID on the base URL: the store is shared between projects.
// Give each project its own store. Nothing is pinned and the client is not poisoned.
var ErrProjectMismatch = errors.New("sealtrail: pinned head belongs to another project")

// tamper records e as the poison unless another tamper error got there first, calls
// OnTamper for the error that won, and returns the poison.
func (c *Client) tamper(e *TamperError) *TamperError {
	if c.poison.CompareAndSwap(nil, e) {
		if c.onTamper != nil {
			c.onTamper(e)
		}
		return e
	}
	return c.poison.Load()
}

func (c *Client) state(s Stream) *streamState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.streams[s]
	if !ok {
		st = &streamState{}
		c.streams[s] = st
	}
	return st
}

// CheckConsistency checks the stream's current head against the pinned one and, when
// it extends it, pins and returns it (spec, "Verification rules a client applies"):
//
//  1. GET /root; the service key must be the configured or pinned one (else
//     service_key_changed; on first use without a configured key it is trusted), and
//     the head's signature must verify under it as a head of this stream and of the
//     configured or pinned project (else bad_sth_signature);
//  2. a smaller tree than the pinned one is tree_shrunk; the same size with another
//     root is inconsistent_tree;
//  3. a larger tree needs GET /proof/consistency from the pinned size to the current
//     size, verified locally; a proof that fails, is malformed or is for other sizes
//     or another stream, and a 400 refusing the sizes, are inconsistent_tree;
//  4. the new head is saved in the head store.
//
// A tamper poisons the client and is returned as *TamperError. Any other failure
// (network, any other HTTP status, a body that is not the documented JSON, the head
// store) pins nothing and is returned as is.
func (c *Client) CheckConsistency(ctx context.Context, stream Stream) (*tlog.STH, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	s, err := stream.normalize()
	if err != nil {
		return nil, err
	}
	sth, terr, err := c.check(ctx, s)
	if terr != nil {
		return nil, c.tamper(terr)
	}
	return sth, err
}

// check runs one consistency check of s under its stream lock. It returns the new head,
// or a tamper, or another error.
func (c *Client) check(ctx context.Context, s Stream) (*tlog.STH, *TamperError, error) {
	st := c.state(s)
	st.check.Lock()
	defer st.check.Unlock()
	if p := c.poison.Load(); p != nil {
		return nil, p, nil
	}
	key := PinKey(c.baseURL, s)
	pin, err := c.store.Load(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("sealtrail: load pinned head: %w", err)
	}
	var pinnedSTH *tlog.STH
	if pin != nil {
		pinnedSTH = &pin.STH
		// The pin was verified when it was stored; re-check it so a corrupted store
		// is an error rather than a false alarm or a silent new trust anchor.
		pk, err := tlog.ParsePublicKey(pin.ServicePublicKey)
		if err != nil {
			return nil, nil, fmt.Errorf("sealtrail: pinned head %s: %w", key, err)
		}
		if err := tlog.VerifySTH(pk, &pin.STH); err != nil {
			return nil, nil, fmt.Errorf("sealtrail: pinned head %s does not verify under its pinned key: %w", key, err)
		}
	}

	root, err := c.getRoot(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	cur := root.STH
	tamper := func(reason TamperReason, format string, args ...any) (*tlog.STH, *TamperError, error) {
		return nil, &TamperError{Stream: s, PinnedSTH: pinnedSTH, CurrentSTH: &cur, Reason: reason,
			Detail: fmt.Sprintf(format, args...)}, nil
	}

	// 1. The key, then the head's signature under it, then whose head it is.
	want, err := c.expect(ctx, s, pin)
	if err != nil {
		return nil, nil, err
	}
	if want.key == "" {
		want.key = root.ServicePublicKey // trust on first use
	}
	// A key other than the trusted one is accepted only when the service's signed key
	// history announces the move from the trusted key to it (docs/key-rotation.md):
	// a pin that moved on from the configured key, then a served key that moves on
	// from the pin.
	if pin != nil && pin.ServicePublicKey != want.key {
		_, refusal, err := c.keyMove(ctx, want.key, pin.ServicePublicKey)
		if err != nil {
			return nil, nil, err
		}
		if refusal != "" {
			return tamper(ReasonServiceKeyChanged, "head pinned under service key %s, configured key is %s: %s", pin.ServicePublicKey, want.key, refusal)
		}
		want.key = pin.ServicePublicKey
	}
	var history *tlog.KeyHistory
	if root.ServicePublicKey != want.key {
		h, refusal, err := c.keyMove(ctx, want.key, root.ServicePublicKey)
		if err != nil {
			return nil, nil, err
		}
		if refusal != "" {
			return tamper(ReasonServiceKeyChanged, "service presents key %s, expected %s: %s", root.ServicePublicKey, want.key, refusal)
		}
		history, want.key = h, root.ServicePublicKey
	}
	pub, err := tlog.ParsePublicKey(want.key)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: GET /root: servicePublicKey: %w", ErrUnexpectedResponse, err)
	}
	if err := tlog.VerifySTH(pub, &cur); err != nil {
		return tamper(ReasonBadSTHSignature, "%v", err)
	}
	if history != nil {
		// A new key signs only heads dated from its introduction on.
		if _, err := tlog.VerifySTHWithHistory(pub, history, &cur); err != nil {
			return tamper(ReasonServiceKeyChanged, "%v", err)
		}
	}
	// The signature covers the project and the stream: a head signed for another log
	// does not verify as a head of this one.
	if cur.Stream != s.SignedName() || (want.project != "" && cur.ProjectID != want.project) {
		project := want.project
		if project == "" {
			project = "(any)"
		}
		return tamper(ReasonBadSTHSignature, "head signed for project %s stream %s, expected project %s stream %s",
			cur.ProjectID, cur.Stream, project, s.SignedName())
	}
	newPin := PinnedHead{STH: cur, ServicePublicKey: want.key}
	if pin == nil {
		if err := c.store.Save(ctx, key, newPin); err != nil {
			return nil, nil, fmt.Errorf("sealtrail: save pinned head: %w", err)
		}
		return &cur, nil, nil
	}

	// 2. Size and, at equal size, root.
	old := pin.STH
	oldRoot, _ := tlog.ParseHash(old.RootHash) // verified by VerifySTH above
	newRoot, _ := tlog.ParseHash(cur.RootHash)
	switch {
	case cur.TreeSize < old.TreeSize:
		return tamper(ReasonTreeShrunk, "served size %d, pinned size %d", cur.TreeSize, old.TreeSize)
	case cur.TreeSize == old.TreeSize && oldRoot != newRoot:
		return tamper(ReasonInconsistentTree, "two roots for size %d: pinned %s, served %s", cur.TreeSize, old.RootHash, cur.RootHash)
	case cur.TreeSize > old.TreeSize && old.TreeSize > 0:
		// 3. The consistency proof, checked with local hash arithmetic.
		failure, err := c.proveGrowth(ctx, s, &old, &cur, oldRoot, newRoot)
		if err != nil {
			return nil, nil, err
		}
		if failure != "" {
			return tamper(ReasonInconsistentTree, "%s", failure)
		}
	}

	// 4. Pin the new head.
	if err := c.store.Save(ctx, key, newPin); err != nil {
		return nil, nil, fmt.Errorf("sealtrail: save pinned head: %w", err)
	}
	return &cur, nil, nil
}

// expected is what a served head must match; "" is trust on first use.
type expected struct {
	key     string // the service public key, hex
	project string
}

// expect works out the service key and the project a head of s must have: the
// configured ones, else those of the pin, else those pinned for the other stream of
// the base URL, so that each is trusted at most once per service. A pin of another
// project than the configured one is ErrProjectMismatch: the store is shared.
func (c *Client) expect(ctx context.Context, s Stream, pin *PinnedHead) (expected, error) {
	want := expected{project: c.projectID}
	if c.serviceKey != nil {
		want.key = hex.EncodeToString(c.serviceKey)
	}
	ref := pin
	if ref == nil {
		other := StreamProjectAudit
		if s == StreamProjectAudit {
			other = StreamEvents
		}
		var err error
		if ref, err = c.store.Load(ctx, PinKey(c.baseURL, other)); err != nil {
			return want, fmt.Errorf("sealtrail: load pinned head: %w", err)
		}
	}
	if ref == nil {
		return want, nil
	}
	if want.project != "" && ref.STH.ProjectID != want.project {
		return want, fmt.Errorf("%w: the head store holds a pin of %s on %s, the client is configured for %s",
			ErrProjectMismatch, ref.STH.ProjectID, c.baseURL, want.project)
	}
	want.project = ref.STH.ProjectID
	if want.key == "" {
		want.key = ref.ServicePublicKey
	}
	return want, nil
}

// proveGrowth fetches the consistency proof from the pinned head old to the served
// head cur and checks it. It describes the failure when the service fails to prove
// that its own two heads are one history (inconsistent_tree), and returns an error
// when the question could not be put (docs/client.md, "Tamper or API error"): a 400
// refuses sizes the service itself signed, so it counts as a failed proof; any other
// status, a transport failure or a body that is not the documented JSON does not.
func (c *Client) proveGrowth(ctx context.Context, s Stream, old, cur *tlog.STH, oldRoot, newRoot tlog.Hash) (string, error) {
	cp, err := c.getConsistencyProof(ctx, ConsistencyProofInput{OldSize: old.TreeSize, NewSize: cur.TreeSize, Stream: s})
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		return fmt.Sprintf("the service refuses to prove size %d to %d, both signed by it: %s", old.TreeSize, cur.TreeSize, ae.Message), nil
	case err != nil:
		return "", err
	case cp.OldSize != old.TreeSize || cp.NewSize != cur.TreeSize || cp.Stream != s.SignedName():
		return fmt.Sprintf("asked for the %s proof %d to %d, got the %q proof %d to %d",
			s.SignedName(), old.TreeSize, cur.TreeSize, cp.Stream, cp.OldSize, cp.NewSize), nil
	}
	path, err := parseHashes(cp.Proof)
	if err != nil {
		return fmt.Sprintf("size %d to %d: %v", old.TreeSize, cur.TreeSize, err), nil
	}
	if err := tlog.VerifyConsistency(old.TreeSize, cur.TreeSize, oldRoot, newRoot, path); err != nil {
		return fmt.Sprintf("size %d to %d: %v", old.TreeSize, cur.TreeSize, err), nil
	}
	return "", nil
}

// maybeCheck starts an opportunistic check of s in the background when auto-verify is
// on, the client is not closed or poisoned, no check of s is in flight and the interval
// has passed since the last attempt. It never blocks on the network.
func (c *Client) maybeCheck(s Stream) {
	if !c.autoVerify || c.poison.Load() != nil {
		return
	}
	now := time.Now()
	c.mu.Lock()
	st, ok := c.streams[s]
	if !ok {
		st = &streamState{}
		c.streams[s] = st
	}
	if c.closed || st.inFlight || (!st.lastAttempt.IsZero() && now.Sub(st.lastAttempt) < c.interval) {
		c.mu.Unlock()
		return
	}
	st.inFlight, st.lastAttempt = true, now
	c.bg.Add(1)
	c.mu.Unlock()

	go func() {
		defer c.bg.Done()
		defer func() {
			c.mu.Lock()
			st.inFlight = false
			c.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(c.bgCtx, backgroundCheckTimeout)
		defer cancel()
		pinned, terr, err := c.check(ctx, s)
		if terr == nil && err == nil {
			// An anchored head the pinned history contradicts is tampering too.
			terr, err = c.checkLatestAnchor(ctx, s, pinned)
		}
		switch {
		case terr != nil:
			c.tamper(terr)
		case err != nil && c.onCheckErr != nil:
			// Swallowed: the next interaction after the interval tries again.
			c.onCheckErr(s, err)
		}
	}()
}

// Verify asks the service to rebuild the stream and returns its signed receipt
// (GET /verify). The receipt's signature is checked under the trusted service key: the
// configured one, or the pinned one (a first consistency check pins it when nothing is
// pinned yet). A receipt under another key is service_key_changed and poisons the
// client; a bad signature is ErrProofFailed. A valid signature on a receipt whose Valid
// is false is not an error: the receipt reports the first break the service found.
func (c *Client) Verify(ctx context.Context, stream Stream) (*tlog.Receipt, error) {
	s, pub, pinned, err := c.beginVerified(ctx, stream)
	if err != nil {
		return nil, err
	}
	var rec tlog.Receipt
	if err := c.doJSON(ctx, http.MethodGet, "/verify", url.Values{"stream": {string(s)}}, nil, &rec); err != nil {
		return nil, err
	}
	if want := hex.EncodeToString(pub); rec.ServicePublicKey != want {
		var pinnedSTH *tlog.STH
		if pinned != nil {
			pinnedSTH = &pinned.STH
		}
		return nil, c.tamper(&TamperError{Stream: s, PinnedSTH: pinnedSTH, Reason: ReasonServiceKeyChanged,
			Detail: fmt.Sprintf("receipt signed by service key %s, expected %s", rec.ServicePublicKey, want)})
	}
	if err := tlog.VerifyReceipt(pub, &rec); err != nil {
		return nil, fmt.Errorf("%w: receipt: %w", ErrProofFailed, err)
	}
	if rec.Stream != s.SignedName() {
		return nil, fmt.Errorf("%w: receipt of stream %q for stream %s", ErrProofFailed, rec.Stream, s)
	}
	return &rec, nil
}

// beginVerified starts a call that checks service signatures: the client must not be
// poisoned, the stream valid, and the trusted service key known (trustedKey).
func (c *Client) beginVerified(ctx context.Context, stream Stream) (Stream, ed25519.PublicKey, *PinnedHead, error) {
	if err := c.Err(); err != nil {
		return "", nil, nil, err
	}
	s, err := stream.normalize()
	if err != nil {
		return "", nil, nil, err
	}
	pub, pin, err := c.trustedKey(ctx, s)
	return s, pub, pin, err
}

// trustedKey returns the key to verify s's signatures under: the configured key, or
// the pinned one, pinning a head first when there is none.
func (c *Client) trustedKey(ctx context.Context, s Stream) (ed25519.PublicKey, *PinnedHead, error) {
	pin, err := c.store.Load(ctx, PinKey(c.baseURL, s))
	if err != nil {
		return nil, nil, fmt.Errorf("sealtrail: load pinned head: %w", err)
	}
	if c.serviceKey != nil && (pin == nil || pin.ServicePublicKey == hex.EncodeToString(c.serviceKey)) {
		return c.serviceKey, pin, nil
	}
	if pin != nil && c.serviceKey != nil {
		// The pin moved on from the configured key: a check accepted an announced
		// rotation (or the store is foreign). Trust it only as far as the history says.
		_, refusal, err := c.keyMove(ctx, hex.EncodeToString(c.serviceKey), pin.ServicePublicKey)
		if err != nil {
			return nil, nil, err
		}
		if refusal != "" {
			return nil, nil, c.tamper(&TamperError{Stream: s, PinnedSTH: &pin.STH, Reason: ReasonServiceKeyChanged, Detail: refusal})
		}
	}
	if pin == nil {
		if _, err := c.CheckConsistency(ctx, s); err != nil {
			return nil, nil, err
		}
		if pin, err = c.store.Load(ctx, PinKey(c.baseURL, s)); err != nil || pin == nil {
			return nil, nil, fmt.Errorf("sealtrail: load pinned head: %w", err)
		}
	}
	pub, err := tlog.ParsePublicKey(pin.ServicePublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sealtrail: pinned service key: %w", err)
	}
	return pub, pin, nil
}

// VerifiedInclusion is an inclusion proof that verified against a pinned head.
type VerifiedInclusion struct {
	Proof InclusionProof
	Head  tlog.STH // the pinned head the proof verified against
}

// VerifyInclusion proves that an event is in the stream: it runs a consistency check
// (which pins the current head), fetches the inclusion proof of the event at the pinned
// size and verifies it locally against the pinned root. A proof that does not verify is
// ErrProofFailed.
func (c *Client) VerifyInclusion(ctx context.Context, stream Stream, eventID string) (*VerifiedInclusion, error) {
	head, err := c.CheckConsistency(ctx, stream)
	if err != nil {
		return nil, err
	}
	if head.TreeSize == 0 {
		return nil, fmt.Errorf("%w: the %s tree is empty", ErrProofFailed, stream)
	}
	p, err := c.GetInclusionProof(ctx, InclusionProofInput{EventID: eventID, TreeSize: head.TreeSize, Stream: stream})
	if err != nil {
		return nil, err
	}
	if err := checkInclusion(p, head); err != nil {
		return nil, err
	}
	return &VerifiedInclusion{Proof: *p, Head: *head}, nil
}

func checkInclusion(p *InclusionProof, head *tlog.STH) error {
	if p.TreeSize != head.TreeSize || p.Stream != head.Stream {
		return fmt.Errorf("%w: proof for %s size %d, asked for %s size %d", ErrProofFailed, p.Stream, p.TreeSize, head.Stream, head.TreeSize)
	}
	leaf, err := tlog.ParseHash(p.LeafHash)
	if err != nil {
		return fmt.Errorf("%w: leafHash: %w", ErrUnexpectedResponse, err)
	}
	path, err := parseHashes(p.Proof)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnexpectedResponse, err)
	}
	root, _ := tlog.ParseHash(head.RootHash)
	if err := tlog.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, path, root); err != nil {
		return fmt.Errorf("%w: leaf %d in tree of size %d: %w", ErrProofFailed, p.LeafIndex, p.TreeSize, err)
	}
	return nil
}

// VerifyEvent checks a stored event from Query end to end: it rebuilds the event's
// leaf from the event itself (and, unless shredded, re-derives its payload commitment
// from its content and nonce), then proves that leaf is in the pinned head, as
// VerifyInclusion does.
func (c *Client) VerifyEvent(ctx context.Context, ev *StoredEvent) (*VerifiedInclusion, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if len(ev.Raw) == 0 {
		return nil, errors.New("sealtrail client: VerifyEvent needs an event decoded from the service (Raw is empty)")
	}
	rec, err := tlog.DecodeExportLine(ev.Raw)
	if err != nil {
		return nil, fmt.Errorf("%w: event %s: %w", ErrProofFailed, ev.ID, err)
	}
	if !rec.Shredded() {
		if got := tlog.Commitment(*rec.Nonce, rec.Payload); got != rec.Leaf.PayloadHash {
			return nil, fmt.Errorf("%w: event %s: content does not re-derive its payloadHash", ErrProofFailed, ev.ID)
		}
	}
	leaf := rec.Leaf.Hash()
	if leaf != rec.LeafHash {
		return nil, fmt.Errorf("%w: event %s: rebuilt leaf hash %s, stored %s", ErrProofFailed, ev.ID, tlog.Hex(leaf), tlog.Hex(rec.LeafHash))
	}
	stream := StreamEvents
	if rec.Leaf.Stream == tlog.StreamProjectAudit {
		stream = StreamProjectAudit
	}
	v, err := c.VerifyInclusion(ctx, stream, ev.ID)
	if err != nil {
		return nil, err
	}
	if v.Proof.LeafIndex != rec.Leaf.Sequence-1 || v.Proof.LeafHash != tlog.Hex(leaf) {
		return nil, fmt.Errorf("%w: event %s: proof is for leaf %d %s, event is leaf %d %s", ErrProofFailed, ev.ID,
			v.Proof.LeafIndex, v.Proof.LeafHash, rec.Leaf.Sequence-1, tlog.Hex(leaf))
	}
	return v, nil
}
