package tlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// PayloadMembers are the event-input members that make up a payload, in the spec's
// order. The transport members id, nonce, signingKeyId and signature are never part of
// the payload.
var PayloadMembers = []string{
	"action", "actor", "status", "target", "risk", "context", "metadata",
	"requestId", "sessionId", "ipAddress", "userAgent",
	"agentId", "model", "toolName", "toolCallId", "approvalId", "policyVersion",
	"inputHash", "outputHash",
}

// IsPayloadMember reports whether name is one of PayloadMembers.
func IsPayloadMember(name string) bool { return slices.Contains(PayloadMembers, name) }

// Record is one event as a rebuild sees it: the leaf rebuilt from stored fields, the
// leaf hash as stored, and the payload with its nonce unless it was shredded.
type Record struct {
	Leaf           Leaf
	LeafHash       Hash   // the stored leaf hash
	Payload        []byte // RFC 8785 payload object; nil when shredded
	Nonce          *Nonce // nil when shredded
	CiphertextHash string // hex hash of the stored ciphertext; informational
}

// Shredded reports whether the record's payload was destroyed by retention.
func (r *Record) Shredded() bool { return r.Nonce == nil }

// ErrExportLine wraps every reason an export line is malformed (as opposed to tampered).
var ErrExportLine = errors.New("malformed export line")

// identityMembers are the export-line members that are not payload members.
var identityMembers = []string{
	"id", "sequence", "timestamp", "projectId", "stream", "leafHash", "payloadHash",
	"payloadNonce", "ciphertextHash", "signingKeyId", "clientSignature",
}

// EncodeStoredEvent renders a record as a stored event: the JCS object of its identity
// members merged with its payload members. It is the shape of /events items and of one
// line of the JSON export (without the trailing newline).
func EncodeStoredEvent(r *Record) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if r.Payload != nil {
		if err := json.Unmarshal(r.Payload, &m); err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		for k := range m {
			if !IsPayloadMember(k) {
				return nil, fmt.Errorf("payload member %q is not an event-input member", k)
			}
		}
	}
	str := func(s string) json.RawMessage { return appendString(nil, s) }
	m["id"] = str(r.Leaf.ID)
	m["sequence"] = strconv.AppendUint(nil, r.Leaf.Sequence, 10)
	m["timestamp"] = str(r.Leaf.Timestamp)
	m["projectId"] = str(r.Leaf.ProjectID)
	m["stream"] = str(r.Leaf.Stream)
	m["leafHash"] = str(Hex(r.LeafHash))
	m["payloadHash"] = str(Hex(r.Leaf.PayloadHash))
	m["payloadNonce"] = json.RawMessage("null")
	if r.Nonce != nil {
		m["payloadNonce"] = str(r.Nonce.Hex())
	}
	m["ciphertextHash"] = json.RawMessage("null")
	if r.CiphertextHash != "" {
		m["ciphertextHash"] = str(r.CiphertextHash)
	}
	m["signingKeyId"], m["clientSignature"] = json.RawMessage("null"), json.RawMessage("null")
	if r.Leaf.Signature != "" {
		m["signingKeyId"], m["clientSignature"] = str(r.Leaf.SigningKeyID), str(r.Leaf.Signature)
	}
	return canonicalJSON(m)
}

// DecodeExportLine parses one line of a JSON export into a Record. It rejects input that
// JCS cannot represent, unknown members, and members of the wrong type, so that the
// payload is rebuilt from the line without guessing.
func DecodeExportLine(line []byte) (Record, error) {
	canon, err := Canonicalize(line)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrExportLine, err)
	}
	return decodeCanonicalLine(canon)
}

// DecodeCanonicalExportLine is DecodeExportLine for a line that must also be its own
// RFC 8785 canonical form, as every line the service exports is (docs/formats.md): the
// offline verifier refuses a re-encoded export.
func DecodeCanonicalExportLine(line []byte) (Record, error) {
	if r, ok := decodeCanonicalFast(line); ok {
		return r, nil // export_fast.go: the same record, in one pass
	}
	canon, err := Canonicalize(line)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrExportLine, err)
	}
	r, err := decodeCanonicalLine(canon)
	if err == nil && !bytes.Equal(canon, line) {
		return Record{}, fmt.Errorf("%w: not canonical JSON (RFC 8785), as every export line is", ErrExportLine)
	}
	return r, err
}

