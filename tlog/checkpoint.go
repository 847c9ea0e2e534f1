package tlog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// CheckpointOrigin is the origin line of a project-stream's checkpoint:
// "<serviceOrigin>/<projectId>/<stream>". It is also the note key name.
func CheckpointOrigin(serviceOrigin, projectID, stream string) string {
	return serviceOrigin + "/" + projectID + "/" + stream
}

// Checkpoint is the body of a C2SP tlog-checkpoint.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   Hash
}

// Marshal returns the checkpoint body "<origin>\n<size>\n<base64 root>\n".
func (c Checkpoint) Marshal() []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ErrCheckpoint wraps every reason a checkpoint is rejected.
var ErrCheckpoint = errors.New("invalid checkpoint")

// ParseCheckpoint parses a checkpoint body. Extension lines after the root are allowed by
// C2SP and ignored.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	lines := strings.SplitAfterN(string(text), "\n", 4)
	if len(lines) < 3 || !strings.HasSuffix(lines[2], "\n") {
		return Checkpoint{}, fmt.Errorf("%w: want origin, size and root lines", ErrCheckpoint)
	}
	origin := strings.TrimSuffix(lines[0], "\n")
	sizeStr := strings.TrimSuffix(lines[1], "\n")
	rootStr := strings.TrimSuffix(lines[2], "\n")
	if origin == "" {
		return Checkpoint{}, fmt.Errorf("%w: empty origin", ErrCheckpoint)
	}
	size, err := strconv.ParseUint(sizeStr, 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != sizeStr {
		return Checkpoint{}, fmt.Errorf("%w: size %q", ErrCheckpoint, sizeStr)
	}
	root, err := base64.StdEncoding.Strict().DecodeString(rootStr)
	if err != nil || len(root) != HashSize {
		return Checkpoint{}, fmt.Errorf("%w: root hash %q", ErrCheckpoint, rootStr)
	}
	c := Checkpoint{Origin: origin, Size: size}
	copy(c.Root[:], root)
	return c, nil
}

// noteKeyHash is the signed-note key id of an Ed25519 key: the first four bytes of
// SHA-256(name || "\n" || 0x01 || public key).
func noteKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', 0x01})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// NewCheckpointSigner returns a note signer for origin with the service key priv.
func NewCheckpointSigner(priv ed25519.PrivateKey, origin string) (note.Signer, error) {
	pub := priv.Public().(ed25519.PublicKey)
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", origin, noteKeyHash(origin, pub),
		base64.StdEncoding.EncodeToString(append([]byte{0x01}, priv.Seed()...)))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint signer for %q: %w", origin, err)
	}
	return s, nil
}

// CheckpointVerifierKey returns the signed-note verifier key string
// ("<origin>+<hash>+<base64 key>") by which witnesses and mirrors name the service key.
func CheckpointVerifierKey(pub ed25519.PublicKey, origin string) (string, error) {
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", fmt.Errorf("checkpoint verifier key for %q: %w", origin, err)
	}
	return vkey, nil
}

// NewCheckpointVerifier returns a note verifier for origin and the service key pub.
func NewCheckpointVerifier(pub ed25519.PublicKey, origin string) (note.Verifier, error) {
	vkey, err := CheckpointVerifierKey(pub, origin)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint verifier for %q: %w", origin, err)
	}
	return v, nil
}

// SignCheckpoint returns the signed note of the checkpoint (origin, size, root).
func SignCheckpoint(priv ed25519.PrivateKey, origin string, size uint64, root Hash) ([]byte, error) {
	s, err := NewCheckpointSigner(priv, origin)
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: string(Checkpoint{origin, size, root}.Marshal())}, s)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	return msg, nil
}

// OpenCheckpoint verifies a signed checkpoint note under pub and returns its body, which
// must name origin.
func OpenCheckpoint(pub ed25519.PublicKey, origin string, msg []byte) (Checkpoint, error) {
	v, err := NewCheckpointVerifier(pub, origin)
	if err != nil {
		return Checkpoint{}, err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return Checkpoint{}, err
	}
	if c.Origin != origin {
		return Checkpoint{}, fmt.Errorf("%w: origin %q, want %q", ErrCheckpoint, c.Origin, origin)
	}
	return c, nil
}
