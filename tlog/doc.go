// Package tlog holds Sealtrail's primitives: the bytes that the service, every client and
// the offline verifier must agree on. It covers RFC 8785 canonical JSON, payload
// commitments, event ids and nonces, leaf encoding and RFC 6962 hashing, inclusion and
// consistency proofs, Ed25519 keys and event signatures, signed tree heads, verify
// receipts, C2SP checkpoint notes, and the streaming rebuild of an export.
//
// The package is pure: no network, no storage, no context. It depends only on the
// standard library, golang.org/x/mod/sumdb (note, tlog) and transparency-dev/merkle.
// The formats are normative (see DESIGN.md, "Formats"); the test vectors in
// testdata/vectors pin them byte for byte.
package tlog

// Version constants of the formats this package produces and accepts.
const (
	// LeafVersion is the `v` member of leaf data.
	LeafVersion = 1
	// TreeHeadVersion is the `v` member of a signed tree head.
	TreeHeadVersion = 1
	// SigningProtocolVersion is the version of the customer event-signature message
	// ("sealtrail/event/v1").
	SigningProtocolVersion = 1
	// ReceiptVersion is the `receiptVersion` of a verify receipt.
	ReceiptVersion = 2
	// SignatureAlgorithm names the algorithm of every signature in Sealtrail.
	SignatureAlgorithm = "Ed25519"
)

// Stream names as they appear inside leaves, tree heads and receipts.
const (
	StreamEvents       = "events"
	StreamProjectAudit = "project_audit"
)

// ValidStream reports whether s is a stream name as written inside signed objects.
func ValidStream(s string) bool { return s == StreamEvents || s == StreamProjectAudit }