func decodeCanonicalLine(canon []byte) (Record, error) {
	var err error
	var m map[string]json.RawMessage
	if err := json.Unmarshal(canon, &m); err != nil {
		return Record{}, fmt.Errorf("%w: not a JSON object", ErrExportLine)
	}
	var payloadKeys []string
	for k := range m {
		switch {
		case IsPayloadMember(k):
			payloadKeys = append(payloadKeys, k)
		case !slices.Contains(identityMembers, k):
			return Record{}, fmt.Errorf("%w: unknown member %q", ErrExportLine, k)
		}
	}
	bad := func(member string, err error) error {
		return fmt.Errorf("%w: member %q: %w", ErrExportLine, member, err)
	}
	var r Record
	if err := requireString(m, "id", &r.Leaf.ID); err != nil {
		return Record{}, bad("id", err)
	}
	raw, ok := m["sequence"]
	if !ok {
		return Record{}, bad("sequence", errors.New("missing"))
	}
	if r.Leaf.Sequence, err = strconv.ParseUint(string(raw), 10, 64); err != nil {
		return Record{}, bad("sequence", errors.New("not a positive integer"))
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"timestamp", &r.Leaf.Timestamp}, {"projectId", &r.Leaf.ProjectID}, {"stream", &r.Leaf.Stream}} {
		if err := requireString(m, f.name, f.dst); err != nil {
			return Record{}, bad(f.name, err)
		}
	}
	var s string
	if err := requireString(m, "leafHash", &s); err != nil {
		return Record{}, bad("leafHash", err)
	}
	if r.LeafHash, err = ParseHash(s); err != nil {
		return Record{}, bad("leafHash", err)
	}
	if err := requireString(m, "payloadHash", &s); err != nil {
		return Record{}, bad("payloadHash", err)
	}
	if r.Leaf.PayloadHash, err = ParseHash(s); err != nil {
		return Record{}, bad("payloadHash", err)
	}
	if _, ok := m["payloadNonce"]; !ok {
		return Record{}, bad("payloadNonce", errors.New("missing (null when shredded)"))
	}
	nonce, err := optionalString(m, "payloadNonce")
	if err != nil {
		return Record{}, bad("payloadNonce", err)
	}
	if r.CiphertextHash, err = optionalString(m, "ciphertextHash"); err != nil {
		return Record{}, bad("ciphertextHash", err)
	}
	if r.Leaf.SigningKeyID, err = optionalString(m, "signingKeyId"); err != nil {
		return Record{}, bad("signingKeyId", err)
	}
	if r.Leaf.Signature, err = optionalString(m, "clientSignature"); err != nil {
		return Record{}, bad("clientSignature", err)
	}
	if err := r.Leaf.Validate(); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrExportLine, err)
	}
	if nonce == "" {
		if len(payloadKeys) > 0 {
			return Record{}, fmt.Errorf("%w: shredded event (payloadNonce null) carries payload members", ErrExportLine)
		}
		return r, nil
	}
	n, err := ParseNonce(nonce)
	if err != nil {
		return Record{}, bad("payloadNonce", err)
	}
	r.Nonce = &n
	// The line was canonical, so each member value is canonical; put the payload
	// members back together in JCS key order.
	slices.SortFunc(payloadKeys, compareUTF16)
	p := []byte{'{'}
	for i, k := range payloadKeys {
		if i > 0 {
			p = append(p, ',')
		}
		p = appendString(p, k)
		p = append(p, ':')
		p = append(p, m[k]...)
	}
	r.Payload = append(p, '}')
	return r, nil
}

func requireString(m map[string]json.RawMessage, name string, dst *string) error {
	raw, ok := m[name]
	if !ok {
		return errors.New("missing")
	}
	if err := json.Unmarshal(raw, dst); err != nil || raw[0] != '"' {
		return errors.New("not a string")
	}
	return nil
}

// optionalString reads a member that is a string or null; absent and null give "".
func optionalString(m map[string]json.RawMessage, name string) (string, error) {
	raw, ok := m[name]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || raw[0] != '"' {
		return "", errors.New("not a string or null")
	}
	if s == "" {
		return "", errors.New("empty string")
	}
	return s, nil
}

// RebuildOptions configure a Rebuilder.
type RebuildOptions struct {
	// SigningKeys returns the customer public keys a signature made with signingKeyID may
	// verify under. Nil disables the signature check.
	SigningKeys func(signingKeyID string) []ed25519.PublicKey
	// ProjectID and Stream, when set, are what every record must carry; otherwise the
	// first record fixes them.
	ProjectID, Stream string
}

// Rebuilder rebuilds a stream's tree from its records in sequence order, in O(log n)
// memory, and reports the first break in the spec's terms.
type Rebuilder struct {
	opts    RebuildOptions
	roots   *RootBuilder
	broken  *ChainBreak
	Stats   RebuildStats
	project string
	stream  string
}

// RebuildStats counts what a rebuild did.
type RebuildStats struct {
	Events     uint64 // leaves rebuilt
	Rederived  uint64 // commitments re-derived from content and nonce
	Shredded   uint64 // shredded events: leaf checked, commitment not re-derivable
	Signatures uint64 // customer signatures checked
}

// NewRebuilder returns a Rebuilder expecting sequence 1 next.
func NewRebuilder(opts RebuildOptions) *Rebuilder {
	return &Rebuilder{opts: opts, roots: NewRootBuilder(), project: opts.ProjectID, stream: opts.Stream}
}

// ErrMixedStreams means records of different project-streams were fed to one Rebuilder.
var ErrMixedStreams = errors.New("records of more than one project-stream")

