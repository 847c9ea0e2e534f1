// Package mem is an in-memory tiles.Store for tests, with hooks that inject faults:
// failures (before or after the operation takes effect), delays, and conflicting
// objects, chosen by operation and key.
package mem

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// An Op names a Store method.
type Op string

// The operations a Fault can match.
const (
	OpGet    Op = "get"
	OpCreate Op = "create"
	OpPut    Op = "put"
	OpDelete Op = "delete"
)

// A Fault changes what the store does for the calls it matches. The zero value of
// every field except Op and Key means "no change".
type Fault struct {
	Op  Op     // the operation to match; "" matches every operation
	Key string // a key prefix to match (use a full key to match one); "" matches all

	// Delay makes the call sleep first (or until its context ends).
	Delay time.Duration
	// Err is returned instead of performing the operation, or, with After, after it.
	Err error
	// After performs the operation before returning Err: a failure whose effect
	// happened anyway, like a lost response.
	After bool
	// Conflict, for Create, makes the key appear to hold these bytes already, as if
	// another writer had stored them first; the Create then follows its contract.
	Conflict []byte
	// Times limits how many calls the fault fires for; 0 is unlimited.
	Times int
	// Skip lets the first Skip matching calls through before the fault fires.
	Skip int
}

// A Store keeps objects in a map. It is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	objects map[string]object
	faults  []*fault
	calls   map[Op]int
}

type object struct {
	data  []byte
	attrs tiles.Attrs
}

type fault struct {
	Fault
	fired, skipped int
}

var _ tiles.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{objects: make(map[string]object), calls: make(map[Op]int)}
}

// Inject adds f, checked before faults added earlier, and returns a function that
// removes it.
func (s *Store) Inject(f Fault) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ff := &fault{Fault: f}
	s.faults = append([]*fault{ff}, s.faults...)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.faults {
			if x == ff {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
				return
			}
		}
	}
}

// Calls returns how many times op was called (faulted calls included).
func (s *Store) Calls(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Keys returns the keys of the stored objects that start with prefix, in no order.
func (s *Store) Keys(prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	return ks
}

// Snapshot returns a copy of the stored objects whose keys start with prefix,
// bypassing faults and call counts.
func (s *Store) Snapshot(prefix string) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string][]byte)
	for k, o := range s.objects {
		if strings.HasPrefix(k, prefix) {
			m[k] = bytes.Clone(o.data)
		}
	}
	return m
}

// Attrs returns the attributes key was last written with.
func (s *Store) Attrs(key string) (tiles.Attrs, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	return o.attrs, ok
}

// Set stores data at key, bypassing faults and the write-once rule: a test's way to
// corrupt or plant an object.
func (s *Store) Set(key string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = object{data: bytes.Clone(data)}
}

// match counts the call and returns the first fault that fires for it.
func (s *Store) match(op Op, key string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	for _, f := range s.faults {
		if (f.Op == "" || f.Op == op) && strings.HasPrefix(key, f.Key) && (f.Times == 0 || f.fired < f.Times) {
			if f.skipped < f.Skip {
				f.skipped++
				continue
			}
			f.fired++
			ff := f.Fault
			return &ff
		}
	}
	return nil
}

// before applies f's delay and, unless f.After, its error.
func before(ctx context.Context, f *Fault) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.Err != nil && !f.After {
		return f.Err
	}
	return nil
}

func after(f *Fault) error {
	if f != nil && f.After {
		return f.Err
	}
	return nil
}

// Get implements tiles.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := tiles.CheckKey(key); err != nil {
		return nil, err
	}
	f := s.match(OpGet, key)
	if err := before(ctx, f); err != nil {
		return nil, fmt.Errorf("mem: get %s: %w", key, err)
	}
	s.mu.Lock()
	o, ok := s.objects[key]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("mem: get %s: %w", key, tiles.ErrNotFound)
	}
	if err := after(f); err != nil {
		return nil, fmt.Errorf("mem: get %s: %w", key, err)
	}
	return bytes.Clone(o.data), nil
}

// GetRange implements tiles.Store; fault rules for OpGet apply to it too.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := tiles.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	data, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if off+n > int64(len(data)) {
		return nil, fmt.Errorf("mem: get %s range %d+%d of %d bytes: %w", key, off, n, len(data), tiles.ErrShortObject)
	}
	return data[off : off+n : off+n], nil
}

// Create implements tiles.Store.
func (s *Store) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	if err := tiles.CheckKey(key); err != nil {
		return err
	}
	f := s.match(OpCreate, key)
	if err := before(ctx, f); err != nil {
		return fmt.Errorf("mem: create %s: %w", key, err)
	}
	s.mu.Lock()
	if f != nil && f.Conflict != nil {
		if _, ok := s.objects[key]; !ok {
			s.objects[key] = object{data: bytes.Clone(f.Conflict), attrs: a}
		}
	}
	o, ok := s.objects[key]
	if !ok {
		s.objects[key] = object{data: bytes.Clone(data), attrs: a}
	}
	s.mu.Unlock()
	if ok && !bytes.Equal(o.data, data) {
		return fmt.Errorf("mem: create: %w", &tiles.ConflictError{Key: key})
	}
	if err := after(f); err != nil {
		return fmt.Errorf("mem: create %s: %w", key, err)
	}
	return nil
}

// Put implements tiles.Store.
func (s *Store) Put(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	if err := tiles.CheckKey(key); err != nil {
		return err
	}
	f := s.match(OpPut, key)
	if err := before(ctx, f); err != nil {
		return fmt.Errorf("mem: put %s: %w", key, err)
	}
	s.mu.Lock()
	s.objects[key] = object{data: bytes.Clone(data), attrs: a}
	s.mu.Unlock()
	if err := after(f); err != nil {
		return fmt.Errorf("mem: put %s: %w", key, err)
	}
	return nil
}

// Delete implements tiles.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := tiles.CheckKey(key); err != nil {
		return err
	}
	f := s.match(OpDelete, key)
	if err := before(ctx, f); err != nil {
		return fmt.Errorf("mem: delete %s: %w", key, err)
	}
	s.mu.Lock()
	delete(s.objects, key)
	s.mu.Unlock()
	if err := after(f); err != nil {
		return fmt.Errorf("mem: delete %s: %w", key, err)
	}
	return nil
}
