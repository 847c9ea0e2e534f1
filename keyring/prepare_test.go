package keyring

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// countingStore counts the catalog writes of data keys, and can refuse the batch.
type countingStore struct {
	BatchStore
	inserts, batches atomic.Int64
	failBatch        bool
}

func (s *countingStore) InsertDataKey(ctx context.Context, k catalog.DataKey) (catalog.DataKey, error) {
	s.inserts.Add(1)
	return s.BatchStore.InsertDataKey(ctx, k)
}

func (s *countingStore) InsertDataKeys(ctx context.Context, ks []catalog.DataKey) ([]catalog.DataKey, error) {
	s.batches.Add(1)
	if s.failBatch {
		return nil, errors.New("injected batch failure")
	}
	return s.BatchStore.InsertDataKeys(ctx, ks)
}

// TestPrepareAt checks that PrepareAt creates the missing keys of an epoch in one
// write, leaves existing keys alone, and that the Sealers then made use those keys
// without another write; and that with the batch refused, NewSealer still creates
// each key itself.
func TestPrepareAt(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	logs := []catalog.LogID{logA, logB, logC, {ProjectID: "prj_d", Stream: catalog.StreamEvents}}
	msg := []byte("payload")

	store := &countingStore{BatchStore: newStore(t)}
	kr := New(store, newKEK(t), Options{})
	// logA has a key already (made one by one, as before PrepareAt).
	before, err := kr.SealerAt(ctx, logA, at)
	if err != nil {
		t.Fatal(err)
	}
	existing, _ := store.DataKey(ctx, logA, "2026-11")
	kr.cache.remove(cacheKey{logA, "2026-11"}) // as after a restart
	store.inserts.Store(0)

	if err := kr.PrepareAt(ctx, logs, at); err != nil {
		t.Fatal(err)
	}
	if b, i := store.batches.Load(), store.inserts.Load(); b != 1 || i != 0 {
		t.Fatalf("PrepareAt made %d batch writes and %d single ones, want 1 and 0", b, i)
	}
	for _, log := range logs {
		k, err := store.DataKey(ctx, log, "2026-11")
		if err != nil {
			t.Fatalf("%s: %v", log, err)
		}
		if log == logA && (k.KeyID != existing.KeyID || !bytes.Equal(k.Wrapped, existing.Wrapped)) {
			t.Fatalf("PrepareAt replaced the existing key of %s: %+v, was %+v", log, k, existing)
		}
		s, err := kr.SealerAt(ctx, log, at)
		if err != nil {
			t.Fatal(err)
		}
		ct, err := s.Seal(msg, []byte(log.ProjectID))
		if err != nil {
			t.Fatal(err)
		}
		if pt, err := kr.Decrypt(ctx, log, ct, []byte(log.ProjectID)); err != nil || !bytes.Equal(pt, msg) {
			t.Fatalf("%s: Decrypt = %q, %v", log, pt, err)
		}
		if h, _ := parseHeader(ct); h.keyID != k.KeyID {
			t.Fatalf("%s: sealed under key %s, the catalog holds %s", log, h.keyID, k.KeyID)
		}
	}
	ct, err := before.Seal(msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := kr.Decrypt(ctx, logA, ct, nil); err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("the earlier Sealer of logA: %q, %v", pt, err)
	}
	if i := store.inserts.Load(); i != 0 {
		t.Fatalf("the Sealers made %d more writes of keys after PrepareAt", i)
	}
	// Everything cached: nothing to read or write.
	if err := kr.PrepareAt(ctx, logs, at); err != nil || store.batches.Load() != 1 {
		t.Fatalf("PrepareAt with every key at hand: %v, %d batch writes", err, store.batches.Load())
	}

	// A refused batch: PrepareAt says so, stores nothing, and NewSealer creates the
	// keys one by one.
	store.failBatch = true
	next := at.AddDate(0, 1, 0)
	if err := kr.PrepareAt(ctx, logs, next); err == nil {
		t.Fatal("PrepareAt with the batch refused: no error")
	}
	for _, log := range logs {
		if _, err := store.DataKey(ctx, log, "2026-12"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("%s after a refused batch: %v, want no key", log, err)
		}
		if _, err := kr.SealerAt(ctx, log, next); err != nil {
			t.Fatal(err)
		}
	}
	if i := store.inserts.Load(); i != int64(len(logs)) {
		t.Fatalf("NewSealer after a refused batch made %d writes, want %d", i, len(logs))
	}
}
