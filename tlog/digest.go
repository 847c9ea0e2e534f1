package tlog

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// DigestVersion is the version line of a digest's signed facts.
const DigestVersion = "sealtrail digest v1"

// Digest is the facts of one email digest of a project: what the service signs (as a
// signed note, like a checkpoint) and what the email's text renders. docs/digests.md
// describes the format.
type Digest struct {
	Origin    string // "<service origin>/<projectId>/digest"; also the note key name
	ProjectID string
	Name      string // the project's name
	Period    string // "daily 2026-11-24" or "weekly 2026-W48"
	Issued    string // RFC 3339 UTC, millisecond precision
	Previous  string // the previous digest's Issued, or "" for the first
	Heads     []STH  // both streams' signed tree heads, events first
	Anchors   []DigestAnchor
	Counts    []DigestCount
	Holds     []DigestHold // active legal holds
}

// DigestAnchor is a stream's latest externally anchored tree head; Type == "" means
// the stream is not yet anchored.
type DigestAnchor struct {
	Stream     string
	TreeSize   uint64
	RootHash   string // lowercase hex
	AnchoredAt string
	Type       string
	Ref        string
}

// DigestCount is how many records a stream gained since the previous digest.
type DigestCount struct {
	Stream string
	Count  uint64
}

// DigestHold is an active legal hold.
type DigestHold struct {
	ID             string
	MembershipRoot string // lowercase hex
	Events         int
	CreatedAt      string
}

// DigestOrigin is the origin line and note key name of a project's digests.
func DigestOrigin(serviceOrigin, projectID string) string {
	return serviceOrigin + "/" + projectID + "/digest"
}

// Errors of digest verification.
var (
	// ErrDigestMalformed: the text holds no well-formed signed digest.
	ErrDigestMalformed = errors.New("malformed digest")
	// ErrDigestEdited: the signed facts verify but the text around them is not the
	// text they render: someone edited the email.
	ErrDigestEdited = errors.New("digest text does not match its signed facts")
)

// Marshal returns the note text of the facts.
func (d *Digest) Marshal() string {
	var b strings.Builder
	line := func(f string, args ...any) { fmt.Fprintf(&b, f+"\n", args...) }
	line("%s", d.Origin)
	line("%s", DigestVersion)
	line("project %s", d.ProjectID)
	line("name %s", strconv.QuoteToASCII(d.Name))
	line("period %s", d.Period)
	line("issued %s", d.Issued)
	prev := d.Previous
	if prev == "" {
		prev = "none"
	}
	line("previous %s", prev)
	for _, h := range d.Heads {
		line("sth %s %d %s %s %s", h.Stream, h.TreeSize, h.RootHash, h.Timestamp, h.Signature)
	}
	for _, a := range d.Anchors {
		if a.Type == "" {
			line("anchor %s none", a.Stream)
			continue
		}
		line("anchor %s %d %s %s %s %s", a.Stream, a.TreeSize, a.RootHash, a.AnchoredAt, a.Type, strconv.QuoteToASCII(a.Ref))
	}
	for _, c := range d.Counts {
		line("count %s %d", c.Stream, c.Count)
	}
	for _, h := range d.Holds {
		line("hold %s %s %d %s", h.ID, h.MembershipRoot, h.Events, h.CreatedAt)
	}
	return b.String()
}

// SignDigest returns the signed note of d under the service key.
func SignDigest(priv ed25519.PrivateKey, d *Digest) ([]byte, error) {
	s, err := NewCheckpointSigner(priv, d.Origin)
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: d.Marshal()}, s)
	if err != nil {
		return nil, fmt.Errorf("sign digest: %w", err)
	}
	return msg, nil
}

