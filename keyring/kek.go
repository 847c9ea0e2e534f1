package keyring

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sealtrail/sealtrail/internal/private"
)

// Wrapper protects data keys at rest with a key-encryption key (KEK). The local file
// implementation is FileKEK; a cloud KMS implements the same three methods.
//
// Wrap and Unwrap may be called concurrently. ad binds a wrapped key to its identity
// (project-stream, epoch, key id): unwrapping with other ad fails, so a wrapped key
// copied onto another row is useless.
type Wrapper interface {
	// ID names the KEK; it is stored beside every key it wrapped, so that a keyring
	// started with the wrong KEK fails with ErrWrongKEK instead of a decryption error.
	ID() string
	Wrap(ctx context.Context, plaintext, ad []byte) ([]byte, error)
	Unwrap(ctx context.Context, wrapped, ad []byte) ([]byte, error)
}

// FileKEK is a Wrapper whose KEK is 32 random bytes in a local file (mode 0600). Wrapped
// keys are AES-256-GCM: version byte 1, 12-byte random nonce, sealed key and tag.
type FileKEK struct {
	id   string
	aead cipher.AEAD
}

var _ Wrapper = (*FileKEK)(nil)

const kekSize = 32

// LoadOrCreateKEKFile reads the KEK at path, creating it with 32 fresh random bytes and
// mode 0600 if it does not exist (its directory must). A file readable or writable by
// group or others, or of the wrong size, is refused.
func LoadOrCreateKEKFile(path string) (*FileKEK, error) {
	key, err := readKEK(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createKEK(path); err == nil || errors.Is(err, fs.ErrExist) {
			key, err = readKEK(path) // a concurrent creator may have won
		}
	}
	if err != nil {
		return nil, err
	}
	return NewFileKEK(key)
}

// NewFileKEK returns the wrapper for a 32-byte KEK held in memory.
func NewFileKEK(key []byte) (*FileKEK, error) {
	if len(key) != kekSize {
		return nil, fmt.Errorf("keyring: KEK must be %d bytes, not %d", kekSize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("keyring: KEK cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("keyring: KEK cipher: %w", err)
	}
	sum := sha256.Sum256(append([]byte("sealtrail/kek-id/v1\n"), key...))
	return &FileKEK{id: "file:" + hex.EncodeToString(sum[:8]), aead: aead}, nil
}

func readKEK(path string) ([]byte, error) {
	key, err := private.ReadSecret("KEK file", path, kekSize)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	if len(key) != kekSize {
		return nil, fmt.Errorf("keyring: KEK file %s holds %d bytes, want %d", path, len(key), kekSize)
	}
	return key, nil
}

// createKEK writes a new KEK durably and atomically: the key goes to a temporary file
// in the same directory, which is synced and then hard-linked to path (failing with
// fs.ErrExist if another process got there first), so no reader ever sees a partial
// file. The directory is synced before the KEK wraps anything.
func createKEK(path string) error {
	key := make([]byte, kekSize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("keyring: generate KEK: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".kek-*")
	if err != nil {
		return fmt.Errorf("keyring: create KEK file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	werr := f.Chmod(0o600)
	if werr == nil {
		_, werr = f.Write(key)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("keyring: write KEK file: %w", werr)
	}
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("keyring: install KEK file: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keyring: sync KEK directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("keyring: sync KEK directory: %w", err)
	}
	return nil
}

// ID returns "file:" and 8 bytes of a hash of the KEK, in hex.
func (k *FileKEK) ID() string { return k.id }

const wrapVersion = 1

// Wrap seals plaintext under the KEK, bound to ad.
func (k *FileKEK) Wrap(_ context.Context, plaintext, ad []byte) ([]byte, error) {
	out := make([]byte, 1+k.aead.NonceSize(), 1+k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	out[0] = wrapVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("keyring: wrap nonce: %w", err)
	}
	return k.aead.Seal(out, out[1:], plaintext, ad), nil
}

// Unwrap opens a key sealed by Wrap with the same KEK and ad.
func (k *FileKEK) Unwrap(_ context.Context, wrapped, ad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(wrapped) < 1+n+k.aead.Overhead() || wrapped[0] != wrapVersion {
		return nil, fmt.Errorf("%w: malformed wrapped key", ErrUnwrap)
	}
	pt, err := k.aead.Open(nil, wrapped[1:1+n], wrapped[1+n:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnwrap, err)
	}
	return pt, nil
}
