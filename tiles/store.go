package tiles

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrNotFound is returned (wrapped) by [Store.Get] for an object that does not exist,
// and by the readers of this package when a tile or bundle they need is missing.
var ErrNotFound = errors.New("tiles: object not found")

// ErrConflict is returned (wrapped) by [Store.Create] when the object already exists
// with different bytes. For a tile or an entry bundle this means two different trees
// of one size were written: a fork, which the caller must treat as fatal.
var ErrConflict = errors.New("tiles: object exists with different content")

// ErrMismatch is returned (wrapped) when tiles or bundles read from the store do not
// match the tree the caller trusts: storage was altered, or a prefix holds another log.
var ErrMismatch = errors.New("tiles: stored data does not match the trusted tree")

// ErrShortObject is returned (wrapped) by [Store.GetRange] for a range that goes
// beyond the end of the object.
var ErrShortObject = errors.New("tiles: range beyond the end of the object")

// CheckRange validates the arguments of [Store.GetRange]: the key, off >= 0, n > 0
// and off+n without overflow. Drivers call it first.
func CheckRange(key string, off, n int64) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if off < 0 || n <= 0 || off > math.MaxInt64-n {
		return fmt.Errorf("tiles: invalid range %d+%d of %q", off, n, key)
	}
	return nil
}

// A ConflictError is the error [Store.Create] returns for an object that exists with
// different bytes; errors.Is(err, ErrConflict) holds for it.
type ConflictError struct {
	Key string // the object's full key
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("tiles: object %q exists with different content", e.Key)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Attrs are the HTTP attributes stored with an object, for a bucket that mirrors read
// directly. Drivers without HTTP metadata (the filesystem) ignore them.
type Attrs struct {
	ContentType  string
	CacheControl string
}

// The attributes this package writes objects with.
var (
	// ImmutableAttrs is used for tiles and entry bundles, full or partial: a path
	// always names the same bytes, so any cache may keep them forever.
	ImmutableAttrs = Attrs{ContentType: "application/octet-stream", CacheControl: "public, max-age=31536000, immutable"}
	// CheckpointAttrs is used for the checkpoint, the one object that changes.
	CheckpointAttrs = Attrs{ContentType: "text/plain; charset=utf-8", CacheControl: "no-cache"}
	// PrivateAttrs is used for payload bundles, which are never served to mirrors.
	PrivateAttrs = Attrs{ContentType: "application/octet-stream", CacheControl: "private, no-store"}
)

// A Store is the object storage that holds the logs: a flat namespace of keys, each
// naming a byte string. Sealtrail keeps every log under its own prefix
// (see [StreamPrefix]); a driver may add a prefix of its own (from its URL).
//
// Contract, which every driver meets and tiles/storetest checks:
//
//   - Durability: when Create or Put returns nil, the object is durable (fsynced, or
//     acknowledged by the service) and every later Get, from any process, returns it.
//     When Delete returns nil, later Gets return ErrNotFound.
//   - Create is write-once. If the key does not exist, it stores data. If it exists
//     with identical bytes, Create returns nil (so a retried or repeated write, or two
//     writers racing with the same bytes, succeed). If it exists with different
//     bytes, Create returns an error that wraps ErrConflict and changes nothing. A
//     reader never sees a partly written object.
//   - Put overwrites atomically: a concurrent Get sees the old or the new bytes, never
//     a mix. Only the checkpoint is written with Put. Concurrent Puts of one key are
//     last-writer-wins.
//   - Get of a missing key returns an error that wraps ErrNotFound. Delete of a
//     missing key returns nil.
//   - Retries: drivers retry transient failures (throttling, 5xx, resets) themselves,
//     with backoff, within ctx's deadline. An error they return is final for that
//     call; because Create and Put are idempotent, the caller may repeat the whole call
//     later. An error from Create or Put does not mean nothing was written: the object
//     may exist (a lost response), and a repeated Create sorts that out.
//   - Concurrency: every method may be called from many goroutines and many processes
//     at once, on the same or different keys.
//   - Keys are validated with [CheckKey]; a driver rejects any other key.
type Store interface {
	// Get returns the bytes of the object key.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetRange returns the n bytes of the object key at offset off (n > 0, off >= 0).
	// A missing key is ErrNotFound; an object that ends before off+n is an error that
	// wraps ErrShortObject. It reads only the range (a ranged read), so a batch's
	// segment of a tick's payload object costs its own bytes, not the object's.
	GetRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	// Create stores data at key unless it exists (see the contract above).
	Create(ctx context.Context, key string, data []byte, a Attrs) error
	// Put stores data at key, replacing any object there.
	Put(ctx context.Context, key string, data []byte, a Attrs) error
	// Delete removes the object key. Sealtrail deletes only payload bundles that no
	// committed batch names; tiles and entry bundles are never deleted.
	Delete(ctx context.Context, key string) error
}

// A BatchCreator is a Store that can create many objects at once for less than one
// Create each: the filesystem store makes them all durable with two filesystem syncs
// instead of two fsyncs per object. CreateAll has Create's contract for every object
// (an existing object with other bytes is a *ConflictError); it checks every key
// before it writes anything, and on another error some of the objects may exist, as
// after a failed series of Creates. The Writer uses it when the store has it.
type BatchCreator interface {
	CreateAll(ctx context.Context, objs []Object, a Attrs) error
}

// A BatchPublisher is a BatchCreator that can also replace one object, a checkpoint,
// once every object of the batch is durable, sharing the batch's syncs: the filesystem
// store writes the checkpoint's bytes with the batch's and only renames it into place
// after them, instead of a Put with a sync of its own. CreateAllThenPut is CreateAll,
// then, only if that succeeded, Put of put with attributes pa: put is never visible
// before every object of objs is durable. The Writer's Publish uses it when the store
// has it.
type BatchPublisher interface {
	BatchCreator
	CreateAllThenPut(ctx context.Context, objs []Object, a Attrs, put Object, pa Attrs) error
}

// Object is a key and the bytes to store there.
type Object struct {
	Key  string
	Data []byte
}

// MaxKeyLen bounds the length of a key, well under every backend's limit.
const MaxKeyLen = 512

// CheckKey reports whether key is a valid object key: slash-separated, non-empty
// segments of ASCII letters, digits and "-_.", no segment starting with "." (so no
// "." or ".." and no hidden or temporary files), and at most MaxKeyLen bytes.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("tiles: invalid object key %q: length %d", key, len(key))
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg[0] == '.' {
			return fmt.Errorf("tiles: invalid object key %q: empty or dot segment", key)
		}
		for i := 0; i < len(seg); i++ {
			if !keyByte(seg[i]) {
				return fmt.Errorf("tiles: invalid object key %q: byte %q", key, seg[i])
			}
		}
	}
	return nil
}

func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.'
}