// OpenDigest verifies a digest note under the service key pub and returns its facts,
// after checking each tree head's own signature too. A signature that does not verify
// is ErrBadSignature; anything unparseable is ErrDigestMalformed.
func OpenDigest(pub ed25519.PublicKey, msg []byte) (Digest, error) {
	origin, _, ok := strings.Cut(string(msg), "\n")
	if !ok || origin == "" {
		return Digest{}, fmt.Errorf("%w: no origin line", ErrDigestMalformed)
	}
	v, err := NewCheckpointVerifier(pub, origin)
	if err != nil {
		return Digest{}, fmt.Errorf("%w: origin %q: %w", ErrDigestMalformed, origin, err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		if errors.As(err, &unverified) || errors.As(err, &invalid) {
			return Digest{}, fmt.Errorf("%w: the digest note is not signed by the service key: %w", ErrBadSignature, err)
		}
		return Digest{}, fmt.Errorf("%w: %w", ErrDigestMalformed, err)
	}
	d, err := parseDigest(n.Text)
	if err != nil {
		return Digest{}, fmt.Errorf("%w: %w", ErrDigestMalformed, err)
	}
	for i := range d.Heads {
		if err := VerifySTH(pub, &d.Heads[i]); err != nil {
			return Digest{}, fmt.Errorf("tree head of %s in the digest: %w", d.Heads[i].Stream, err)
		}
	}
	return d, nil
}

// parseDigest is the inverse of Marshal; it accepts exactly what Marshal writes.
func parseDigest(text string) (Digest, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 7 || lines[1] != DigestVersion {
		return Digest{}, fmt.Errorf("not a %q note", DigestVersion)
	}
	d := Digest{Origin: lines[0]}
	head := []struct {
		key string
		dst *string
	}{{"project", &d.ProjectID}, {"name", &d.Name}, {"period", &d.Period}, {"issued", &d.Issued}, {"previous", &d.Previous}}
	for i, h := range head {
		v, ok := strings.CutPrefix(lines[2+i], h.key+" ")
		if !ok {
			return Digest{}, fmt.Errorf("line %d: want %q", 3+i, h.key)
		}
		*h.dst = v
	}
	var err error
	if d.Name, err = strconv.Unquote(d.Name); err != nil {
		return Digest{}, fmt.Errorf("name: %w", err)
	}
	if d.Previous == "none" {
		d.Previous = ""
	}
	for _, l := range lines[7:] {
		f := strings.Fields(l)
		switch {
		case len(f) == 6 && f[0] == "sth":
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return Digest{}, fmt.Errorf("sth size: %w", err)
			}
			d.Heads = append(d.Heads, STH{V: TreeHeadVersion, ProjectID: d.ProjectID, Stream: f[1], TreeSize: n,
				RootHash: f[3], Timestamp: f[4], Signature: f[5]})
		case len(f) == 3 && f[0] == "anchor" && f[2] == "none":
			d.Anchors = append(d.Anchors, DigestAnchor{Stream: f[1]})
		case len(f) >= 7 && f[0] == "anchor":
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return Digest{}, fmt.Errorf("anchor size: %w", err)
			}
			prefix := strings.Join(f[:6], " ") + " "
			ref, err := strconv.Unquote(strings.TrimPrefix(l, prefix))
			if err != nil || !strings.HasPrefix(l, prefix) {
				return Digest{}, fmt.Errorf("anchor reference in %q", l)
			}
			d.Anchors = append(d.Anchors, DigestAnchor{Stream: f[1], TreeSize: n, RootHash: f[3], AnchoredAt: f[4], Type: f[5], Ref: ref})
		case len(f) == 3 && f[0] == "count":
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return Digest{}, fmt.Errorf("count: %w", err)
			}
			d.Counts = append(d.Counts, DigestCount{Stream: f[1], Count: n})
		case len(f) == 5 && f[0] == "hold":
			n, err := strconv.Atoi(f[3])
			if err != nil {
				return Digest{}, fmt.Errorf("hold events: %w", err)
			}
			d.Holds = append(d.Holds, DigestHold{ID: f[1], MembershipRoot: f[2], Events: n, CreatedAt: f[4]})
		default:
			return Digest{}, fmt.Errorf("unknown line %q", l)
		}
	}
	if d.Marshal() != text {
		return Digest{}, errors.New("the note is not in canonical form")
	}
	return d, nil
}
