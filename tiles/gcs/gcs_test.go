package gcs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/gcs"
	"github.com/sealtrail/sealtrail/tiles/storetest"
)

// newStore returns a Store over a fresh random prefix of the emulator's bucket.
func newStore(t *testing.T) *gcs.Store {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	s, err := gcs.New(context.Background(), gcs.Config{Bucket: testenv.GCSBucket, Prefix: "t-" + hex.EncodeToString(b[:]) + "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", testenv.GCS(t))
	storetest.Run(t, func(t *testing.T) tiles.Store { return newStore(t) }, storetest.Options{})
}

// TestHeaders checks that objects carry the attributes mirrors rely on.
func TestHeaders(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", testenv.GCS(t))
	s := newStore(t)
	ctx := context.Background()
	if err := s.Create(ctx, "p/events/tile/0/000.p/1", make([]byte, 32), tiles.ImmutableAttrs); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "p/events/checkpoint", []byte("cp\n"), tiles.CheckpointAttrs); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]tiles.Attrs{"p/events/tile/0/000.p/1": tiles.ImmutableAttrs, "p/events/checkpoint": tiles.CheckpointAttrs} {
		a, err := s.Bucket().Object(s.FullKey(key)).Attrs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a.CacheControl != want.CacheControl || a.ContentType != want.ContentType {
			t.Errorf("%s: Cache-Control %q, Content-Type %q; want %+v", key, a.CacheControl, a.ContentType, want)
		}
	}
}
