package tiles

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A group payload object is what one commit tick writes for all the project-streams
// in it: the concatenation of their batches' payload bundles (segments, each in the
// PayloadBundle encoding), at a store key of its own outside every log's prefix:
//
//	payload/<YYYYMMDDTHH>/<unixMillis>-<tickId>
//
// The hour folder keeps any one folder of a filesystem store small; the time in the
// name lets a sweeper leave alone an object a tick may still be committing. Each
// batch row names the object and its segment's byte range; a batch row without them
// names the batch's own object, PayloadPath under the log's prefix (the form before
// group objects, still read).

// GroupPayloadPrefix starts the key of every group payload object. Project ids start
// with "prj_", so no log's prefix starts with it.
const GroupPayloadPrefix = "payload/"

// GroupPayloadKey returns the key of the group payload object of a tick that started
// at t with random id tickID (1 to 64 letters, digits, '-' or '_').
func GroupPayloadKey(t time.Time, tickID string) (string, error) {
	if _, err := PayloadPath(0, tickID); err != nil {
		return "", fmt.Errorf("tiles: invalid tick id %q", tickID)
	}
	t = t.UTC()
	return GroupPayloadPrefix + t.Format("20060102T15") + "/" + strconv.FormatInt(t.UnixMilli(), 10) + "-" + tickID, nil
}

// GroupPayloadTime returns the time in a group payload object's key; ok is false if
// key is not one.
func GroupPayloadTime(key string) (t time.Time, ok bool) {
	rest, ok := strings.CutPrefix(key, GroupPayloadPrefix)
	if !ok {
		return time.Time{}, false
	}
	hour, name, ok := strings.Cut(rest, "/")
	if !ok {
		return time.Time{}, false
	}
	msText, id, ok := strings.Cut(name, "-")
	ms, err := strconv.ParseInt(msText, 10, 64)
	if !ok || err != nil || ms < 0 || id == "" {
		return time.Time{}, false
	}
	t = time.UnixMilli(ms).UTC()
	if want, err := GroupPayloadKey(t, id); err != nil || want != key || hour != t.Format("20060102T15") {
		return time.Time{}, false
	}
	return t, true
}

// A PayloadRef is where one batch's payload bundle is stored: a whole object (Len 0),
// or the segment [Off, Off+Len) of a group payload object.
type PayloadRef struct {
	Key      string
	Off, Len int64
}

// String names the bundle: the key, with "@off+len" for a segment. It is also the
// key under which readers cache the decoded bundle.
func (r PayloadRef) String() string {
	if r.Len == 0 {
		return r.Key
	}
	return r.Key + "@" + strconv.FormatInt(r.Off, 10) + "+" + strconv.FormatInt(r.Len, 10)
}

// BatchPayloadRef returns where the payload bundle of a batch of the log under p is:
// with object empty, its own object PayloadPath(first, batchID); else the segment
// (off, length) of the group object object.
func BatchPayloadRef(p Prefix, first uint64, batchID, object string, off, length uint64) (PayloadRef, error) {
	if object == "" {
		path, err := PayloadPath(first, batchID)
		if err != nil {
			return PayloadRef{}, err
		}
		return PayloadRef{Key: p.Key(path)}, nil
	}
	if _, ok := GroupPayloadTime(object); !ok || length == 0 || off > 1<<62 || length > 1<<62 {
		return PayloadRef{}, fmt.Errorf("tiles: invalid payload segment %q %d+%d", object, off, length)
	}
	return PayloadRef{Key: object, Off: int64(off), Len: int64(length)}, nil
}

// ErrPayloadCorrupt is returned (wrapped) by ReadPayloadRef when the bytes found do not
// decode to the bundle the batch row describes.
var ErrPayloadCorrupt = errors.New("tiles: payload bundle corrupt")

