// Package servicekey manages the service's signing key over its lifetime: the key
// history file (tlog.KeyHistory, the signed chain of key transitions that lets
// clients and verifiers follow an announced rotation and refuse an unannounced one),
// the rotation that appends to it, and the public route that serves it.
//
// The history file is public data (public keys and signatures); the service loads it
// at start-up and refuses to start when its last key is not the configured service
// key, so a replica can never sign under a key its history does not announce. See
// docs/key-rotation.md.
package servicekey

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// maxHistoryFile bounds the history file: MaxKeyTransitions transitions of ~500 bytes.
const maxHistoryFile = 4 << 20

// Load reads the key history at path. A missing file is an empty history (the service
// never rotated). The history must verify and, when not empty, end at key.
func Load(path string, key ed25519.PublicKey) (*tlog.KeyHistory, error) {
	h, err := read(path)
	if err != nil {
		return nil, err
	}
	if cur, want := h.Current(), hex.EncodeToString(key); cur != "" && cur != want {
		return nil, fmt.Errorf("service key history %s ends at key %s, but the service key is %s: install the key the last rotation created, or restore the history", path, cur, want)
	}
	return h, nil
}

func read(path string) (*tlog.KeyHistory, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &tlog.KeyHistory{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("service key history: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHistoryFile+1))
	if err != nil {
		return nil, fmt.Errorf("service key history %s: %w", path, err)
	}
	if len(data) > maxHistoryFile {
		return nil, fmt.Errorf("service key history %s is larger than %d bytes", path, maxHistoryFile)
	}
	h, err := tlog.ParseKeyHistory(data)
	if err != nil {
		return nil, fmt.Errorf("service key history %s: %w", path, err)
	}
	return h, nil
}

// Rotate appends to the history at path the hand-over from oldKey to newKey at time
// at, and writes the history back atomically (a temporary file renamed over it). It
// returns the new history. The caller installs newKey as the service key afterwards;
// until it does, the service refuses to start (Load), which is the safe failure.
func Rotate(path string, oldKey, newKey ed25519.PrivateKey, at time.Time) (*tlog.KeyHistory, error) {
	h, err := read(path)
	if err != nil {
		return nil, err
	}
	t, err := tlog.NewKeyTransition(h, oldKey, newKey, at)
	if err != nil {
		return nil, fmt.Errorf("rotate: %w", err)
	}
	h.Transitions = append(h.Transitions, t)
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(path, append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("rotate: write %s: %w", path, err)
	}
	return h, nil
}

// writeAtomic writes data to path through a synced temporary file in the same folder.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteKeyFile replaces the key file at path with key (hex seed, mode 0600),
// atomically.
func WriteKeyFile(path string, key ed25519.PrivateKey) error {
	return writeAtomic(path, []byte(hex.EncodeToString(key.Seed())+"\n"), 0o600)
}

// Handler serves the history as JSON (GET /api/v1/key-history). It needs no API key:
// like the OpenAPI document it holds nothing secret, and an auditor without a key
// must be able to check old tree heads.
func Handler(h *tlog.KeyHistory) http.Handler {
	if h.Transitions == nil {
		h = &tlog.KeyHistory{Transitions: []tlog.KeyTransition{}}
	}
	body, _ := json.Marshal(h) // plain strings and numbers: cannot fail
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"error":"Method not allowed"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	})
}
