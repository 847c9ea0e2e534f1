package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// Stream names a project's stream as the API's stream parameter spells it. The zero
// value means StreamEvents.
type Stream string

// The two streams of a project.
const (
	StreamEvents       Stream = "events"
	StreamProjectAudit Stream = "project-audit"
)

// normalize returns s with the default applied, or an error for an unknown stream.
func (s Stream) normalize() (Stream, error) {
	switch s {
	case "":
		return StreamEvents, nil
	case StreamEvents, StreamProjectAudit:
		return s, nil
	}
	return "", fmt.Errorf("sealtrail client: stream %q is neither %q nor %q", string(s), StreamEvents, StreamProjectAudit)
}

// SignedName is the stream's name inside tree heads, receipts and proofs
// (events, project_audit).
func (s Stream) SignedName() string {
	if s == StreamProjectAudit {
		return tlog.StreamProjectAudit
	}
	return tlog.StreamEvents
}

// Event statuses.
const (
	StatusSuccess  = "success"
	StatusFailed   = "failed"
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
)

// Risk levels.
const (
	RiskLow      = "low"
	RiskMedium   = "medium"
	RiskHigh     = "high"
	RiskCritical = "critical"
)

// Entity is an actor or a target.
type Entity struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Display string `json:"display,omitempty"`
}

// EventInput is the body of POST /log: exactly the payload members of the spec's event
// input. Empty strings and nil maps are omitted. The transport members (id, nonce,
// signingKeyId, signature) are added by Log when signing is configured.
type EventInput struct {
	Action        string         `json:"action"`
	Actor         Entity         `json:"actor"`
	Status        string         `json:"status,omitempty"`
	Target        *Entity        `json:"target,omitempty"`
	Risk          string         `json:"risk,omitempty"`
	Context       map[string]any `json:"context,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	RequestID     string         `json:"requestId,omitempty"`
	SessionID     string         `json:"sessionId,omitempty"`
	IPAddress     string         `json:"ipAddress,omitempty"`
	UserAgent     string         `json:"userAgent,omitempty"`
	AgentID       string         `json:"agentId,omitempty"`
	Model         string         `json:"model,omitempty"`
	ToolName      string         `json:"toolName,omitempty"`
	ToolCallID    string         `json:"toolCallId,omitempty"`
	ApprovalID    string         `json:"approvalId,omitempty"`
	PolicyVersion string         `json:"policyVersion,omitempty"`
	InputHash     string         `json:"inputHash,omitempty"`
	OutputHash    string         `json:"outputHash,omitempty"`
}

// LogResult is the acknowledgement of a sealed event.
type LogResult struct {
	ID     string `json:"id"`
	Status string `json:"status"` // always "sealed"
}

// QueryInput selects events. In filter mode (EntityType and EntityID empty) the page is
// newest first and NextCursor continues it. Entity mode needs both EntityType and
// EntityID and has no cursor. Zero values are not sent.
type QueryInput struct {
	Action, Status, ActorID, TargetID string
	// From is inclusive, To exclusive.
	From, To time.Time
	// Limit is the page size (service default 50, capped at 500).
	Limit  int
	Cursor string

	EntityType, EntityID string
	// Direction is "outgoing", "incoming" or "all" (default).
	Direction string
}

// QueryResult is one page of events.
type QueryResult struct {
	Events     []StoredEvent `json:"events"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// StoredEvent is an event as /events returns it: the payload members (absent after
// retention shredding) and the audit-identity members.
type StoredEvent struct {
	EventInput
	ID              string  `json:"id"`
	Sequence        uint64  `json:"sequence"`
	Timestamp       string  `json:"timestamp"`
	ProjectID       string  `json:"projectId"`
	Stream          string  `json:"stream"`
	LeafHash        string  `json:"leafHash"`
	PayloadHash     string  `json:"payloadHash"`
	PayloadNonce    *string `json:"payloadNonce"`
	CiphertextHash  *string `json:"ciphertextHash"`
	SigningKeyID    *string `json:"signingKeyId"`
	ClientSignature *string `json:"clientSignature"`

	// Raw is the event's JSON exactly as received, from which VerifyEvent rebuilds
	// its leaf and commitment.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a stored event and keeps its raw bytes.
func (e *StoredEvent) UnmarshalJSON(b []byte) error {
	type plain StoredEvent
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = StoredEvent(p)
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Shredded reports whether retention destroyed the event's payload.
func (e *StoredEvent) Shredded() bool { return e.PayloadNonce == nil }

// ExportInput selects the events of an export. Zero values are not sent.
type ExportInput struct {
	// Format is "csv" (service default) or "json" (newline-delimited JSON, the offline
	// verifier's input when it covers the whole stream).
	Format                            string
	Action, Status, ActorID, TargetID string
	From, To                          time.Time
	// Max caps the rows exported (0: no cap).
	Max uint64
}

// Root is GET /root: the stream's current signed tree head and the service key.
type Root struct {
	STH              tlog.STH `json:"sth"`
	ServicePublicKey string   `json:"servicePublicKey"`
}

// InclusionProofInput addresses a leaf by EventID, or by LeafIndex when EventID is
// empty. TreeSize 0 means the live tree size.
type InclusionProofInput struct {
	EventID   string
	LeafIndex uint64
	TreeSize  uint64
	Stream    Stream
}

// InclusionProof is GET /proof/inclusion.
type InclusionProof struct {
	Stream    string   `json:"stream"`
	LeafIndex uint64   `json:"leafIndex"`
	TreeSize  uint64   `json:"treeSize"`
	LeafHash  string   `json:"leafHash"`
	Proof     []string `json:"proof"`
}

// ConsistencyProofInput asks for the proof from OldSize to NewSize (0: live size).
type ConsistencyProofInput struct {
	OldSize uint64
	NewSize uint64
	Stream  Stream
}

// ConsistencyProof is GET /proof/consistency.
type ConsistencyProof struct {
	Stream  string   `json:"stream"`
	OldSize uint64   `json:"oldSize"`
	NewSize uint64   `json:"newSize"`
	Proof   []string `json:"proof"`
}

// AttestedHead is one entry of GET /anchors.
type AttestedHead struct {
	TreeSize    uint64          `json:"treeSize"`
	RootHash    string          `json:"rootHash"`
	Timestamp   string          `json:"timestamp"`
	Signature   string          `json:"signature"`
	AnchorType  *string         `json:"anchorType"`
	AnchorRef   *string         `json:"anchorRef"`
	AnchorProof json.RawMessage `json:"anchorProof"`
	AnchoredAt  *string         `json:"anchoredAt"`
}

// Anchors is GET /anchors: the stream's attested heads, newest first.
type Anchors struct {
	Stream string         `json:"stream"`
	Heads  []AttestedHead `json:"heads"`
}

func parseHashes(hs []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(hs))
	for i, s := range hs {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, fmt.Errorf("proof hash %d: %w", i, err)
		}
		out[i] = h
	}
	return out, nil
}