// ReadPayloadRef reads and decodes the payload bundle at r (a ranged read for a
// segment) and checks that it holds count records from first. A missing object
// wraps ErrNotFound; bytes that do not decode, a segment beyond the object's end or
// another bundle wrap ErrPayloadCorrupt.
func ReadPayloadRef(ctx context.Context, s Store, r PayloadRef, first, count uint64) (PayloadBundle, error) {
	var (
		data []byte
		err  error
	)
	if r.Len == 0 {
		data, err = s.Get(ctx, r.Key)
	} else {
		data, err = s.GetRange(ctx, r.Key, r.Off, r.Len)
	}
	if errors.Is(err, ErrShortObject) {
		return PayloadBundle{}, fmt.Errorf("%w: %s: %w", ErrPayloadCorrupt, r, err)
	}
	if err != nil {
		return PayloadBundle{}, fmt.Errorf("tiles: read payload bundle %s: %w", r, err)
	}
	var b PayloadBundle
	if err := b.UnmarshalBinary(data); err != nil {
		return PayloadBundle{}, fmt.Errorf("%w: %s: %w", ErrPayloadCorrupt, r, err)
	}
	if b.First != first || uint64(len(b.Records)) != count {
		return PayloadBundle{}, fmt.Errorf("%w: %s holds %d records from %d; the batch row says %d from %d",
			ErrPayloadCorrupt, r, len(b.Records), b.First, count, first)
	}
	return b, nil
}

// SplitGroupPayload returns the lengths of the segments of a group payload object, in
// order: each is one payload bundle. Readers never need it (batch rows name their
// segment); tools and tests that look at an object whole do.
func SplitGroupPayload(data []byte) ([]int, error) {
	var out []int
	for len(data) > 0 {
		n, err := bundleLen(data)
		if err != nil {
			return nil, fmt.Errorf("tiles: segment %d of a group payload object: %w", len(out), err)
		}
		var b PayloadBundle
		if err := b.UnmarshalBinary(data[:n]); err != nil {
			return nil, fmt.Errorf("tiles: segment %d of a group payload object: %w", len(out), err)
		}
		out, data = append(out, n), data[n:]
	}
	return out, nil
}

// bundleLen returns the length of the payload bundle encoding data starts with.
func bundleLen(data []byte) (int, error) {
	h, err := readPayloadHeader(data)
	if err != nil {
		return 0, err
	}
	pos := uint64(h.len)
	for range 2 * uint64(h.count) {
		if pos+4 > uint64(len(data)) {
			return 0, errors.New("payload bundle truncated")
		}
		pos += 4 + uint64(binary.BigEndian.Uint32(data[pos:]))
	}
	if pos > uint64(len(data)) {
		return 0, errors.New("payload bundle truncated")
	}
	return int(pos), nil
}

// A PayloadAppender is a Store that can append the group payloads of successive ticks
// to one object, a payload segment file, instead of creating an object per tick: the
// filesystem store, where a new file (a new inode, its fsync and its folder's) costs
// several times one write and fdatasync to a file that exists. The sequencer uses it
// when its store has it; S3 and GCS objects cannot be appended to, and keep one
// object per tick.
//
// The objects it appends to have group payload keys ([GroupPayloadKey], with the time
// the object was started), so batch rows name their segments as before and readers
// read them with GetRange. Unlike Create's objects they grow: only the ranges a
// committed batch row names are ever read, and bytes past them (a torn or failed
// append, a tick that did not commit) are garbage nobody names. An implementation
// stops appending to an object at MaxSegmentAge after it started it, so a sweeper
// that leaves alone the group objects younger than its grace (longer than
// MaxSegmentAge plus a tick's timeout) never deletes one that may still be named.
type PayloadAppender interface {
	// ReservePayload places n > 0 bytes at the end of the open segment object,
	// starting a new one (durably named) when there is none, when the open one has
	// reached its size or age limit, or after an append to it failed. The caller
	// writes the bytes with the slot's Write.
	ReservePayload(ctx context.Context, n int64) (PayloadSlot, error)
}

// MaxSegmentAge bounds how long after starting a segment object a PayloadAppender
// may still place bytes in it.
const MaxSegmentAge = time.Minute

// A PayloadSlot is the place ReservePayload gave n bytes: the segment [Off, Off+n)
// of the object Key.
type PayloadSlot struct {
	Key string
	Off int64
	// Write writes data (exactly the n bytes reserved) at the slot and returns once
	// they are durable, so that GetRange(Key, Off, n) returns them from then on, after
	// a crash too. It must be called once. After an error the object takes no more
	// appends; what is at the slot is unspecified.
	Write func(ctx context.Context, data []byte) error
}