// Check holds the results of the checks of one record that do not depend on the
// records before it (commitment, signature, leaf hash). Rebuilder.Precheck computes it,
// possibly on another goroutine; Rebuilder.AddChecked consumes it in sequence order.
type Check struct {
	commitment Hash // re-derived commitment; zero when shredded
	sigChecked bool // a signature was present and keys were given
	sigOK      bool
	leafHash   Hash
}

// Precheck runs the order-independent checks of r. It is safe for concurrent use
// (RebuildOptions.SigningKeys must then be too) and does not change b.
func (b *Rebuilder) Precheck(r *Record) Check {
	var c Check
	if !r.Shredded() {
		c.commitment = Commitment(*r.Nonce, r.Payload)
	}
	if r.Leaf.Signature != "" && b.opts.SigningKeys != nil {
		c.sigChecked = true
		for _, k := range b.opts.SigningKeys(r.Leaf.SigningKeyID) {
			if VerifyEventSignature(k, r.Leaf.ID, r.Leaf.PayloadHash, r.Leaf.Signature) == nil {
				c.sigOK = true
				break
			}
		}
	}
	c.leafHash = r.Leaf.Hash()
	return c
}

// Add checks the next record. It returns a *ChainBreak for the first tamper it sees and
// keeps returning it; other errors mean the input is not one stream's records.
func (b *Rebuilder) Add(r *Record) error {
	if b.broken != nil {
		return b.broken
	}
	c := b.Precheck(r)
	return b.AddChecked(r, &c)
}

// AddChecked is Add with r's Precheck already done: the same checks, in the same
// order, with the same result.
func (b *Rebuilder) AddChecked(r *Record, c *Check) error {
	if b.broken != nil {
		return b.broken
	}
	if b.project == "" {
		b.project = r.Leaf.ProjectID
	}
	if b.stream == "" {
		b.stream = r.Leaf.Stream
	}
	if r.Leaf.ProjectID != b.project || r.Leaf.Stream != b.stream {
		return fmt.Errorf("%w: %s/%s after %s/%s", ErrMixedStreams, r.Leaf.ProjectID, r.Leaf.Stream, b.project, b.stream)
	}
	next := b.roots.Size() + 1
	if r.Leaf.Sequence != next {
		return b.fail(next, BreakSequenceGap, fmt.Sprintf("expected sequence %d, found %d", next, r.Leaf.Sequence))
	}
	if r.Shredded() {
		b.Stats.Shredded++
	} else {
		if c.commitment != r.Leaf.PayloadHash {
			return b.fail(next, BreakContentTampered, fmt.Sprintf("content re-derives commitment %s, recorded %s", Hex(c.commitment), Hex(r.Leaf.PayloadHash)))
		}
		b.Stats.Rederived++
	}
	if c.sigChecked {
		if !c.sigOK {
			return b.fail(next, BreakInvalidClientSignature, fmt.Sprintf("signature by %q does not verify under any given signing key", r.Leaf.SigningKeyID))
		}
		b.Stats.Signatures++
	}
	if c.leafHash != r.LeafHash {
		return b.fail(next, BreakLeafMismatch, fmt.Sprintf("leaf re-hashes to %s, recorded %s", Hex(c.leafHash), Hex(r.LeafHash)))
	}
	b.roots.Append(c.leafHash)
	b.Stats.Events++
	return nil
}

func (b *Rebuilder) fail(seq uint64, reason, detail string) error {
	b.broken = &ChainBreak{Sequence: seq, Reason: reason, Detail: detail}
	return b.broken
}

// Size returns the size of the tree rebuilt so far.
func (b *Rebuilder) Size() uint64 { return b.roots.Size() }

// Root returns the root of the tree rebuilt so far.
func (b *Rebuilder) Root() Hash { return b.roots.Root() }

// ProjectID and Stream return the project-stream the records belong to.
func (b *Rebuilder) ProjectID() string { return b.project }

// Stream returns the stream the records belong to.
func (b *Rebuilder) Stream() string { return b.stream }

// CheckRoot compares the rebuilt tree with a trusted (size, root). It returns a
// *ChainBreak with reason root_mismatch when they differ, or sequence_gap when the
// rebuild holds fewer leaves than the trusted size.
func (b *Rebuilder) CheckRoot(size uint64, root Hash) error {
	if b.broken != nil {
		return b.broken
	}
	if b.Size() < size {
		return b.fail(b.Size()+1, BreakSequenceGap, fmt.Sprintf("records end at sequence %d, trusted tree has %d leaves", b.Size(), size))
	}
	if b.Size() != size {
		return fmt.Errorf("rebuilt %d leaves, trusted size %d: compare at equal sizes", b.Size(), size)
	}
	if got := b.Root(); got != root {
		return b.fail(size, BreakRootMismatch, fmt.Sprintf("rebuilt root %s, trusted root %s", Hex(got), Hex(root)))
	}
	return nil
}
