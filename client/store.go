package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/sealtrail/sealtrail/tlog"
)

// PinnedHead is what a client pins for one base URL and stream: the last tree head it
// verified and the service key that head verified under.
type PinnedHead struct {
	STH              tlog.STH `json:"sth"`
	ServicePublicKey string   `json:"servicePublicKey"`
}

// HeadStore keeps pinned heads. Keys are namespaced per base URL and stream (see
// PinKey). The client serializes the checks of one stream, so it never calls Save
// concurrently for one key; implementations must still be safe for concurrent use
// across keys and across clients sharing the store.
//
// Load returns nil, nil when nothing is pinned under key. Save must be durable when it
// returns if pins are to survive a crash: a lost pin is trusted again on first use.
type HeadStore interface {
	Load(ctx context.Context, key string) (*PinnedHead, error)
	Save(ctx context.Context, key string, head PinnedHead) error
}

// PinKey is the head-store key of a base URL and stream: "<baseURL>|<stream>", with
// the stream as the API spells it (events, project-audit).
func PinKey(baseURL string, stream Stream) string { return baseURL + "|" + string(stream) }

// MemoryHeadStore keeps pins in memory; they are lost when the process ends.
type MemoryHeadStore struct {
	mu    sync.Mutex
	heads map[string]PinnedHead
}

var _ HeadStore = (*MemoryHeadStore)(nil)

// NewMemoryHeadStore returns an empty MemoryHeadStore.
func NewMemoryHeadStore() *MemoryHeadStore {
	return &MemoryHeadStore{heads: map[string]PinnedHead{}}
}

// Load implements HeadStore.
func (m *MemoryHeadStore) Load(_ context.Context, key string) (*PinnedHead, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.heads[key]
	if !ok {
		return nil, nil
	}
	return &h, nil
}

// Save implements HeadStore.
func (m *MemoryHeadStore) Save(_ context.Context, key string, head PinnedHead) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heads[key] = head
	return nil
}

// FileHeadStore keeps each pin in its own JSON file in a directory, so pins survive
// restarts. A Save writes a temporary file, syncs it, renames it over the old pin and
// syncs the directory: a crash leaves either the old pin or the new one, never a torn
// file. Several processes may share the directory; the last Save of a key wins.
type FileHeadStore struct {
	dir string
}

var _ HeadStore = (*FileHeadStore)(nil)

// NewFileHeadStore returns a store in dir, creating it (mode 0700) if needed.
func NewFileHeadStore(dir string) (*FileHeadStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("head store: %w", err)
	}
	return &FileHeadStore{dir: dir}, nil
}

// fileHead is the content of one pin file; Key guards against a hash collision or a
// file copied under the wrong name.
type fileHead struct {
	Key string `json:"key"`
	PinnedHead
}

func (f *FileHeadStore) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(f.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load implements HeadStore.
func (f *FileHeadStore) Load(_ context.Context, key string) (*PinnedHead, error) {
	data, err := os.ReadFile(f.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("head store: %w", err)
	}
	var h fileHead
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("head store: %s: %w", f.path(key), err)
	}
	if h.Key != key {
		return nil, fmt.Errorf("head store: %s holds the pin of %q, not %q", f.path(key), h.Key, key)
	}
	return &h.PinnedHead, nil
}

// Save implements HeadStore.
func (f *FileHeadStore) Save(_ context.Context, key string, head PinnedHead) error {
	data, err := json.MarshalIndent(fileHead{Key: key, PinnedHead: head}, "", "  ")
	if err != nil {
		return fmt.Errorf("head store: %w", err)
	}
	dst := f.path(key)
	tmp, err := os.CreateTemp(f.dir, ".pin-*.tmp")
	if err != nil {
		return fmt.Errorf("head store: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("head store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("head store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("head store: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("head store: %w", err)
	}
	d, err := os.Open(f.dir)
	if err != nil {
		return fmt.Errorf("head store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("head store: sync %s: %w", f.dir, err)
	}
	return nil
}
