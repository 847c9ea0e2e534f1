// Package storetest is the conformance suite of tiles.Store: every driver's test calls
// Run, against the real service where there is one (an S3-compatible server, the GCS
// emulator), so that all drivers keep the contract written on tiles.Store.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	sttlog "github.com/sealtrail/sealtrail/tlog"
	"golang.org/x/mod/sumdb/tlog"
)

// Options tune Run for a driver.
type Options struct {
	// LargeObjectSize is the size of the large-object test; 0 means 20 MiB.
	LargeObjectSize int
	// Concurrency is the number of concurrent writers; 0 means 8.
	Concurrency int
}

// Run checks the tiles.Store contract on stores made by newStore. Each call of
// newStore must return a store over an empty namespace (a fresh directory, or a
// fresh random prefix in a shared bucket) that it cleans up itself.
func Run(t *testing.T, newStore func(t *testing.T) tiles.Store, opts Options) {
	if opts.LargeObjectSize == 0 {
		opts.LargeObjectSize = 20 << 20
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 8
	}
	tests := []struct {
		name string
		f    func(t *testing.T, s tiles.Store, o Options)
	}{
		{"NotFound", testNotFound},
		{"CreateGet", testCreateGet},
		{"CreateIdentical", testCreateIdentical},
		{"CreateConflict", testCreateConflict},
		{"Put", testPut},
		{"Delete", testDelete},
		{"EmptyObject", testEmpty},
		{"LargeObject", testLarge},
		{"TilePaths", testTilePaths},
		{"PrefixIsolation", testPrefixes},
		{"InvalidKeys", testInvalidKeys},
		{"ConcurrentCreateSame", testConcurrentSame},
		{"ConcurrentCreateDifferent", testConcurrentDifferent},
		{"ConcurrentPut", testConcurrentPut},
		{"CanceledContext", testCanceled},
		{"CreateAll", testCreateAll},
		{"CreateAllThenPut", testCreateAllThenPut},
		{"List", testList},
		{"GetRange", testGetRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.f(t, newStore(t), opts)
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func mustGet(t *testing.T, s tiles.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %d bytes %.16x..., want %d bytes %.16x...", key, len(got), got, len(want), want)
	}
}

func mustNotFound(t *testing.T, s tiles.Store, key string) {
	t.Helper()
	got, err := s.Get(ctx(t), key)
	if !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("Get(%q) = %d bytes, %v; want ErrNotFound", key, len(got), err)
	}
}

func testNotFound(t *testing.T, s tiles.Store, _ Options) {
	mustNotFound(t, s, "p/events/checkpoint")
	mustNotFound(t, s, "p/events/tile/0/000")
	if err := s.Create(ctx(t), "p/events/tile/0/001", []byte("x"), tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	// A key under an existing object, and a "directory" of existing objects.
	mustNotFound(t, s, "p/events/tile/0/001/x")
	mustNotFound(t, s, "p/events/tile/0")
	mustNotFound(t, s, "p/events/tile")
}

func testCreateGet(t *testing.T, s tiles.Store, _ Options) {
	data := make([]byte, 256)
	for i := range data {
		data[i] = byte(i)
	}
	key := "p/events/tile/entries/000.p/7"
	if err := s.Create(ctx(t), key, data, tiles.ImmutableAttrs); err != nil {
		t.Fatalf("Create: %v", err)
	}
	mustGet(t, s, key, data)
}

func testCreateIdentical(t *testing.T, s tiles.Store, _ Options) {
	key, data := "p/events/tile/0/000", random(t, 8192)
	for i := range 3 {
		if err := s.Create(ctx(t), key, data, tiles.ImmutableAttrs); err != nil {
			t.Fatalf("Create #%d of identical bytes: %v", i, err)
		}
	}
	mustGet(t, s, key, data)
}

func testCreateConflict(t *testing.T, s tiles.Store, _ Options) {
	key, a := "p/events/tile/1/000.p/3", random(t, 96)
	if err := s.Create(ctx(t), key, a, tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{random(t, 96), a[:95], append(bytes.Clone(a), 0), {}} {
		err := s.Create(ctx(t), key, b, tiles.ImmutableAttrs)
		if !errors.Is(err, tiles.ErrConflict) {
			t.Fatalf("Create of %d different bytes = %v, want ErrConflict", len(b), err)
		}
		var ce *tiles.ConflictError
		if !errors.As(err, &ce) || ce.Key == "" {
			t.Fatalf("Create conflict error %v is not a *tiles.ConflictError naming the key", err)
		}
	}
	mustGet(t, s, key, a)
	// Put replaces; a later Create of the new bytes is then identical.
	b := random(t, 10)
	if err := s.Put(ctx(t), key, b, tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx(t), key, b, tiles.ImmutableAttrs); err != nil {
		t.Fatalf("Create of bytes equal to a Put object: %v", err)
	}
}

func testPut(t *testing.T, s tiles.Store, _ Options) {
	key := "p/events/checkpoint"
	for i := range 3 {
		data := fmt.Appendf(nil, "origin\n%d\nroot\n", i)
		if err := s.Put(ctx(t), key, data, tiles.CheckpointAttrs); err != nil {
			t.Fatalf("Put #%d: %v", i, err)
		}
		mustGet(t, s, key, data)
	}
	// Shorter content must not leave old bytes behind.
	if err := s.Put(ctx(t), key, []byte("x"), tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, key, []byte("x"))
}

func testDelete(t *testing.T, s tiles.Store, _ Options) {
	key := "p/events/payload/1-abc"
	if err := s.Delete(ctx(t), key); err != nil {
		t.Fatalf("Delete of a missing object: %v", err)
	}
	if err := s.Create(ctx(t), key, []byte("one"), tiles.PrivateAttrs); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx(t), key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustNotFound(t, s, key)
	if err := s.Create(ctx(t), key, []byte("two"), tiles.PrivateAttrs); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	mustGet(t, s, key, []byte("two"))
}

func testEmpty(t *testing.T, s tiles.Store, _ Options) {
	key := "p/events/empty"
	if err := s.Create(ctx(t), key, nil, tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, key, []byte{})
	if err := s.Create(ctx(t), key, []byte{}, tiles.ImmutableAttrs); err != nil {
		t.Fatalf("Create of an identical empty object: %v", err)
	}
	if err := s.Create(ctx(t), key, []byte{0}, tiles.ImmutableAttrs); !errors.Is(err, tiles.ErrConflict) {
		t.Fatalf("Create of one byte over an empty object = %v, want ErrConflict", err)
	}
}

func testLarge(t *testing.T, s tiles.Store, o Options) {
	key, data := "p/events/payload/1-large", random(t, o.LargeObjectSize)
	if err := s.Create(ctx(t), key, data, tiles.PrivateAttrs); err != nil {
		t.Fatalf("Create of %d bytes: %v", len(data), err)
	}
	mustGet(t, s, key, data)
	if err := s.Create(ctx(t), key, data, tiles.PrivateAttrs); err != nil {
		t.Fatalf("identical Create of %d bytes: %v", len(data), err)
	}
	other := bytes.Clone(data)
	other[len(other)-1] ^= 1
	if err := s.Create(ctx(t), key, other, tiles.PrivateAttrs); !errors.Is(err, tiles.ErrConflict) {
		t.Fatalf("Create of %d bytes differing in the last bit = %v, want ErrConflict", len(data), err)
	}
	big := random(t, o.LargeObjectSize)
	if err := s.Put(ctx(t), "p/events/checkpoint", big, tiles.CheckpointAttrs); err != nil {
		t.Fatalf("Put of %d bytes: %v", len(big), err)
	}
	mustGet(t, s, "p/events/checkpoint", big)
}

func testTilePaths(t *testing.T, s tiles.Store, _ Options) {
	p, err := tiles.StreamPrefix("proj_1", sttlog.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{tiles.CheckpointPath}
	for _, tl := range []tlog.Tile{
		{H: 8, L: 0, N: 0, W: 256}, {H: 8, L: 0, N: 0, W: 5}, {H: 8, L: 0, N: 1234067, W: 256},
		{H: 8, L: 0, N: 1234067, W: 1}, {H: 8, L: 3, N: 1000, W: 255}, {H: 8, L: -1, N: 999, W: 256},
		{H: 8, L: -1, N: 1000, W: 17},
	} {
		paths = append(paths, tiles.TilePath(tl))
	}
	pp, err := tiles.PayloadPath(1, "b-1_x")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, pp)
	for i, path := range paths {
		if err := s.Create(ctx(t), p.Key(path), []byte{byte(i)}, tiles.ImmutableAttrs); err != nil {
			t.Fatalf("Create(%q): %v", p.Key(path), err)
		}
	}
	for i, path := range paths {
		mustGet(t, s, p.Key(path), []byte{byte(i)})
	}
}

func testPrefixes(t *testing.T, s tiles.Store, _ Options) {
	var ps []tiles.Prefix
	for _, id := range [][2]string{{"a", "events"}, {"a", "project_audit"}, {"b", "events"}, {"ab", "events"}} {
		p, err := tiles.StreamPrefix(id[0], id[1])
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	path := tiles.TilePath(tlog.Tile{H: 8, L: 0, N: 0, W: 3})
	for i, p := range ps {
		if err := s.Create(ctx(t), p.Key(path), []byte{byte(i)}, tiles.ImmutableAttrs); err != nil {
			t.Fatalf("Create in log %d: %v", i, err)
		}
		if err := s.Put(ctx(t), p.Key(tiles.CheckpointPath), []byte{byte(i)}, tiles.CheckpointAttrs); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range ps {
		mustGet(t, s, p.Key(path), []byte{byte(i)})
		mustGet(t, s, p.Key(tiles.CheckpointPath), []byte{byte(i)})
	}
	if err := s.Delete(ctx(t), ps[0].Key(path)); err != nil {
		t.Fatal(err)
	}
	mustNotFound(t, s, ps[0].Key(path))
	mustGet(t, s, ps[3].Key(path), []byte{3})
}

func testInvalidKeys(t *testing.T, s tiles.Store, _ Options) {
	for _, key := range []string{"", "/abs", "a//b", "../escape", "a/../../b", "a/./b", ".tmp-x", "a/.hidden", "a/", "a\\b", "a b", "a/\x00"} {
		if err := s.Create(ctx(t), key, []byte("x"), tiles.ImmutableAttrs); err == nil {
			t.Errorf("Create(%q) succeeded; want an invalid-key error", key)
		}
		if err := s.Put(ctx(t), key, []byte("x"), tiles.ImmutableAttrs); err == nil {
			t.Errorf("Put(%q) succeeded; want an invalid-key error", key)
		}
		if _, err := s.Get(ctx(t), key); err == nil || errors.Is(err, tiles.ErrNotFound) {
			t.Errorf("Get(%q) = %v; want an invalid-key error", key, err)
		}
		if err := s.Delete(ctx(t), key); err == nil {
			t.Errorf("Delete(%q) succeeded; want an invalid-key error", key)
		}
	}
}

func testConcurrentSame(t *testing.T, s tiles.Store, o Options) {
	key, data := "p/events/tile/entries/000", random(t, 64<<10)
	errs := make([]error, o.Concurrency)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = s.Create(ctx(t), key, data, tiles.ImmutableAttrs) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d of identical bytes: %v", i, err)
		}
	}
	mustGet(t, s, key, data)
}

func testConcurrentDifferent(t *testing.T, s tiles.Store, o Options) {
	key := "p/events/tile/0/000.p/9"
	datas := make([][]byte, o.Concurrency)
	for i := range datas {
		datas[i] = random(t, 32<<10)
	}
	errs := make([]error, o.Concurrency)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = s.Create(ctx(t), key, datas[i], tiles.ImmutableAttrs) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both succeeded with different bytes", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, tiles.ErrConflict):
			t.Errorf("writer %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	mustGet(t, s, key, datas[winner])
}

func testConcurrentPut(t *testing.T, s tiles.Store, o Options) {
	key := "p/events/checkpoint"
	versions := make([][]byte, o.Concurrency)
	for i := range versions {
		versions[i] = bytes.Repeat([]byte{byte('a' + i)}, 4096+i)
	}
	if err := s.Put(ctx(t), key, versions[0], tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, o.Concurrency)
	for i := range versions {
		wg.Go(func() { errs[i] = s.Put(ctx(t), key, versions[i], tiles.CheckpointAttrs) })
	}
	// Readers racing the writers see one whole version, never a mix.
	for range 4 {
		wg.Go(func() {
			for range 10 {
				got, err := s.Get(ctx(t), key)
				if err != nil {
					t.Errorf("Get during Puts: %v", err)
					return
				}
				if !isVersion(got, versions) {
					t.Errorf("Get during Puts returned %d bytes that are no version", len(got))
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Put %d: %v", i, err)
		}
	}
	got, err := s.Get(ctx(t), key)
	if err != nil || !isVersion(got, versions) {
		t.Fatalf("Get after Puts: %d bytes, %v", len(got), err)
	}
}

func isVersion(b []byte, versions [][]byte) bool {
	for _, v := range versions {
		if bytes.Equal(b, v) {
			return true
		}
	}
	return false
}

func testCanceled(t *testing.T, s tiles.Store, _ Options) {
	c, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Get(c, "p/events/checkpoint"); err == nil {
		t.Error("Get with a canceled context succeeded")
	}
	if err := s.Create(c, "p/events/tile/0/000", []byte("x"), tiles.ImmutableAttrs); err == nil {
		t.Error("Create with a canceled context succeeded")
	}
}

// testCreateAll checks a BatchCreator's CreateAll against Create's contract: new
// objects appear, identical ones are accepted, a different one is a *ConflictError,
// and a batch with an invalid key writes nothing. Stores without it skip.
func testCreateAll(t *testing.T, s tiles.Store, o Options) {
	bc, ok := s.(tiles.BatchCreator)
	if !ok {
		t.Skip("the store has no CreateAll")
	}
	objs := []tiles.Object{
		{Key: "p/events/tile/0/000.p/7", Data: random(t, 7*32)},
		{Key: "p/events/tile/1/000.p/1", Data: random(t, 32)},
		{Key: "p/events/tile/entries/000.p/7", Data: random(t, 700)},
		{Key: "p/events/tile/0/x001/234", Data: random(t, 8192)},
		{Key: "p/events/empty", Data: []byte{}},
	}
	if err := bc.CreateAll(ctx(t), objs, tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	for _, ob := range objs {
		mustGet(t, s, ob.Key, ob.Data)
	}
	// Again, plus one new object: the old ones are identical, the new one appears.
	more := append(slices.Clone(objs), tiles.Object{Key: "p/events/tile/0/000.p/9", Data: random(t, 9*32)})
	if err := bc.CreateAll(ctx(t), more, tiles.ImmutableAttrs); err != nil {
		t.Fatalf("CreateAll of identical objects and a new one: %v", err)
	}
	mustGet(t, s, more[len(more)-1].Key, more[len(more)-1].Data)
	// One object with other bytes: a conflict naming its key, the object unchanged.
	changed := slices.Clone(objs)
	changed[2] = tiles.Object{Key: objs[2].Key, Data: random(t, 700)}
	err := bc.CreateAll(ctx(t), changed, tiles.ImmutableAttrs)
	var ce *tiles.ConflictError
	if !errors.Is(err, tiles.ErrConflict) || !errors.As(err, &ce) || ce.Key != objs[2].Key {
		t.Fatalf("CreateAll with a changed object = %v, want a *ConflictError for %s", err, objs[2].Key)
	}
	mustGet(t, s, objs[2].Key, objs[2].Data)
	// An invalid key anywhere in the batch: an error, and nothing written.
	bad := []tiles.Object{{Key: "p/events/tile/0/001.p/1", Data: random(t, 32)}, {Key: "p/../escape", Data: []byte("x")}}
	if err := bc.CreateAll(ctx(t), bad, tiles.ImmutableAttrs); err == nil {
		t.Fatal("CreateAll with an invalid key succeeded")
	}
	mustNotFound(t, s, bad[0].Key)
	// Concurrent batches of the same objects all succeed.
	var wg sync.WaitGroup
	errs := make(chan error, o.Concurrency)
	same := []tiles.Object{{Key: "p/events/tile/0/002.p/3", Data: random(t, 96)}, {Key: "p/events/tile/1/000.p/2", Data: random(t, 64)}}
	for range o.Concurrency {
		wg.Go(func() { errs <- bc.CreateAll(ctx(t), same, tiles.ImmutableAttrs) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent CreateAll of the same objects: %v", err)
		}
	}
	for _, ob := range same {
		mustGet(t, s, ob.Key, ob.Data)
	}
}

// testCreateAllThenPut checks a BatchPublisher's CreateAllThenPut: the objects appear
// and the checkpoint is replaced; when the batch fails (a conflict, an invalid key)
// the checkpoint keeps its old bytes; an invalid checkpoint key writes nothing. Stores
// without it skip.
func testCreateAllThenPut(t *testing.T, s tiles.Store, _ Options) {
	bp, ok := s.(tiles.BatchPublisher)
	if !ok {
		t.Skip("the store has no CreateAllThenPut")
	}
	cp := func(data []byte) tiles.Object { return tiles.Object{Key: "p/events/checkpoint", Data: data} }
	objs := []tiles.Object{
		{Key: "p/events/tile/0/000.p/3", Data: random(t, 3*32)},
		{Key: "p/events/tile/entries/000.p/3", Data: random(t, 300)},
	}
	first := cp([]byte("size 3\n"))
	if err := bp.CreateAllThenPut(ctx(t), objs, tiles.ImmutableAttrs, first, tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	for _, ob := range append(slices.Clone(objs), first) {
		mustGet(t, s, ob.Key, ob.Data)
	}
	// The same objects and one more, and a new checkpoint: it replaces the old one.
	more := append(slices.Clone(objs), tiles.Object{Key: "p/events/tile/0/000.p/5", Data: random(t, 5*32)})
	second := cp([]byte("size 5\n"))
	if err := bp.CreateAllThenPut(ctx(t), more, tiles.ImmutableAttrs, second, tiles.CheckpointAttrs); err != nil {
		t.Fatalf("CreateAllThenPut of identical objects, a new one and a new checkpoint: %v", err)
	}
	mustGet(t, s, more[2].Key, more[2].Data)
	mustGet(t, s, second.Key, second.Data)
	// No objects at all: the checkpoint alone is replaced.
	third := cp([]byte("size 5, signed again\n"))
	if err := bp.CreateAllThenPut(ctx(t), nil, tiles.ImmutableAttrs, third, tiles.CheckpointAttrs); err != nil {
		t.Fatalf("CreateAllThenPut of no objects: %v", err)
	}
	mustGet(t, s, third.Key, third.Data)
	// A conflicting object: a *ConflictError, and the checkpoint is not replaced.
	changed := slices.Clone(objs)
	changed[1] = tiles.Object{Key: objs[1].Key, Data: random(t, 300)}
	err := bp.CreateAllThenPut(ctx(t), changed, tiles.ImmutableAttrs, cp([]byte("forked\n")), tiles.CheckpointAttrs)
	if !errors.Is(err, tiles.ErrConflict) {
		t.Fatalf("CreateAllThenPut with a changed object = %v, want a conflict", err)
	}
	mustGet(t, s, objs[1].Key, objs[1].Data)
	mustGet(t, s, third.Key, third.Data)
	// An invalid object key, or an invalid checkpoint key: an error, nothing written.
	fresh := tiles.Object{Key: "p/events/tile/0/001.p/1", Data: random(t, 32)}
	bad := []tiles.Object{fresh, {Key: "p/../escape", Data: []byte("x")}}
	if err := bp.CreateAllThenPut(ctx(t), bad, tiles.ImmutableAttrs, cp([]byte("bad\n")), tiles.CheckpointAttrs); err == nil {
		t.Fatal("CreateAllThenPut with an invalid object key succeeded")
	}
	if err := bp.CreateAllThenPut(ctx(t), []tiles.Object{fresh}, tiles.ImmutableAttrs,
		tiles.Object{Key: "p/../checkpoint", Data: []byte("bad\n")}, tiles.CheckpointAttrs); err == nil {
		t.Fatal("CreateAllThenPut with an invalid checkpoint key succeeded")
	}
	mustNotFound(t, s, fresh.Key)
	mustGet(t, s, third.Key, third.Data)
}
