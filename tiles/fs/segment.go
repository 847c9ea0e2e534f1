package fs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/internal/private"
	"github.com/sealtrail/sealtrail/tiles"
)

var _ tiles.PayloadAppender = (*Store)(nil)

// MaxSegmentSize is the size past which the store starts a new payload segment file
// (a tick larger than it still goes whole into one, a new file of its own).
const MaxSegmentSize = 64 << 20

// segments is the store's open payload segment file (tiles.PayloadAppender): each
// commit tick's group payload is appended to it with one write and one fdatasync,
// where an object of its own would cost a new inode, an fsync of the file and one of
// its folder (several times the CPU time on ext4). A new file is started at the first
// append of the process, when the open one reaches MaxSegmentSize or
// tiles.MaxSegmentAge, and after a failed append: after a failed fsync the kernel
// may have dropped the dirty pages and report success to the next one, so a file that
// failed once is never trusted again.
type segments struct {
	mu      sync.Mutex
	cur     *segFile
	maxSize int64         // 0: MaxSegmentSize (tests set less)
	maxAge  time.Duration // 0: tiles.MaxSegmentAge
}

// segFile is one payload segment file.
type segFile struct {
	key  string
	path string
	f    *os.File
	born time.Time // when it was started (its key's time), with the monotonic clock

	// Guarded by segments.mu.
	size    int64 // bytes reserved
	open    int   // slots reserved and not yet written
	retired bool  // no more slots; the file is closed once open is 0

	wmu    sync.Mutex  // one write and its fdatasync at a time
	failed atomic.Bool // a write or a sync failed: no more appends
}

// writeAt is the positioned write of a segment append; tests replace it to fail or
// shorten an append.
var writeAt = (*os.File).WriteAt

// ReservePayload implements tiles.PayloadAppender.
func (s *Store) ReservePayload(ctx context.Context, n int64) (tiles.PayloadSlot, error) {
	if n <= 0 {
		return tiles.PayloadSlot{}, fmt.Errorf("fs: reserve %d payload bytes", n)
	}
	if err := ctx.Err(); err != nil {
		return tiles.PayloadSlot{}, err
	}
	g := &s.seg
	g.mu.Lock()
	defer g.mu.Unlock()
	maxSize, maxAge := g.maxSize, g.maxAge
	if maxSize == 0 {
		maxSize = MaxSegmentSize
	}
	if maxAge == 0 {
		maxAge = tiles.MaxSegmentAge
	}
	if c := g.cur; c != nil && (c.failed.Load() || c.size > 0 && c.size+n > maxSize || time.Since(c.born) >= maxAge || !c.named()) {
		g.retire(c)
	}
	if g.cur == nil {
		c, err := s.newSegment(time.Now())
		if err != nil {
			return tiles.PayloadSlot{}, fmt.Errorf("fs: new payload segment: %w", err)
		}
		g.cur = c
	}
	c := g.cur
	off := c.size
	c.size += n
	c.open++
	var used atomic.Bool
	write := func(ctx context.Context, data []byte) error {
		if used.Swap(true) {
			return fmt.Errorf("fs: payload slot %s@%d written twice", c.key, off)
		}
		defer g.written(c)
		return c.write(ctx, off, n, data)
	}
	return tiles.PayloadSlot{Key: c.key, Off: off, Write: write}, nil
}

// newSegment creates an empty segment file named by a group payload key of time now
// and a random id, with its name durable: fdatasync covers an append's bytes and the
// file's size, not the directory entry.
func (s *Store) newSegment(now time.Time) (*segFile, error) {
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	key, err := tiles.GroupPayloadKey(now, hex.EncodeToString(id[:]))
	if err != nil {
		return nil, err
	}
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	if err := s.mkdirAll(dir, true); err != nil {
		return nil, err
	}
	f, err := private.Create(p)
	if err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		os.Remove(p)
		return nil, err
	}
	return &segFile{key: key, path: p, f: f, born: now}, nil
}

// named reports whether c's key still names c's file: an append to a file that was
// removed or moved away would be durable but unreadable by its key, so the store
// starts a new file instead (one stat and one fstat per tick).
func (c *segFile) named() bool {
	at, err := os.Stat(c.path)
	if err != nil {
		return false
	}
	fi, err := c.f.Stat()
	return err == nil && os.SameFile(at, fi)
}

// retire takes c out of use; it is closed once its last slot is written. The caller
// holds g.mu.
func (g *segments) retire(c *segFile) {
	c.retired = true
	if g.cur == c {
		g.cur = nil
	}
	if c.open == 0 {
		c.f.Close()
	}
}

// written records that one of c's slots was written (or failed).
func (g *segments) written(c *segFile) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c.open--
	if c.retired && c.open == 0 {
		c.f.Close()
	}
}

// errSegmentFailed refuses an append to a segment file an earlier append failed on.
var errSegmentFailed = errors.New("an earlier append to the file failed")

// write writes data, the n bytes of the slot at off, and makes them durable.
func (c *segFile) write(ctx context.Context, off, n int64, data []byte) error {
	if int64(len(data)) != n {
		return fmt.Errorf("fs: append to %s: %d bytes for a slot of %d", c.key, len(data), n)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fs: append to %s: %w", c.key, err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.failed.Load() {
		return fmt.Errorf("fs: append to %s: %w", c.key, errSegmentFailed)
	}
	m, err := writeAt(c.f, data, off)
	if err == nil && m < len(data) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = fdatasync(c.f)
	}
	if err != nil {
		c.failed.Store(true)
		return fmt.Errorf("fs: append %d bytes to %s at %d: %w", n, c.key, off, err)
	}
	return nil
}
