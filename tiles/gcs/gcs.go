// Package gcs is the Google Cloud Storage driver of tiles.Store
// (cloud.google.com/go/storage). Credentials come from Application Default
// Credentials. To use the emulator (fake-gcs-server), set STORAGE_EMULATOR_HOST to
// its host:port; the client library then talks to it without authentication.
package gcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/sealtrail/sealtrail/tiles"
)

// Config selects a bucket.
type Config struct {
	Bucket string
	// Prefix is prepended to every key ("" or ending in "/").
	Prefix string
	// ClientOptions are passed to storage.NewClient.
	ClientOptions []option.ClientOption
}

// A Store keeps objects in a GCS bucket. Every call is retried by the client library
// with backoff: reads always, writes because each carries a precondition
// (DoesNotExist for Create) or is a full overwrite (Put), which makes it idempotent.
type Store struct {
	c      *storage.Client
	bucket *storage.BucketHandle
	prefix string
}

var _ tiles.Store = (*Store)(nil)

// New returns a Store for cfg. It does not contact the service.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("gcs: no bucket")
	}
	if cfg.Prefix != "" && (!strings.HasSuffix(cfg.Prefix, "/") || tiles.CheckKey(strings.TrimSuffix(cfg.Prefix, "/")) != nil) {
		return nil, fmt.Errorf("gcs: invalid prefix %q", cfg.Prefix)
	}
	c, err := storage.NewClient(ctx, cfg.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("gcs: new client: %w", err)
	}
	c.SetRetry(storage.WithPolicy(storage.RetryAlways))
	return &Store{c: c, bucket: c.Bucket(cfg.Bucket), prefix: cfg.Prefix}, nil
}

// Close releases the client.
func (s *Store) Close() error { return s.c.Close() }

// Bucket returns the bucket handle.
func (s *Store) Bucket() *storage.BucketHandle { return s.bucket }

// FullKey returns the bucket key of key: the Store's prefix and key.
func (s *Store) FullKey(key string) string { return s.prefix + key }

func (s *Store) key(key string) (string, error) {
	if err := tiles.CheckKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Get implements tiles.Store. A whole-object read whose bytes do not match the
// object's CRC32C is read again, at most getAttempts times in all: the client checks
// the checksum only once the body has been read, and a mismatch means the bytes
// received are not the object, which a fresh read may well be (Google's guidance
// for downloads). fake-gcs-server also answers a read that races an overwrite with
// one version's checksum and another's bytes (TestConformance, ConcurrentPut).
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		data, err := s.get(ctx, k)
		if err == nil || !badCRC(err) || attempt == getAttempts || ctx.Err() != nil {
			return data, err
		}
	}
}

// getAttempts bounds the reads of one Get whose bytes fail their checksum.
const getAttempts = 3

// badCRC reports whether err is the client's checksum mismatch on a whole-object
// read, which it returns as text only.
func badCRC(err error) bool {
	return strings.Contains(err.Error(), "storage: bad CRC on read")
}

func (s *Store) get(ctx context.Context, k string) ([]byte, error) {
	r, err := s.bucket.Object(k).NewReader(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, fmt.Errorf("gcs: get %s: %w", k, tiles.ErrNotFound)
		}
		return nil, fmt.Errorf("gcs: get %s: %w", k, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("gcs: get %s: read: %w", k, err)
	}
	return data, nil
}

// GetRange implements tiles.Store with a ranged reader (NewRangeReader).
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := tiles.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	r, err := s.bucket.Object(k).NewRangeReader(ctx, off, n)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, fmt.Errorf("gcs: get %s: %w", k, tiles.ErrNotFound)
		}
		var ge *googleapi.Error
		if errors.As(err, &ge) && ge.Code == http.StatusRequestedRangeNotSatisfiable {
			return nil, fmt.Errorf("gcs: get %s range %d+%d: %w", k, off, n, tiles.ErrShortObject)
		}
		return nil, fmt.Errorf("gcs: get %s range %d+%d: %w", k, off, n, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, fmt.Errorf("gcs: get %s range %d+%d: read: %w", k, off, n, err)
	}
	if int64(len(data)) < n {
		return nil, fmt.Errorf("gcs: get %s range %d+%d: %d bytes: %w", k, off, n, len(data), tiles.ErrShortObject)
	}
	if int64(len(data)) > n {
		return nil, fmt.Errorf("gcs: get %s range %d+%d: the server sent more than the range", k, off, n)
	}
	return data, nil
}

// Create implements tiles.Store with a DoesNotExist precondition. On 412 the
// existing object is read and compared, which also makes a retry after a lost
// response succeed.
func (s *Store) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	err = s.write(ctx, s.bucket.Object(k).If(storage.Conditions{DoesNotExist: true}), data, a)
	if err == nil {
		return nil
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
		return fmt.Errorf("gcs: create %s: %w", k, err)
	}
	existing, gerr := s.Get(ctx, key)
	if gerr != nil {
		return fmt.Errorf("gcs: create %s: exists, but reading it failed: %w", k, gerr)
	}
	if !bytes.Equal(existing, data) {
		return fmt.Errorf("gcs: create: %w", &tiles.ConflictError{Key: k})
	}
	return nil
}

// Put implements tiles.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.write(ctx, s.bucket.Object(k), data, a); err != nil {
		return fmt.Errorf("gcs: put %s: %w", k, err)
	}
	return nil
}

// write uploads data in one request (for objects up to the chunk size; larger ones
// in a resumable upload), with its CRC32C so the service rejects a corrupted body.
func (s *Store) write(ctx context.Context, o *storage.ObjectHandle, data []byte, a tiles.Attrs) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a canceled context aborts the upload; nothing is stored
	w := o.NewWriter(ctx)
	w.ContentType = a.ContentType
	w.CacheControl = a.CacheControl
	w.ChunkSize = min(len(data)+1024, 16<<20)
	w.CRC32C = crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	w.SendCRC32C = true
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Delete implements tiles.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.bucket.Object(k).Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("gcs: delete %s: %w", k, err)
	}
	return nil
}
